//! The organizer's look of an event's pages: the branding and the sites allowed to frame them.
//! Both are kept as the JSON the gateway validated; the store only records and returns them.

use crate::Error;
use crate::ids::EventId;
use crate::store::{Store, Tx};

/// A change of look: each field `None` is left as it is.
#[derive(Debug, Clone, Default)]
pub struct LookPatch {
    /// `Some(None)` removes the branding.
    pub branding: Option<Option<String>>,
    /// A JSON array of origins (`[]` stops all framing).
    pub frame_ancestors: Option<String>,
}

impl LookPatch {
    pub fn is_empty(&self) -> bool {
        self.branding.is_none() && self.frame_ancestors.is_none()
    }
}

impl Store {
    /// Applies the change in one statement; `EventNotFound` for an unknown event.
    #[tracing::instrument(skip_all, err, fields(event = %event))]
    pub async fn set_look(&self, event: &EventId, patch: &LookPatch) -> Result<(), Error> {
        if patch.is_empty() {
            return Err(Error::NothingToChange);
        }
        self.edit_event(event, patch, &crate::TimingsPatch::default())
            .await
    }

    /// The same change inside a caller's transaction (with a change of timings: all or
    /// nothing).
    pub(crate) async fn write_look(
        &self,
        tx: &mut Tx,
        event: &EventId,
        patch: &LookPatch,
    ) -> Result<(), Error> {
        let changed = sqlx::query(
            "update events set \
             branding = case when $2 = 1 then $3 else branding end, \
             frame_ancestors = coalesce($4, frame_ancestors) \
             where event_id = $1",
        )
        .bind(event.as_str())
        .bind(i32::from(patch.branding.is_some()))
        .bind(patch.branding.clone().flatten())
        .bind(patch.frame_ancestors.clone())
        .execute(&mut **tx)
        .await?;
        if changed.rows_affected() == 0 {
            return Err(Error::EventNotFound);
        }
        Ok(())
    }
}
