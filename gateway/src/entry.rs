//! The join's entry checks: the event's access rule (open, presale, invitation only), the
//! buyer's identity token and access code, judged between the queue's own gate (limit, event,
//! state) and the place. An open event joined without a code or identity costs nothing here:
//! the rules come with the controls the last tick read, and no query is made.

use admission::{Access, Admission, IdentityAlg, IdentityRule, JoinGate, Lane, PlaceKey};
use reservation::codes::CodeRefusal;
use reservation::{EventAccess, EventId, Store};

use crate::problem::Problem;
use crate::requests::JoinRequest;

/// Why a join was refused at the entry; each a 403 with its own code, and none changes
/// anything (a refused code is judged by an update that matched no row).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum EntryRefusal {
    #[error("this queue needs an access code now")]
    CodeRequired,
    #[error(transparent)]
    Code(#[from] CodeRefusal),
}

/// The access rule the stored row says (an unknown word is read as the strictest rule).
pub fn access_rule(access: &EventAccess) -> Access {
    match access.access.as_str() {
        "open" => Access::Open,
        "presale" => match access.general_opens_at_ms {
            Some(ms) => Access::Presale {
                general_opens_at: crate::clock::at(ms),
            },
            // A presale without a general opening is invitation only until one is set.
            None => Access::InviteOnly,
        },
        _ => Access::InviteOnly,
    }
}

/// The identity key the stored row names, if any. `known` is the rule read last time: while
/// the stored key is the same, its parsed verifier is kept (the meter reads the row on every
/// tick; the PEM is parsed only when the organizer changes it).
pub fn identity_rule(access: &EventAccess, known: Option<&IdentityRule>) -> Option<IdentityRule> {
    let alg = IdentityAlg::parse(access.identity_alg.as_deref()?)?;
    let key = &access.identity_key.as_ref()?.0;
    let required = access.identity_required;
    Some(match known {
        Some(rule) if rule.same_key(alg, key) => {
            let mut rule = rule.clone();
            rule.required = required;
            rule
        }
        _ => IdentityRule::new(alg, key.clone(), required),
    })
}

/// Where a buyer who passed the entry goes: the person (whose place it is, from any device)
/// and the lane.
pub struct Entry {
    pub person: Option<String>,
    pub lane: Lane,
}

impl Entry {
    /// The key of the place: the person's, else the request's `Idempotency-Key`.
    pub fn key<'a>(&'a self, idempotency_key: Option<&'a str>) -> Option<PlaceKey<'a>> {
        match &self.person {
            Some(subject) => Some(PlaceKey::Person(subject)),
            None => idempotency_key.map(PlaceKey::Idempotency),
        }
    }
}

/// Judges the identity token first (a bad one spends no code), then the code: a code given is
/// always spent (it may name the priority lane), and one is required while the access rule
/// says so. A person who already holds a place gets it back and spends nothing.
pub async fn judge(
    admission: &Admission,
    store: &Store,
    event: &EventId,
    gate: &JoinGate,
    request: &JoinRequest,
) -> Result<Entry, Problem> {
    let control = gate.control();
    let person = match (&control.identity, request.identity.as_deref()) {
        (Some(rule), Some(token)) => Some(rule.verify(token, gate.now_ms())?),
        (Some(rule), None) if rule.required => {
            return Err(admission::AdmissionError::IdentityInvalid.into());
        }
        // No key configured: the token cannot be checked, so it is not believed either.
        _ => None,
    };
    if let Some(p) = &person
        && admission
            .has_place(gate, PlaceKey::Person(&p.subject))
            .await?
    {
        return Ok(Entry {
            person: Some(p.subject.clone()),
            lane: p.lane,
        });
    }
    let mut lane = person.as_ref().map(|p| p.lane).unwrap_or_default();
    match request.code.as_deref() {
        Some(code) => match store.spend_code(event, code).await? {
            Ok(code_lane) => {
                if code_lane == Lane::Priority.as_str() {
                    lane = Lane::Priority;
                }
            }
            Err(refusal) => return Err(EntryRefusal::Code(refusal).into()),
        },
        None if control.access.needs_code(gate.now_ms()) => {
            return Err(EntryRefusal::CodeRequired.into());
        }
        None => {}
    }
    Ok(Entry {
        person: person.map(|p| p.subject),
        lane,
    })
}
