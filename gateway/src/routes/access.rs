//! Who may join an event: open, a presale (a code until the general opening) or invitation
//! only; and the organizer's identity key for one place per person. The key is written,
//! never shown again: answers say only its algorithm and whether it is required.

use axum::extract::State;
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use admission::IdentityAlg;
use reservation::{AccessPatch, EventAccess, EventId, IdentityKey, IdentityPatch};

use crate::auth::Organizer;
use crate::clock::rfc3339;
use crate::extract::{JsonBody, PathId};
use crate::problem::Problem;
use crate::requests::{AccessSettings, IdentitySettings};
use crate::routes::admin::audit;
use crate::state::AppState;

/// An HS256 secret: long enough to resist guessing, short enough to store.
pub(crate) const SECRET_MIN: usize = 32;
pub(crate) const SECRET_MAX: usize = 1024;
/// A public key PEM (an RSA 4096 key is about 800 characters).
pub(crate) const PEM_MAX: usize = 8192;
pub(crate) const ACCESS_RULES: [&str; 3] = ["open", "presale", "invite_only"];

fn shown(access: &EventAccess) -> Value {
    json!({
        "access": access.access,
        "general_opens_at": access.general_opens_at_ms.map(rfc3339),
        "identity": access.identity_alg.as_ref().map(|alg| json!({
            "alg": alg, "required": access.identity_required,
        })),
    })
}

fn identity_patch(settings: &IdentitySettings) -> Result<IdentityPatch, Problem> {
    let alg = IdentityAlg::parse(&settings.alg)
        .ok_or_else(|| Problem::bad_request("identity.alg is HS256, ES256 or RS256"))?;
    let key = match (alg, &settings.secret, &settings.public_key_pem) {
        (IdentityAlg::Hs256, Some(secret), None) => {
            if !(SECRET_MIN..=SECRET_MAX).contains(&secret.chars().count()) {
                return Err(Problem::bad_request(
                    "identity.secret is 32-1024 characters for HS256",
                ));
            }
            secret.clone()
        }
        (IdentityAlg::Es256 | IdentityAlg::Rs256, None, Some(pem)) => {
            if pem.chars().count() > PEM_MAX || alg.key(pem).is_err() {
                return Err(Problem::bad_request(
                    "identity.public_key_pem must be a PEM public key of the algorithm's kind",
                ));
            }
            pem.clone()
        }
        _ => {
            return Err(Problem::bad_request(
                "HS256 takes identity.secret; ES256 and RS256 take identity.public_key_pem",
            ));
        }
    };
    Ok(IdentityPatch {
        alg: settings.alg.clone(),
        key: IdentityKey(key),
        required: settings.required,
    })
}

pub(crate) async fn read(
    State(state): State<AppState>,
    PathId(event): PathId<EventId>,
    _: Organizer,
) -> Result<Response, Problem> {
    state.store.get_event(&event).await?;
    let access = state.store.event_access(&event).await?;
    Ok(axum::Json(shown(&access)).into_response())
}

pub(crate) async fn change(
    State(state): State<AppState>,
    PathId(event): PathId<EventId>,
    who: Organizer,
    JsonBody { value: request, .. }: JsonBody<AccessSettings>,
) -> Result<Response, Problem> {
    if request.access.is_none() && request.general_opens_at.is_none() && request.identity.is_none()
    {
        return Err(Problem::bad_request("the change names no setting"));
    }
    if let Some(access) = &request.access
        && !ACCESS_RULES.contains(&access.as_str())
    {
        return Err(Problem::bad_request(
            "access is `open`, `presale` or `invite_only`",
        ));
    }
    let general_opens_at_ms = request
        .general_opens_at
        .as_ref()
        .map(|text| {
            time::OffsetDateTime::parse(text, &time::format_description::well_known::Rfc3339)
                .map(crate::clock::ms)
                .map_err(|_| Problem::bad_request("general_opens_at must be an RFC 3339 time"))
        })
        .transpose()?;
    let identity = match &request.identity {
        None => None,
        Some(None) => Some(None),
        Some(Some(settings)) => Some(Some(identity_patch(settings)?)),
    };
    // A presale needs its general opening, given now or before.
    let current = state.store.event_access(&event).await?;
    let presale = request.access.as_deref().unwrap_or(&current.access) == "presale";
    if presale
        && general_opens_at_ms
            .or(current.general_opens_at_ms)
            .is_none()
    {
        return Err(Problem::bad_request("a presale needs general_opens_at"));
    }
    let patch = AccessPatch {
        access: request.access.clone(),
        general_opens_at_ms: general_opens_at_ms.map(Some),
        identity,
    };
    let access = state.store.update_event_access(&event, &patch).await?;
    // This instance obeys at once; the others on their next tick.
    if let Err(error) = state.admission.tick(event.as_str()).await {
        tracing::warn!(%error, "tick after an access change failed; the next tick applies it");
    }
    let answer = shown(&access);
    audit(&state, &who, "change_access", Some(event.as_str()), &answer).await;
    Ok(axum::Json(answer).into_response())
}
