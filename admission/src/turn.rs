//! A buyer's turn: where a token stands (status) and turning an offer into a session (claim).

use crate::admission::{Admission, Admitted, lock, ms};
use crate::backend::{BackendError, ClaimStart, TicketArgs, TicketState};
use crate::clock::UnixMs;
use crate::db::{Control, SessionRecord};
use crate::error::AdmissionError;
use crate::fairness;
use crate::modes::Mode;
use crate::snapshot::EventState;
use crate::status::{self, QueueStatus, Status};
use crate::token::QueueClaims;

impl Admission {
    async fn ticket_state(
        &self,
        claims: &QueueClaims,
        control: &Control,
    ) -> Result<(TicketState, UnixMs), AdmissionError> {
        let score = fairness::pre_score(&control.seed, &claims.ticket_id);
        let args = |never_offered| TicketArgs {
            seq: claims.seq,
            pre: claims.pre_queue,
            score,
            epoch: &claims.epoch,
            never_offered,
        };
        let script_now = self.inner.cfg.clock.script_now();
        let backend = &self.inner.backend;
        // A queue lost under either question is recovered and the questions start over, so the
        // log's answer is always read after the last recovery, never carried across one (a place
        // brought back and offered meanwhile would otherwise be registered again). Two losses
        // in one read are recovered; a third is the outage it looks like.
        let mut recoveries = 0;
        loop {
            let found = match backend.ticket(&claims.event, args(false), script_now).await {
                Err(BackendError::Lost) if recoveries < 2 => {
                    self.recover(&claims.event, control).await?;
                    recoveries += 1;
                    continue;
                }
                other => other?,
            };
            // Behind the frontiers saved before a loss: the log of offers says whether the
            // line passed it offered, or while its page slept through an earlier loss.
            let (TicketState::Behind, now) = found else {
                return Ok(found);
            };
            if self.inner.db.was_offered(&claims.event, claims.seq).await? {
                return Ok((TicketState::Lapsed, now));
            }
            match backend.ticket(&claims.event, args(true), script_now).await {
                Err(BackendError::Lost) if recoveries < 2 => {
                    self.recover(&claims.event, control).await?;
                    recoveries += 1;
                }
                other => return Ok(other?),
            }
        }
    }

    /// Where this token stands now. Also re-registers a place Redis lost.
    #[tracing::instrument(skip_all, err(level = "debug"))]
    pub async fn status(&self, claims: &QueueClaims) -> Result<Status, AdmissionError> {
        let (handle, control) = self.known(&claims.event).await?;
        let snap = handle.feed.borrow().clone();
        if control.closed || snap.state == EventState::Closed {
            return Ok(status::build(QueueStatus::Closed, None, None, None));
        }
        if self.session_if_down(claims, &control).await?.is_some() {
            return Ok(status::build(QueueStatus::Admitted, None, None, None));
        }
        // Most pollers are far back: answer them from the last tick's snapshot, with no backend
        // call. A ticket the cursor has reached (offered, claimed, lapsed) asks the backend.
        if snap.epoch == claims.epoch
            && !claims.pre_queue
            && let Some(ahead) = snap.position_hint(claims)
        {
            let s = match snap.state {
                EventState::PreQueue => QueueStatus::PreQueue,
                EventState::SoldOut => QueueStatus::SoldOut,
                EventState::Paused => QueueStatus::Paused,
                _ if control.paused => QueueStatus::Paused,
                _ => QueueStatus::Waiting,
            };
            return Ok(
                status::build(s, Some(ahead), Some(&snap), None).until_opening(
                    ms(control.opens_at),
                    self.inner.cfg.clock.now_ms(),
                    &snap,
                    &claims.ticket_id,
                ),
            );
        }
        let (state, now) = match self.ticket_state(claims, &control).await {
            Ok(found) => found,
            Err(e) => return self.status_while_down(claims, &control, e).await,
        };
        Ok(match state {
            TicketState::Claimed => status::build(QueueStatus::Admitted, None, None, None),
            // Redis forgets claims in a loss; the database does not. (`ticket_state` has
            // judged a ticket behind the saved frontiers by then: it is here only if offered.)
            TicketState::Lapsed | TicketState::Behind => match self
                .inner
                .db
                .session(&claims.event, &claims.ticket_id)
                .await?
            {
                Some(_) => status::build(QueueStatus::Admitted, None, None, None),
                None => status::build(QueueStatus::OfferLapsed, None, None, None),
            },
            TicketState::Offered { expires_ms } => {
                lock(&handle.frontier).offered(claims, &control.seed);
                let left = ((expires_ms - now).max(0) as u64).div_ceil(1000);
                status::build(QueueStatus::Offered, Some(0), Some(&snap), Some(left))
            }
            TicketState::Waiting { ahead } => {
                let s = if now < ms(control.opens_at) {
                    QueueStatus::PreQueue
                } else {
                    match snap.state {
                        EventState::SoldOut => QueueStatus::SoldOut,
                        EventState::Paused => QueueStatus::Paused,
                        _ if control.paused || control.mode == Mode::Maintenance => {
                            QueueStatus::Paused
                        }
                        _ => QueueStatus::Waiting,
                    }
                };
                status::build(s, Some(ahead), Some(&snap), None).until_opening(
                    ms(control.opens_at),
                    now,
                    &snap,
                    &claims.ticket_id,
                )
            }
        })
    }

    /// Turns an open offer into a durable session and its admission token. Claiming again
    /// returns the same session.
    #[tracing::instrument(skip_all, err(level = "debug"))]
    pub async fn claim(&self, claims: &QueueClaims) -> Result<Admitted, AdmissionError> {
        let control = self.control(&claims.event).await?;
        if control.closed {
            return Err(AdmissionError::QueueClosed);
        }
        if let Some(admitted) = self.session_if_down(claims, &control).await? {
            return Ok(admitted);
        }
        let claimed = if control.mode == Mode::PassThrough {
            self.claim_capped(claims, &control).await
        } else {
            self.claim_metered(claims, &control).await
        };
        match claimed {
            Err(e) => self.session_while_down(claims, &control, e).await,
            ok => ok,
        }
    }

    /// The meter offered within the cap: the offer becomes a session.
    async fn claim_metered(
        &self,
        claims: &QueueClaims,
        control: &Control,
    ) -> Result<Admitted, AdmissionError> {
        let event = claims.event.as_str();
        let now = self.inner.cfg.clock.script_now();
        let start = match self.inner.backend.claim_start(event, claims.seq, now).await {
            Err(BackendError::Lost) => {
                self.recover(event, control).await?;
                self.inner
                    .backend
                    .claim_start(event, claims.seq, now)
                    .await?
            }
            other => other?,
        };
        let db = &self.inner.db;
        let session = match start {
            ClaimStart::Moved | ClaimStart::Claimed => {
                let s = db
                    .open_session(event, &claims.ticket_id, claims.seq, control.session_s)
                    .await?;
                match self.inner.backend.claim_done(event, claims.seq, now).await {
                    Ok(()) | Err(BackendError::Lost) => {}
                    Err(e) => return Err(e.into()),
                }
                s
            }
            ClaimStart::NotOffered => match db.session(event, &claims.ticket_id).await? {
                // Redis forgot the claim (a loss); the database did not.
                Some(s) => s,
                None => return Err(self.refusal(claims, control).await?),
            },
        };
        self.admitted(event, session)
    }

    /// Pass-through offered everyone: the database judges the cap before the offer is
    /// spent, so a buyer refused for a full house keeps the offer and may try again until it
    /// lapses.
    async fn claim_capped(
        &self,
        claims: &QueueClaims,
        control: &Control,
    ) -> Result<Admitted, AdmissionError> {
        let event = claims.event.as_str();
        let (state, _) = self.ticket_state(claims, control).await?;
        if !matches!(state, TicketState::Offered { .. } | TicketState::Claimed) {
            return match self.inner.db.session(event, &claims.ticket_id).await? {
                Some(s) => self.admitted(event, s),
                None => Err(self.refusal(claims, control).await?),
            };
        }
        let session = self
            .inner
            .db
            .open_session_capped(
                event,
                &claims.ticket_id,
                claims.seq,
                control.session_s,
                control.max_active,
            )
            .await?
            .ok_or(AdmissionError::Full)?;
        // The session exists: the offer is spent. An offer that lapsed in between is moved by
        // nobody; the session stands either way (the database is the fence).
        let now = self.inner.cfg.clock.script_now();
        if let ClaimStart::Moved | ClaimStart::Claimed = self
            .inner
            .backend
            .claim_start(event, claims.seq, now)
            .await?
        {
            self.inner
                .backend
                .claim_done(event, claims.seq, now)
                .await?;
        }
        self.admitted(event, session)
    }

    async fn refusal(
        &self,
        claims: &QueueClaims,
        control: &Control,
    ) -> Result<AdmissionError, AdmissionError> {
        let (state, _) = self.ticket_state(claims, control).await?;
        let snap_state = self
            .lookup(&claims.event)
            .map(|h| h.feed.borrow().state)
            .unwrap_or_default();
        Ok(match state {
            TicketState::Lapsed | TicketState::Behind => AdmissionError::OfferLapsed,
            _ if snap_state == EventState::SoldOut => AdmissionError::SoldOut,
            _ if control.paused => AdmissionError::QueuePaused,
            _ => AdmissionError::NotYourTurn,
        })
    }

    pub(crate) fn admitted(
        &self,
        event: &str,
        s: SessionRecord,
    ) -> Result<Admitted, AdmissionError> {
        let admission_token = self.inner.cfg.keys.sign_admission(
            event,
            &s.session_id,
            &s.ticket_id,
            self.now(),
            s.expires_at.unix_timestamp(),
        )?;
        Ok(Admitted {
            admission_token,
            session_id: s.session_id,
            session_expires_at: s.expires_at,
        })
    }
}
