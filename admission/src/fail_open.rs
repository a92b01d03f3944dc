//! Admission from the database alone, for an event whose organizer chose `fail_open`: while
//! the queue backend (Redis) does not answer, a join is admitted at once through the session
//! table, the cap judged by the database's conditional insert. Queue order is given up for
//! the outage; nobody is admitted twice (sessions stay unique per ticket) and the cap holds.
//! With `fail_closed` (the default) the outage stays a 503, as before.

use crate::admission::{Admission, Admitted, Joined};
use crate::db::Control;
use crate::error::{AdmissionError, StorageError};
use crate::status::{self, QueueStatus};
use crate::token::QueueClaims;

/// The queue backend failed (not the database, not a refusal).
pub(crate) fn backend_down(error: &AdmissionError) -> bool {
    matches!(
        error,
        AdmissionError::Storage(StorageError::Redis(_) | StorageError::Reply(_))
    )
}

/// How long one failure marks the backend down; the meter's next tick (every 100 ms) finds
/// out again either way.
const DOWN_FOR_MS: i64 = 2_000;

impl Admission {
    /// Records whether the queue backend was reachable just now.
    pub(crate) fn note_backend(&self, reachable: bool) {
        let until = if reachable {
            0
        } else {
            self.now() + DOWN_FOR_MS
        };
        self.inner
            .backend_down_until
            .store(until, std::sync::atomic::Ordering::Relaxed);
    }

    /// The backend failed within the last `DOWN_FOR_MS` and no tick has reached it since.
    pub(crate) fn backend_known_down(&self) -> bool {
        self.now()
            < self
                .inner
                .backend_down_until
                .load(std::sync::atomic::Ordering::Relaxed)
    }

    /// A join while the backend is down, for a fail-open event: a session now, or `Full`.
    #[tracing::instrument(skip_all, err(level = "debug"), fields(event))]
    pub(crate) async fn join_from_db(
        &self,
        event: &str,
        ticket_id: String,
        control: &Control,
    ) -> Result<Joined, AdmissionError> {
        let session = self
            .inner
            .db
            .open_session_capped(event, &ticket_id, 0, control.session_s, control.max_active)
            .await?
            .ok_or(AdmissionError::Full)?;
        tracing::info!(
            event,
            "queue backend down; admitted from the database (fail_open)"
        );
        // Place 0 and no epoch: when the backend is back, this token is behind every frontier
        // (never re-queued), and its session answers for it.
        let mut claims = QueueClaims::issue(event, &ticket_id, 0, false, "");
        claims.iat = self.now().div_euclid(1000);
        claims.exp = claims.iat + self.inner.cfg.queue_token_ttl_s;
        let queue_token = self.inner.cfg.keys.sign_queue(&claims)?;
        let admitted = self.admitted(event, session)?;
        Ok(Joined {
            queue_token,
            ticket_id,
            status: QueueStatus::Admitted,
            position: None,
            estimated_wait_s: None,
            estimated_wait_range_s: None,
            seat_chance: None,
            retry_after_s: status::build(QueueStatus::Admitted, None, None, None).retry_after_s,
            claims,
            admitted: Some(admitted),
        })
    }

    /// A status or claim the backend could not answer: a fail-open event asks the database
    /// whether the ticket holds a session; otherwise (or with none) the outage stands.
    pub(crate) async fn session_while_down(
        &self,
        claims: &QueueClaims,
        control: &Control,
        error: AdmissionError,
    ) -> Result<Admitted, AdmissionError> {
        if !control.fail_open || !backend_down(&error) {
            return Err(error);
        }
        self.note_backend(false);
        match self
            .inner
            .db
            .session(&claims.event, &claims.ticket_id)
            .await?
        {
            Some(s) => self.admitted(&claims.event, s),
            None => Err(error),
        }
    }

    /// The ticket's session when the backend is known to be down and the event fails open:
    /// answered without waiting on the backend.
    pub(crate) async fn session_if_down(
        &self,
        claims: &QueueClaims,
        control: &Control,
    ) -> Result<Option<Admitted>, AdmissionError> {
        if !control.fail_open || !self.backend_known_down() {
            return Ok(None);
        }
        match self
            .inner
            .db
            .session(&claims.event, &claims.ticket_id)
            .await?
        {
            Some(s) => Ok(Some(self.admitted(&claims.event, s)?)),
            None => Ok(None),
        }
    }

    /// `status` for a fail-open event while the backend is down.
    pub(crate) async fn status_while_down(
        &self,
        claims: &QueueClaims,
        control: &Control,
        error: AdmissionError,
    ) -> Result<status::Status, AdmissionError> {
        self.session_while_down(claims, control, error).await?;
        Ok(status::build(QueueStatus::Admitted, None, None, None))
    }
}
