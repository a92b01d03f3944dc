//! The meter: each tick reads the controls from the database (so a lost pub/sub message or a
//! Redis wipe cannot undo a pause), lapses stale offers, makes new ones in queue order within
//! rate and cap, publishes one snapshot, and checkpoints. Also the Redis-loss recovery.

use std::collections::HashMap;
use std::future::Future;
use std::sync::Mutex;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use crate::admission::{Admission, lock, ms};
use crate::backend::{BackendError, RecoverArgs, TickArgs};
use crate::chance::{SeatCounts, round};
use crate::db::{Checkpoint, Control, TickLog};
use crate::error::AdmissionError;
use crate::frontier::Frontier;
use crate::modes::Mode;
use crate::snapshot::{EventState, Snapshot};
use crate::turnover::Tick;
use crate::wait::CapModel;

/// What one tick did: the offers it made (join sequences, in queue order) and the snapshot.
#[derive(Clone, Debug)]
pub struct TickReport {
    pub offered: Vec<u64>,
    pub snapshot: Snapshot,
}

impl Admission {
    /// One meter step for one event. `run_meter` calls it for every open event; tests call it
    /// directly with steered time. An event the database does not hold is forgotten here; a
    /// closed one gets this last tick (its sockets hear "closed") and leaves the meter.
    pub async fn tick(&self, event: &str) -> Result<TickReport, AdmissionError> {
        self.tick_reading_seats_within(event, None).await
    }

    /// A tick that takes the seat counts read at most `seats_within` ago, if any, instead of
    /// counting the event's seats again. A session that ends wakes the meter at once so its
    /// place goes back into the flow; in a sale sessions end many times a tick, and the seats
    /// counted one tick ago still decide those offers. Sessions and controls are always read.
    #[tracing::instrument(skip_all, err(level = "debug"), fields(event))]
    async fn tick_reading_seats_within(
        &self,
        event: &str,
        seats_within: Option<Duration>,
    ) -> Result<TickReport, AdmissionError> {
        let db = &self.inner.db;
        let counted = seats_within.and_then(|within| {
            let read = *lock(&self.lookup(event)?.seats_read);
            read.filter(|(at, _)| at.elapsed() < within)
                .map(|(_, seats)| seats)
        });
        let seats = async {
            match counted {
                Some(seats) => Ok(seats),
                None => db.availability(event).await,
            }
        };
        // Three reads at once: a tick's time is the slowest of them, not their sum, so the
        // meter keeps its beat while the database is busy with the sale.
        let (control, active, seats) =
            tokio::join!(db.control(event), db.active_sessions(event), seats);
        let Some(control) = control? else {
            self.forget(event);
            return Err(AdmissionError::UnknownEvent);
        };
        self.inner.ticks.fetch_add(1, Ordering::Relaxed);
        let handle = self.handle(event);
        handle.metered.store(!control.closed, Ordering::Relaxed);
        *lock(&handle.control) = Some(std::sync::Arc::new(control.clone()));
        let (active, seats) = (active?, seats?);
        if counted.is_none() {
            *lock(&handle.seats_read) = Some((tokio::time::Instant::now(), seats));
        }
        // Judged from the seats themselves, counted at every beat, so the beat after the last
        // seat is sold (or the last hold that could give one back has ended) tells everyone.
        let sold_out = seats.sold_out();
        let pressure = self.inner.pressure.get();
        let rate_per_min = pressure.scale(control.rate_per_min);
        // Maintenance keeps the line and pauses offers; pass-through offers everyone.
        let maintenance = control.mode == Mode::Maintenance;
        let pass_through = control.mode == Mode::PassThrough;
        let args = || TickArgs {
            opens_at_ms: ms(control.opens_at),
            rate_per_min,
            max_active: control.max_active,
            active,
            offer_ms: i64::from(control.offer_s) * 1000,
            hold: control.paused
                || control.closed
                || seats.none_to_offer()
                || maintenance
                || (rate_per_min == 0 && !pass_through),
            priority_permille: control.priority_permille,
            pass_through,
        };
        let now = self.inner.cfg.clock.script_now();
        let out = match self.inner.backend.tick(event, args(), now).await {
            Err(BackendError::Lost) => {
                self.recover(event, &control).await?;
                self.inner.backend.tick(event, args(), now).await?
            }
            Err(e @ BackendError::Redis(_)) => {
                // Fail-open joins skip the backend while it is known to be down.
                self.note_backend(false);
                return Err(e.into());
            }
            other => other?,
        };
        self.note_backend(true);
        let opened = out.now >= ms(control.opens_at);
        // Claims of the places just offered can reach the edge before this tick is published,
        // and before its checkpoint is written.
        *lock(&handle.frontier) = Frontier {
            epoch: out.epoch.clone(),
            cursor: out.cursor,
            prequeue_through: out.pq_through,
            seed: opened.then(|| control.seed.clone()),
        };
        let state = if control.closed {
            EventState::Closed
        } else if sold_out {
            EventState::SoldOut
        } else if !opened {
            EventState::PreQueue
        } else if control.paused || maintenance {
            EventState::Paused
        } else {
            EventState::Open
        };
        // A tick that offered is checkpointed before it announces the offers, so after a Redis
        // loss no ticket offered before it comes back ahead of the line; otherwise once a period.
        let due = {
            let mut last = lock(&handle.last_checkpoint_ms);
            let due = !out.offered.is_empty()
                || !lock(&handle.unlogged_offers).is_empty()
                || out.now.saturating_sub(*last)
                    >= self.inner.cfg.checkpoint_every.as_millis() as i64;
            if due {
                *last = out.now;
            }
            due
        };
        if due {
            let cp = Checkpoint {
                epoch: out.epoch.clone(),
                // Both lanes restart past it after a loss, so it covers the larger count.
                join_seq: out.seq.max(out.pseq),
                served: out.served,
                fifo_through: out.cursor,
                prequeue_through: out.pq_through,
                priority_through: out.p_through,
            };
            // The organizer's log of offers and joins rides on the same beat, written beside
            // the checkpoint (two connections, so the tick waits for one round trip).
            let joins = out.seq.saturating_add(out.pseq);
            let joins_total = {
                let mut last = lock(&handle.last_joins_total);
                (*last != Some(joins)).then(|| {
                    *last = Some(joins);
                    joins
                })
            };
            let offered = {
                let mut unlogged = std::mem::take(&mut *lock(&handle.unlogged_offers));
                unlogged.extend_from_slice(&out.offered);
                unlogged
            };
            let log = TickLog {
                offered: &offered,
                offer_s: control.offer_s,
                joins_total,
            };
            let written = if log.offered.is_empty() && log.joins_total.is_none() {
                db.save_checkpoint(event, &cp).await
            } else {
                tokio::try_join!(db.save_checkpoint(event, &cp), db.record_tick(event, &log))
                    .map(|_| ())
            };
            if written.is_err() {
                // Written again by the next checkpoint (a place logged twice keeps its first).
                *lock(&handle.last_joins_total) = None;
                keep_unlogged(&handle.unlogged_offers, offered);
            }
            written?;
        }
        // Before the opening every join is in the pre-queue (`ahead`), and the join sequence
        // counts the same joins again: FIFO places start only from the opening's cursor.
        let fifo = if opened {
            out.seq.saturating_sub(out.cursor)
        } else {
            0
        };
        let waiting = out.ahead + fifo + out.pahead;
        // Offers flow only while open, opened and someone is in line: a quiet before the
        // opening, a pause or an empty line says nothing of how fast the line moves.
        let flowing = state == EventState::Open && opened && (waiting > 0 || out.open_offers > 0);
        let measured = lock(&handle.outflow).record(out.now, out.served, flowing);
        let taken = active.saturating_add(out.open_offers);
        let (held, run_their_course) = {
            let mut turnover = lock(&handle.turnover);
            let held = turnover.record(
                Tick {
                    at_ms: out.now,
                    taken,
                    served: out.served,
                    epoch: &out.epoch,
                },
                opened && state != EventState::Closed,
            );
            let offer_ms = i64::from(control.offer_s) * 1000;
            (held, turnover.served_by(out.now - offer_ms))
        };
        let (seats_per_buyer, seat_model) = crate::chance::model(&SeatCounts {
            seats_left: seats.available,
            held: seats.held_or_paying,
            sold: seats.sold,
            live_holds: seats.live_holds,
            holds_sold: seats.holds_sold,
            holds_returned: seats.holds_returned,
            active,
            // Claims in flight count as claimed: they are about to be sessions.
            claimed: out.served.saturating_sub(out.lapsed + out.open_offers),
            lapsed: out.lapsed,
            run_their_course,
            open_offers: out.open_offers,
            limit: control.max_seats_per_buyer,
            opened_for_ms: u64::try_from(out.now.saturating_sub(ms(control.opens_at))).unwrap_or(0),
            offer_s: control.offer_s,
        });
        let mut snapshot = Snapshot {
            event: event.to_owned(),
            version: control.version,
            state,
            opened,
            opens_at_ms: ms(control.opens_at),
            served: out.served,
            cursor: out.cursor,
            prequeue_served_through: out.pq_through,
            ahead_of_fifo: out.ahead,
            join_seq: out.seq,
            waiting,
            open_offers: out.open_offers,
            claiming: out.claiming,
            active,
            lapsed_total: out.lapsed,
            // Rounded as published, so a page computing from the snapshot and `status`
            // agree to the second.
            outflow_per_min: measured.map(|m| (m.per_min * 10.0).round() / 10.0),
            epoch: out.epoch.clone(),
            at_ms: out.now,
            outflow_spread: measured.map(|m| (m.spread * 1000.0).round() / 1000.0),
            rate_per_min: control.rate_per_min,
            seats_left: seats.available,
            seats_held: seats.held_or_paying,
            seats_per_buyer,
            seat_model: Some(seat_model),
            read_within_s: crate::status::read_within_s(
                waiting,
                self.inner.cfg.waiting_reads_per_s,
            ),
            // Before the opening everyone waiting wakes for it.
            opening_spread_s: crate::opening::spread_s(
                waiting,
                self.inner.cfg.waiting_reads_per_s,
                control.offer_s,
            ),
            mode: control.mode,
            message: control.message.clone(),
            seed: opened.then(|| control.seed.clone()),
            cap: Some(CapModel {
                size: control.max_active,
                // The places the meter itself finds free: claims in flight keep theirs.
                free: u64::from(control.max_active)
                    .saturating_sub(taken.saturating_add(out.claiming)),
                // Offers flow only while open.
                offer_rate_per_min: if state == EventState::Open {
                    rate_per_min
                } else {
                    0
                },
                held_s: held.map(|h| [round(h.low_s, 1), round(h.high_s, 1)]),
                held_spread: held.map(|h| round(h.spread, 3)),
            }),
            public: Default::default(),
        };
        // Wake the sockets only when something they show changed: a tick that moved nobody
        // (most ticks while an on-sale waits) would otherwise wake every idle socket ten times
        // a second. The outflow estimate and the time a place is held ride along with the next
        // real change. The public bytes are serialized here, once per published tick, never per
        // poll.
        handle.feed.send_if_modified(|current| {
            let moved = !current.same_queue(&snapshot);
            if moved {
                snapshot.public = crate::public::render(&snapshot);
                *current = std::sync::Arc::new(snapshot.clone());
            }
            moved
        });
        Ok(TickReport {
            offered: out.offered,
            snapshot,
        })
    }

    /// Redis came back empty (or this event is new there): restore the join sequence past the
    /// checkpoint plus a margin, the served counter from the database, and hold offers for the
    /// reconnect grace. Run by whichever instance notices first; the script is idempotent.
    #[tracing::instrument(skip_all, err, fields(event))]
    pub(crate) async fn recover(
        &self,
        event: &str,
        control: &Control,
    ) -> Result<(), AdmissionError> {
        let handle = self.handle(event);
        let _one_at_a_time = handle.recovering.lock().await;
        let db = &self.inner.db;
        let checkpoint = db.load_checkpoint(event).await?;
        let admitted = db.admitted_total(event).await?;
        let cfg = &self.inner.cfg;
        let epoch = uuid::Uuid::new_v4().simple().to_string();
        let args = RecoverArgs {
            epoch: &epoch,
            seq_floor: checkpoint
                .as_ref()
                .map_or(0, |c| c.join_seq + cfg.recovery_margin),
            served_floor: checkpoint.as_ref().map_or(0, |c| c.served).max(admitted),
            // A first start has nobody to wait for.
            grace_ms: if checkpoint.is_some() {
                cfg.reconnect_grace.as_millis() as i64
            } else {
                0
            },
            opens_at_ms: ms(control.opens_at),
            fifo_floor: checkpoint.as_ref().map_or(0, |c| c.fifo_through),
            pq_floor: checkpoint.as_ref().and_then(|c| c.prequeue_through),
            p_floor: checkpoint.as_ref().and_then(|c| c.priority_through),
        };
        let created = self
            .inner
            .backend
            .recover(event, args, cfg.clock.script_now())
            .await?;
        if created && checkpoint.is_some() {
            // Until the next tick publishes the new epoch, no token matches the snapshot's, so
            // `status` asks the backend and returning tokens re-register their places.
            handle
                .feed
                .send_modify(|snapshot| std::sync::Arc::make_mut(snapshot).epoch.clear());
            tracing::warn!(event, "queue state was lost; recovered from the checkpoint");
            // The new epoch must be checkpointed before the next loss can be told apart.
            *lock(&handle.last_checkpoint_ms) = i64::MIN;
        }
        Ok(())
    }

    /// A session ended (confirmed, released, expired, abandoned): record it and wake the meter
    /// so its slot goes back into the flow without waiting for the next tick.
    #[tracing::instrument(skip_all, err, fields(event))]
    pub async fn session_ended(&self, event: &str, session_id: &str) -> Result<(), AdmissionError> {
        self.inner
            .db
            .end_session(event, session_id, "ended")
            .await?;
        self.inner.wake.notify_one();
        Ok(())
    }

    /// Reads which events are open and meters them: an event opened on another instance, or
    /// reopened, starts ticking here within a second.
    async fn refresh_open_events(&self) {
        match self.inner.db.open_events().await {
            Ok(events) => {
                for event in events {
                    self.handle(&event).metered.store(true, Ordering::Relaxed);
                }
            }
            Err(error) => tracing::debug!(%error, "listing open events failed"),
        }
    }

    /// Ticks every open event every `tick_interval` until `shutdown` resolves (events leave
    /// the meter when closed or gone); reads the open events once a second; evicts stale
    /// join-limit keys once a minute.
    pub async fn run_meter(&self, shutdown: impl Future<Output = ()>) {
        let mut every = tokio::time::interval(self.inner.cfg.tick_interval);
        every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut refresh = tokio::time::interval(OPEN_EVENTS_EVERY);
        refresh.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut failing = TickFailures::default();
        let mut evict = tokio::time::interval(Duration::from_secs(60));
        tokio::pin!(shutdown);
        // Another instance offered: tick now so this one's sockets hear it at once.
        let mut news = match &self.inner.backend {
            crate::backend::Backend::Redis(r) => r.news().await,
            crate::backend::Backend::Memory(_) => None,
        };
        let heard = async |news: &mut Option<redis::aio::PubSubStream>| match news {
            Some(stream) => {
                if futures::StreamExt::next(stream).await.is_none() {
                    *news = None;
                }
            }
            None => std::future::pending().await,
        };
        loop {
            tokio::select! {
                () = &mut shutdown => return,
                _ = evict.tick() => self.inner.limiter.evict_stale(),
                _ = refresh.tick() => self.refresh_open_events().await,
                woken = async {
                    tokio::select! {
                        _ = every.tick() => false,
                        () = self.inner.wake.notified() => true,
                        () = heard(&mut news) => true,
                    }
                } => {
                    // Woken between beats, the seats counted within the last beat still hold.
                    let seats_within = woken.then_some(self.inner.cfg.tick_interval);
                    for event in self.metered_events() {
                        let outcome = self.tick_reading_seats_within(&event, seats_within).await;
                        failing.note(&event, outcome.err());
                    }
                }
            }
        }
    }
}

/// How often the meter reads which events are open.
const OPEN_EVENTS_EVERY: Duration = Duration::from_secs(1);

/// A tick failing ten times a second (the database is down) is logged when it starts, every
/// `REPEAT_EVERY` while it lasts, and when it ends: one line per event, not a flood.
#[derive(Default)]
struct TickFailures {
    last_logged: HashMap<String, Instant>,
}

impl TickFailures {
    const REPEAT_EVERY: Duration = Duration::from_secs(10);

    fn note(&mut self, event: &str, error: Option<AdmissionError>) {
        match error {
            None => {
                if self.last_logged.remove(event).is_some() {
                    tracing::info!(event, "ticks succeed again");
                }
            }
            Some(AdmissionError::UnknownEvent) => {
                self.last_logged.remove(event);
                tracing::debug!(event, "event gone from the database; no longer metered");
            }
            Some(error) => {
                let now = Instant::now();
                let due = self
                    .last_logged
                    .get(event)
                    .is_none_or(|at| now.duration_since(*at) >= Self::REPEAT_EVERY);
                if due {
                    tracing::warn!(event, %error, "tick failed (repeats are logged every 10 s)");
                    self.last_logged.insert(event.to_owned(), now);
                }
            }
        }
    }
}

/// Offers kept for the log while the database cannot be written: a long outage keeps the
/// newest this many (about 8 MB), and says it dropped the rest.
const MAX_UNLOGGED_OFFERS: usize = 1_000_000;

/// Puts offers whose log write failed back ahead of any kept since, dropping the oldest
/// beyond `MAX_UNLOGGED_OFFERS`.
fn keep_unlogged(unlogged: &Mutex<Vec<u64>>, mut offered: Vec<u64>) {
    let mut kept = lock(unlogged);
    offered.append(&mut kept);
    let over = offered.len().saturating_sub(MAX_UNLOGGED_OFFERS);
    if over > 0 {
        tracing::warn!(dropped = over, "offers not written to the log of offers");
        offered.drain(..over);
    }
    *kept = offered;
}
