//! The facade the gateway calls: join, status, claim, token checks, the change feed.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use time::OffsetDateTime;
use tokio::sync::watch;

use crate::backend::{
    Backend, BackendError, JoinArgs, JoinOutcome, memory::MemoryQueue, redis::RedisQueue,
};
use crate::clock::UnixMs;
use crate::config::AdmissionConfig;
use crate::db::{AdmissionDb, Control};
use crate::entry::Lane;
use crate::error::AdmissionError;
use crate::fairness::{self, Fairness};
use crate::frontier::Frontier;
use crate::limit::JoinLimiter;
use crate::snapshot::{EventState, Outflow, Snapshot};
use crate::status::{self, QueueStatus};
use crate::token::{AdmissionClaims, QueueClaims};

/// The answer to a join (`POST …/queue`, 201).
#[derive(Clone, Debug)]
pub struct Joined {
    pub queue_token: String,
    pub ticket_id: String,
    pub status: QueueStatus,
    pub position: Option<u64>,
    pub estimated_wait_s: Option<u64>,
    /// The range the wait falls in (`wait::wait_estimate`): a page shows this from its
    /// first moment in line, never a bare point.
    pub estimated_wait_range_s: Option<(u64, u64)>,
    /// How likely a seat is left at this place (0–1; `None` when unknown).
    pub seat_chance: Option<f64>,
    /// Seconds until the page's first read, at the pace a status read at this place gives:
    /// the answer already carries the place, range and chance a read would, so a page that
    /// just joined does not read the snapshot again at once (in a storm that read would be one
    /// more per arrival, all of them while the crowd is still arriving).
    pub retry_after_s: u64,
    pub claims: QueueClaims,
    /// Admitted at once, from the database alone (`fail_open` while the backend is down).
    pub admitted: Option<Admitted>,
}

/// A join that passed the limit, the event and the queue's state (`Admission::open_join`).
pub struct JoinGate {
    event: String,
    control: Arc<Control>,
    snap: Arc<Snapshot>,
    now_ms: UnixMs,
}

impl JoinGate {
    /// The event's controls as of the last tick: its access rule, identity key and lanes.
    pub fn control(&self) -> &Control {
        &self.control
    }

    /// Admission's clock when the gate was passed (the one presale windows are judged by).
    pub fn now_ms(&self) -> UnixMs {
        self.now_ms
    }
}

/// What makes a join return the place it got before.
#[derive(Clone, Copy, Debug)]
pub enum PlaceKey<'a> {
    /// An `Idempotency-Key`: a retried request.
    Idempotency(&'a str),
    /// An identity token's subject: the same person, from any device.
    Person(&'a str),
}

impl PlaceKey<'_> {
    /// The text the ticket id is derived from. A subject gets a prefix with a space, which no
    /// `Idempotency-Key` (printable, no spaces) can carry, so a key never names a person.
    fn text(self) -> String {
        match self {
            PlaceKey::Idempotency(k) => k.to_owned(),
            PlaceKey::Person(sub) => format!("person {sub}"),
        }
    }
}

/// The answer to a claim: a durable session and its token.
#[derive(Clone, Debug)]
pub struct Admitted {
    pub admission_token: String,
    pub session_id: String,
    pub session_expires_at: OffsetDateTime,
}

/// One instance's view of an event: its change feed, cached controls, outflow and turnover
/// samples.
pub(crate) struct EventHandle {
    pub(crate) feed: watch::Sender<Arc<Snapshot>>,
    pub(crate) control: Mutex<Option<Arc<Control>>>,
    pub(crate) outflow: Mutex<Outflow>,
    pub(crate) turnover: Mutex<crate::turnover::Turnover>,
    pub(crate) last_checkpoint_ms: Mutex<UnixMs>,
    /// Offers as far as the backend's last tick went, ahead of the snapshot (`frontier`).
    pub(crate) frontier: Mutex<Frontier>,
    /// The join count this instance last recorded for the timeline (`None`: not yet).
    pub(crate) last_joins_total: Mutex<Option<u64>>,
    /// Offers this instance made whose log write failed, written again with the next
    /// checkpoint: the log of offers judges tickets that come back after a queue loss.
    pub(crate) unlogged_offers: Mutex<Vec<u64>>,
    pub(crate) recovering: tokio::sync::Mutex<()>,
    /// Ticked by the meter: the event exists and its queue is not closed (a tick that finds it
    /// closed clears this; the list of open events read each second sets it again).
    pub(crate) metered: AtomicBool,
    /// The seat counts the last tick read from the database, and when.
    pub(crate) seats_read: Mutex<Option<(tokio::time::Instant, crate::db::Availability)>>,
}

pub(crate) struct Inner {
    pub(crate) backend: Backend,
    pub(crate) db: Arc<dyn AdmissionDb>,
    pub(crate) cfg: AdmissionConfig,
    pub(crate) limiter: JoinLimiter,
    pub(crate) events: Mutex<HashMap<String, Arc<EventHandle>>>,
    /// Wakes `run_meter` early (a session ended, so a slot is free).
    pub(crate) wake: tokio::sync::Notify,
    pub(crate) pressure: crate::pressure::PressureCell,
    /// Ticks run since start, for `/metrics`.
    pub(crate) ticks: AtomicU64,
    /// Until when (process clock, ms) the queue backend counts as down: set by any call that
    /// found it unreachable, cleared by a tick that reached it (`fail_open`).
    pub(crate) backend_down_until: std::sync::atomic::AtomicI64,
}

/// What the meter is doing, for `/metrics`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MeterFigures {
    /// Events this instance ticks: they exist in the database and their queue is not closed.
    pub events: usize,
    pub ticks_total: u64,
}

/// The waiting room. Cheap to clone; one per gateway process.
#[derive(Clone)]
pub struct Admission {
    pub(crate) inner: Arc<Inner>,
}

pub(crate) fn ms(t: OffsetDateTime) -> UnixMs {
    (t.unix_timestamp_nanos() / 1_000_000) as UnixMs
}

/// A poisoned lock still holds the last state written: a panic elsewhere must not stop offers.
pub(crate) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Admission {
    /// `queue_url`: `memory` (one process) or `redis://…` (several comma-separated = Cluster).
    pub async fn connect(
        queue_url: &str,
        db: Arc<dyn AdmissionDb>,
        cfg: AdmissionConfig,
    ) -> Result<Self, AdmissionError> {
        let backend = if queue_url.trim() == "memory" {
            Backend::Memory(MemoryQueue::new(cfg.clock.clone()))
        } else {
            Backend::Redis(Box::new(
                RedisQueue::connect(queue_url, cfg.tls_ca_pem.as_deref()).await?,
            ))
        };
        Ok(Admission {
            inner: Arc::new(Inner {
                backend,
                limiter: JoinLimiter::new(cfg.join_limit_per_min, cfg.clock.clone()),
                db,
                cfg,
                events: Mutex::new(HashMap::new()),
                wake: tokio::sync::Notify::new(),
                pressure: Default::default(),
                ticks: AtomicU64::new(0),
                backend_down_until: std::sync::atomic::AtomicI64::new(0),
            }),
        })
    }

    /// The event's handle, created if this instance has none yet. Only for an event the
    /// database is known to hold (a read found it, or a token this service signed names it):
    /// a handle is metered until a tick finds the event closed or gone.
    pub(crate) fn handle(&self, event: &str) -> Arc<EventHandle> {
        let mut events = lock(&self.inner.events);
        if let Some(h) = events.get(event) {
            return h.clone();
        }
        events
            .entry(event.to_owned())
            .or_insert_with(|| {
                Arc::new(EventHandle {
                    feed: watch::Sender::new(Arc::new(Snapshot {
                        event: event.to_owned(),
                        ..Snapshot::default()
                    })),
                    control: Mutex::new(None),
                    outflow: Mutex::new(Outflow::default()),
                    turnover: Mutex::new(Default::default()),
                    last_checkpoint_ms: Mutex::new(i64::MIN),
                    frontier: Mutex::new(Frontier::default()),
                    last_joins_total: Mutex::new(None),
                    unlogged_offers: Mutex::new(Vec::new()),
                    recovering: tokio::sync::Mutex::new(()),
                    metered: AtomicBool::new(true),
                    seats_read: Mutex::new(None),
                })
            })
            .clone()
    }

    /// The event's handle if this instance knows the event; never creates one.
    pub(crate) fn lookup(&self, event: &str) -> Option<Arc<EventHandle>> {
        lock(&self.inner.events).get(event).cloned()
    }

    /// Forgets an event the database no longer holds: its feed closes once nobody reads it.
    pub(crate) fn forget(&self, event: &str) {
        lock(&self.inner.events).remove(event);
    }

    /// The events the meter ticks, by name.
    pub(crate) fn metered_events(&self) -> Vec<String> {
        lock(&self.inner.events)
            .iter()
            .filter(|(_, h)| h.metered.load(Ordering::Relaxed))
            .map(|(event, _)| event.clone())
            .collect()
    }

    /// Events ticked and ticks run, for `/metrics`.
    pub fn meter_figures(&self) -> MeterFigures {
        let events = lock(&self.inner.events)
            .values()
            .filter(|h| h.metered.load(Ordering::Relaxed))
            .count();
        MeterFigures {
            events,
            ticks_total: self.inner.ticks.load(Ordering::Relaxed),
        }
    }

    /// The change feed: one new value per tick of this event (the meter must run). Shared
    /// behind an `Arc` so thousands of sockets read one snapshot without copying it. For an
    /// event known to exist (a read found it, or a signed token names it): subscribing
    /// registers it with this instance's meter, which forgets it again if the database does
    /// not hold it.
    pub fn subscribe(&self, event: &str) -> watch::Receiver<Arc<Snapshot>> {
        self.handle(event).feed.subscribe()
    }

    /// Whether the last tick this instance ran had offered this token's place (`frontier`):
    /// no backend call, no database read, and nothing registered for an event this instance
    /// does not know.
    pub fn turn_has_come(&self, claims: &QueueClaims) -> bool {
        self.lookup(&claims.event)
            .is_some_and(|h| lock(&h.frontier).reached(claims))
    }

    /// The event's handle and controls as of the last tick. An event this instance has not
    /// seen is looked up in the database once; an unknown one is refused and leaves nothing
    /// behind (no handle, no meter tick, no cached "no"), so made-up ids cost only their
    /// request. A known event costs no query here: the meter refreshes its controls.
    pub(crate) async fn known(
        &self,
        event: &str,
    ) -> Result<(Arc<EventHandle>, Arc<Control>), AdmissionError> {
        if let Some(h) = self.lookup(event) {
            let cached = lock(&h.control).clone();
            if let Some(c) = cached {
                return Ok((h, c));
            }
        }
        let c = Arc::new(
            self.inner
                .db
                .control(event)
                .await?
                .ok_or(AdmissionError::UnknownEvent)?,
        );
        let h = self.handle(event);
        let cached = {
            let mut slot = lock(&h.control);
            match slot.as_ref() {
                // A tick stored a newer row meanwhile: keep it.
                Some(newer) if newer.version >= c.version => newer.clone(),
                _ => {
                    *slot = Some(c.clone());
                    c
                }
            }
        };
        Ok((h, cached))
    }

    /// Controls as of the last tick (read from the database on first use).
    pub(crate) async fn control(&self, event: &str) -> Result<Arc<Control>, AdmissionError> {
        Ok(self.known(event).await?.1)
    }

    pub(crate) fn now(&self) -> UnixMs {
        self.inner.cfg.clock.now_ms()
    }

    /// Places a buyer in line. `key` (an `Idempotency-Key`) makes a retried join return the
    /// same place; the ticket id is always derived server-side so nobody picks their rank.
    pub async fn join(
        &self,
        event: &str,
        client: IpAddr,
        key: Option<&str>,
    ) -> Result<Joined, AdmissionError> {
        let gate = self.open_join(event, client).await?;
        let key = key.map(PlaceKey::Idempotency);
        self.join_through(gate, key, Lane::General).await
    }

    /// The checks every join passes before anything is written: the join limit of the client
    /// address, the event, and whether its queue takes joins. The gate carries the controls
    /// as of the last tick, so the caller judges access (codes, identity) without a query.
    pub async fn open_join(&self, event: &str, client: IpAddr) -> Result<JoinGate, AdmissionError> {
        if let Err(retry_after_s) = self.inner.limiter.check(client) {
            return Err(AdmissionError::RateLimited { retry_after_s });
        }
        let (handle, control) = self.known(event).await?;
        let snap = handle.feed.borrow().clone();
        match snap.state {
            EventState::Closed => return Err(AdmissionError::QueueClosed),
            EventState::SoldOut => return Err(AdmissionError::SoldOut),
            _ if control.closed => return Err(AdmissionError::QueueClosed),
            _ if control.mode == crate::Mode::Maintenance => {
                return Err(AdmissionError::QueueMaintenance {
                    message: control.message.as_ref().map(|m| m.text.clone()),
                });
            }
            // A pause stops offers, not the line: joining during one gets a place.
            _ => {}
        }
        Ok(JoinGate {
            event: event.to_owned(),
            control,
            snap,
            now_ms: self.now(),
        })
    }

    /// Whether `key` already holds a place in this event's line: a person joining again from
    /// another device is given that place and spends no code.
    pub async fn has_place(
        &self,
        gate: &JoinGate,
        key: PlaceKey<'_>,
    ) -> Result<bool, AdmissionError> {
        let ticket_id = self
            .inner
            .cfg
            .keys
            .keyed_ticket_id(&gate.event, &key.text());
        Ok(self.inner.backend.has_key(&gate.event, &ticket_id).await?)
    }

    /// Places a buyer who passed the gate, in `lane`. A keyed join (a retried request, or the
    /// same person from another device) returns the place the key first got, in its lane.
    #[tracing::instrument(skip_all, err(level = "debug"), fields(event = %gate.event))]
    pub async fn join_through(
        &self,
        gate: JoinGate,
        key: Option<PlaceKey<'_>>,
        lane: Lane,
    ) -> Result<Joined, AdmissionError> {
        let JoinGate {
            event,
            control,
            snap,
            ..
        } = gate;
        let event = event.as_str();
        let keyed = key.map(|k| k.text());
        let ticket_id = match &keyed {
            // Keyed by a secret that is never revealed (unlike the seed, published at opening),
            // so nobody can compute another buyer's ticket from their key or grind keys for a
            // good rank.
            Some(k) => self.inner.cfg.keys.keyed_ticket_id(event, k),
            // 128 random bits from the thread-local generator (no syscall per join).
            None => format!("{:032x}", rand::random::<u128>()),
        };
        let args = || JoinArgs {
            key: keyed.as_ref().map(|_| ticket_id.as_str()),
            // After opening (by the queue's clock) the score is never read: skip the HMAC.
            pre_score: if snap.opened {
                0.0
            } else {
                fairness::pre_score(&control.seed, &ticket_id)
            },
            opens_at_ms: ms(control.opens_at),
            priority: lane == Lane::Priority,
        };
        if control.fail_open && self.backend_known_down() {
            // The meter (or a call just now) found the backend unreachable: no buyer waits
            // out a connection timeout to be told what is already known.
            return self.join_from_db(event, ticket_id, &control).await;
        }
        let now = self.inner.cfg.clock.script_now();
        let queued = async {
            let fast = if keyed.is_none() && lane == Lane::General {
                self.fast_join(event, &snap).await?
            } else {
                None
            };
            Ok::<_, AdmissionError>(match fast {
                Some(out) => out,
                None => match self.inner.backend.join(event, args(), now).await {
                    Err(BackendError::Lost) => {
                        self.recover(event, &control).await?;
                        self.inner.backend.join(event, args(), now).await?
                    }
                    other => other?,
                },
            })
        };
        let out = match queued.await {
            Ok(out) => out,
            Err(e) if control.fail_open && crate::fail_open::backend_down(&e) => {
                self.note_backend(false);
                return self.join_from_db(event, ticket_id, &control).await;
            }
            Err(e) => return Err(e),
        };
        if control.mode == crate::Mode::PassThrough {
            // Pass-through offers new joiners at once: the meter ticks now, not in 100 ms.
            self.inner.wake.notify_one();
        }
        let mut claims = QueueClaims::issue(event, &ticket_id, out.seq, out.pre, &out.ep);
        claims.iat = out.now.div_euclid(1000);
        claims.exp = claims.iat + self.inner.cfg.queue_token_ttl_s;
        let queue_token = self.inner.cfg.keys.sign_queue(&claims)?;
        let (status, position) = if out.pre {
            (QueueStatus::PreQueue, None)
        } else {
            let pos = snap.position_hint(&claims);
            match snap.state {
                EventState::Paused => (QueueStatus::Paused, pos),
                _ if control.paused => (QueueStatus::Paused, pos),
                _ => (QueueStatus::Waiting, pos),
            }
        };
        let est = status::build(status, position, Some(&snap), None).until_opening(
            ms(control.opens_at),
            out.now,
            &snap,
            &ticket_id,
        );
        Ok(Joined {
            queue_token,
            ticket_id,
            status,
            position,
            estimated_wait_s: est.estimated_wait_s,
            estimated_wait_range_s: est.estimated_wait_range_s,
            seat_chance: est.seat_chance,
            retry_after_s: est.retry_after_s,
            claims,
            admitted: None,
        })
    }

    /// The common case in Redis, an anonymous join after opening, is one plain `INCR`: the
    /// last tick already judged opening by Redis's clock and initialised the FIFO cursor. A
    /// number not above the last tick's means the counter was lost; the checked script path
    /// then notices the missing epoch and recovers.
    async fn fast_join(
        &self,
        event: &str,
        snap: &Snapshot,
    ) -> Result<Option<JoinOutcome>, AdmissionError> {
        let Backend::Redis(redis) = &self.inner.backend else {
            return Ok(None);
        };
        if !snap.opened || snap.epoch.is_empty() {
            return Ok(None);
        }
        let seq = redis.incr_seq(event).await?;
        Ok((seq > snap.join_seq).then(|| JoinOutcome {
            seq,
            pre: false,
            ep: snap.epoch.clone(),
            now: self.now(),
            p: false,
        }))
    }

    /// The public snapshot of a known event: the bytes the last published tick serialized
    /// (serialized here only before this instance's first tick of the event). An unknown event
    /// is refused and leaves nothing behind, as `known` says.
    pub async fn public_snapshot(&self, event: &str) -> Result<crate::Public, AdmissionError> {
        let (handle, _) = self.known(event).await?;
        let snap = handle.feed.borrow().clone();
        if snap.public.body.is_empty() {
            return Ok(crate::public::render(&snap));
        }
        Ok(snap.public.clone())
    }

    /// A pre-queue ticket's rank in the permutation, from the seed this instance already holds
    /// (no backend or database call); `None` for a FIFO ticket or an event not seen yet.
    /// Compared with the snapshot's pre-queue frontier it tells whether the turn has come.
    pub fn pre_rank(&self, claims: &QueueClaims) -> Option<f64> {
        if !claims.pre_queue {
            return None;
        }
        let handle = self.lookup(&claims.event)?;
        let control = lock(&handle.control).clone()?;
        Some(fairness::pre_score(&control.seed, &claims.ticket_id))
    }

    /// Whether the queue backend answers (always, in memory): for readiness, asked by one
    /// background probe, never per request.
    pub async fn ping_backend(&self) -> Result<(), AdmissionError> {
        match &self.inner.backend {
            Backend::Memory(_) => Ok(()),
            Backend::Redis(redis) => Ok(redis.ping().await?),
        }
    }

    /// Checks a queue token for `event`. `None` or empty → `TokenMissing`.
    pub fn verify_queue_token(
        &self,
        event: &str,
        token: Option<&str>,
    ) -> Result<QueueClaims, AdmissionError> {
        let token = token.ok_or(AdmissionError::TokenMissing)?;
        self.inner.cfg.keys.verify_queue(token, event, self.now())
    }

    /// Checks an admission token for `event`; a queue token here is `NotAdmitted`.
    pub fn verify_admission_token(
        &self,
        event: &str,
        token: Option<&str>,
    ) -> Result<AdmissionClaims, AdmissionError> {
        let token = token.ok_or(AdmissionError::TokenMissing)?;
        self.inner
            .cfg
            .keys
            .verify_admission(token, Some(event), self.now())
    }

    /// Checks an admission token of whatever event it names (routes like `/api/holds/{hold}`
    /// name no event; the caller then checks the hold belongs to the token's session).
    pub fn verify_admission_token_any_event(
        &self,
        token: Option<&str>,
    ) -> Result<AdmissionClaims, AdmissionError> {
        let token = token.ok_or(AdmissionError::TokenMissing)?;
        self.inner
            .cfg
            .keys
            .verify_admission(token, None, self.now())
    }

    /// The seed commitment, and the seed once the queue has opened by the clock that judges
    /// pre-queue membership (the backend's, as the last tick read it), never this process's:
    /// revealed a moment early, the seed would let a late joiner see the order it joins.
    pub async fn fairness(&self, event: &str) -> Result<Fairness, AdmissionError> {
        let (handle, c) = self.known(event).await?;
        let opened = handle.feed.borrow().opened;
        Ok(Fairness {
            seed_commitment: fairness::seed_commitment(&c.seed),
            seed: opened.then(|| c.seed.clone()),
        })
    }
}
