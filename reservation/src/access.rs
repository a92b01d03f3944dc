//! Who may join an event's queue (`event_access`): open to anyone, a presale that needs a code
//! until the general opening, or invitation only; and the organizer's key that signs the
//! identity tokens buyers bring, when one place per person is wanted. Read with the live
//! admission controls on every tick, so a join never asks the database for it.

use std::fmt;

use crate::Error;
use crate::ids::EventId;
use crate::store::Store;

/// The shared secret or public key PEM identity tokens are checked with. Never shown: not in
/// `Debug`, not in any answer.
#[derive(Clone, PartialEq, Eq)]
pub struct IdentityKey(pub String);

impl fmt::Debug for IdentityKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("IdentityKey(..)")
    }
}

/// An event's entry rules as stored; an event without a row is open with no identity check.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct EventAccess {
    /// `open`, `presale` or `invite_only`.
    pub access: String,
    pub general_opens_at_ms: Option<i64>,
    /// `HS256`, `ES256` or `RS256`, with its key; `None` when buyers prove no identity.
    pub identity_alg: Option<String>,
    pub identity_key: Option<IdentityKey>,
    pub identity_required: bool,
}

impl EventAccess {
    pub fn open() -> Self {
        EventAccess {
            access: "open".into(),
            ..Default::default()
        }
    }
}

/// An organizer's change of the entry rules; `None` leaves a field as it is. `identity` set
/// to `Some(None)` removes the identity check.
#[derive(Debug, Clone, Default)]
pub struct AccessPatch {
    pub access: Option<String>,
    pub general_opens_at_ms: Option<Option<i64>>,
    pub identity: Option<Option<IdentityPatch>>,
}

#[derive(Debug, Clone)]
pub struct IdentityPatch {
    pub alg: String,
    pub key: IdentityKey,
    pub required: bool,
}

#[derive(sqlx::FromRow)]
struct AccessRow {
    access: String,
    general_opens_at_ms: Option<i64>,
    identity_alg: Option<String>,
    identity_key: Option<String>,
    identity_required: i64,
}

impl From<AccessRow> for EventAccess {
    fn from(r: AccessRow) -> Self {
        EventAccess {
            access: r.access,
            general_opens_at_ms: r.general_opens_at_ms,
            identity_alg: r.identity_alg,
            identity_key: r.identity_key.map(IdentityKey),
            identity_required: r.identity_required != 0,
        }
    }
}

impl Store {
    /// The event's entry rules (open when it has none).
    pub async fn event_access(&self, event: &EventId) -> Result<EventAccess, Error> {
        let row = sqlx::query_as::<_, AccessRow>(self.sql(
            "select access, MS(general_opens_at) as general_opens_at_ms, identity_alg, \
             identity_key, cast(case when identity_required then 1 else 0 end as bigint) \
             as identity_required from event_access where event_id = $1",
        ))
        .bind(event.as_str())
        .fetch_optional(&self.pool)
        .await?;
        Ok(row.map(EventAccess::from).unwrap_or_else(EventAccess::open))
    }

    /// Applies a change of the entry rules in one statement (the row is made on first use)
    /// and bumps the admission controls' version, so every instance's next tick obeys it.
    #[tracing::instrument(skip_all, err, fields(event = %event))]
    pub async fn update_event_access(
        &self,
        event: &EventId,
        patch: &AccessPatch,
    ) -> Result<EventAccess, Error> {
        self.get_event(event).await?;
        let mut tx = self.begin().await?;
        let (set_opens, opens) = match patch.general_opens_at_ms {
            Some(v) => (true, v),
            None => (false, None),
        };
        let (set_identity, alg, key, required) = match &patch.identity {
            Some(Some(i)) => (true, Some(i.alg.clone()), Some(i.key.0.clone()), i.required),
            Some(None) => (true, None, None, false),
            None => (false, None, None, false),
        };
        sqlx::query(self.sql(
            "insert into event_access (event_id) values ($1) on conflict (event_id) do nothing",
        ))
        .bind(event.as_str())
        .execute(&mut *tx)
        .await?;
        sqlx::query(self.sql(
            "update event_access set access = coalesce($2, access), \
             general_opens_at = case when $3 then TS($4) else general_opens_at end, \
             identity_alg = case when $5 then $6 else identity_alg end, \
             identity_key = case when $5 then $7 else identity_key end, \
             identity_required = case when $5 then $8 else identity_required end, \
             updated_at = NOW where event_id = $1",
        ))
        .bind(event.as_str())
        .bind(patch.access.clone())
        .bind(set_opens)
        .bind(opens)
        .bind(set_identity)
        .bind(alg)
        .bind(key)
        .bind(required)
        .execute(&mut *tx)
        .await?;
        self.bump_admission_version(&mut tx, event).await?;
        tx.commit().await?;
        self.event_access(event).await
    }
}
