//! The in-process queue (embedded default, one gateway only): the same steps as the Redis
//! scripts, each under one event's mutex; governor's GCRA meters the outflow.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::num::NonZeroU32;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use governor::state::{InMemoryState, NotKeyed};
use governor::{Quota, RateLimiter, middleware::NoOpMiddleware};

use super::{
    BackendError, CLAIM_SETTLE_MS, CLAIM_SLOT_MS, ClaimStart, JoinArgs, JoinOutcome,
    PASS_THROUGH_BATCH, RecoverArgs, TickArgs, TickOutcome, TicketArgs, TicketState,
    next_is_priority, tolerance_ms,
};
use crate::clock::{Clock, UnixMs};
use crate::entry::PRIORITY_BASE;

type Meter = RateLimiter<NotKeyed, InMemoryState, Clock, NoOpMiddleware<std::time::Instant>>;

/// Orders like the Redis sorted set: non-negative doubles compare as their bit patterns.
type ZKey = (u64, u64);

struct EventQueue {
    seq: u64,
    /// The priority lane: places handed out, and those waiting (pre-queue ranks, then place
    /// numbers), and the carry that splits offers between the lanes.
    pseq: u64,
    pz: BTreeSet<ZKey>,
    carry: u32,
    cursor: Option<u64>,
    z: BTreeSet<ZKey>,
    /// seq → offer expiry, and the same ordered by expiry for lapsing.
    offers: HashMap<u64, UnixMs>,
    offers_by_expiry: BTreeSet<(UnixMs, u64)>,
    pending: HashMap<u64, UnixMs>,
    claimed: HashSet<u64>,
    keys: HashMap<String, (u64, bool)>,
    served: u64,
    lapsed: u64,
    /// The pre-queue rank of the last pre-queue ticket offered.
    pq_through: Option<f64>,
    /// The highest score the priority lane has offered.
    p_through: Option<f64>,
    /// Rate given back by lapsed offers (at most one second's worth).
    credit: u64,
    meter: Option<(u32, Meter)>,
}

impl Default for EventQueue {
    fn default() -> Self {
        EventQueue {
            seq: 0,
            pseq: 0,
            pz: BTreeSet::new(),
            carry: super::CARRY_START,
            cursor: None,
            z: BTreeSet::new(),
            offers: HashMap::new(),
            offers_by_expiry: BTreeSet::new(),
            pending: HashMap::new(),
            claimed: HashSet::new(),
            keys: HashMap::new(),
            served: 0,
            lapsed: 0,
            pq_through: None,
            p_through: None,
            credit: 0,
            meter: None,
        }
    }
}

pub(crate) struct MemoryQueue {
    clock: Clock,
    epoch: String,
    events: Mutex<HashMap<String, Arc<Mutex<EventQueue>>>>,
}

impl MemoryQueue {
    pub(crate) fn new(clock: Clock) -> Self {
        MemoryQueue {
            clock,
            epoch: uuid::Uuid::new_v4().simple().to_string(),
            events: Mutex::new(HashMap::new()),
        }
    }

    fn event(&self, event: &str) -> Arc<Mutex<EventQueue>> {
        let mut map = self.events.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(q) = map.get(event) {
            return q.clone();
        }
        map.entry(event.to_owned()).or_default().clone()
    }

    fn with<T>(&self, event: &str, f: impl FnOnce(&mut EventQueue) -> T) -> T {
        let q = self.event(event);
        let mut q = q.lock().unwrap_or_else(|p| p.into_inner());
        f(&mut q)
    }

    fn now(&self, now: Option<UnixMs>) -> UnixMs {
        now.unwrap_or_else(|| self.clock.now_ms())
    }

    pub(crate) async fn join(
        &self,
        event: &str,
        args: JoinArgs<'_>,
        now: Option<UnixMs>,
    ) -> Result<JoinOutcome, BackendError> {
        let now = self.now(now);
        let ep = self.epoch.clone();
        Ok(self.with(event, |q| {
            if let Some(&(seq, pre)) = args.key.and_then(|k| q.keys.get(k)) {
                return JoinOutcome {
                    seq,
                    pre,
                    ep,
                    now,
                    p: false,
                };
            }
            let pre = now < args.opens_at_ms;
            if args.priority {
                q.pseq += 1;
                let seq = PRIORITY_BASE + q.pseq;
                let score = if pre { args.pre_score } else { seq as f64 };
                q.pz.insert((score.to_bits(), seq));
                if let Some(k) = args.key {
                    q.keys.insert(k.to_owned(), (seq, pre));
                }
                return JoinOutcome {
                    seq,
                    pre,
                    ep,
                    now,
                    p: false,
                };
            }
            if !pre && q.cursor.is_none() {
                // The first arrival after opening: FIFO places start after the pre-queue's.
                q.cursor = Some(q.seq);
            }
            q.seq += 1;
            let seq = q.seq;
            if pre {
                q.z.insert((args.pre_score.to_bits(), seq));
            }
            if let Some(k) = args.key {
                q.keys.insert(k.to_owned(), (seq, pre));
            }
            JoinOutcome {
                seq,
                pre,
                ep,
                now,
                p: false,
            }
        }))
    }

    pub(crate) async fn has_key(&self, event: &str, key: &str) -> Result<bool, BackendError> {
        Ok(self.with(event, |q| q.keys.contains_key(key)))
    }

    pub(crate) async fn ticket(
        &self,
        event: &str,
        args: TicketArgs<'_>,
        now: Option<UnixMs>,
    ) -> Result<(TicketState, UnixMs), BackendError> {
        let now = self.now(now);
        let state = self.with(event, |q| {
            let score = if args.pre {
                args.score
            } else {
                args.seq as f64
            };
            if args.seq >= PRIORITY_BASE {
                let score = if args.pre {
                    args.score
                } else {
                    args.seq as f64
                };
                let key = (score.to_bits(), args.seq);
                if q.pz.contains(&key) {
                    return TicketState::Waiting {
                        ahead: q.pz.range(..key).count() as u64,
                    };
                }
            }
            let key = (score.to_bits(), args.seq);
            if q.z.contains(&key) {
                return TicketState::Waiting {
                    ahead: q.z.range(..key).count() as u64,
                };
            }
            if !args.pre && args.seq < PRIORITY_BASE {
                let cursor = q.cursor.unwrap_or(0);
                if args.seq > cursor {
                    return TicketState::Waiting {
                        ahead: q.z.len() as u64 + args.seq - cursor - 1,
                    };
                }
            }
            match q.offers.get(&args.seq) {
                Some(&expires_ms) if expires_ms > now => TicketState::Offered { expires_ms },
                _ if q.claimed.contains(&args.seq) || q.pending.contains_key(&args.seq) => {
                    TicketState::Claimed
                }
                _ => TicketState::Lapsed,
            }
        });
        Ok((state, now))
    }

    pub(crate) async fn claim_start(
        &self,
        event: &str,
        seq: u64,
        now: Option<UnixMs>,
    ) -> Result<ClaimStart, BackendError> {
        let now = self.now(now);
        Ok(self.with(event, |q| match q.offers.get(&seq).copied() {
            Some(exp) if exp > now => {
                q.offers.remove(&seq);
                q.offers_by_expiry.remove(&(exp, seq));
                q.pending.insert(seq, now + CLAIM_SLOT_MS);
                ClaimStart::Moved
            }
            _ if q.claimed.contains(&seq) || q.pending.contains_key(&seq) => ClaimStart::Claimed,
            _ => ClaimStart::NotOffered,
        }))
    }

    pub(crate) async fn claim_done(
        &self,
        event: &str,
        seq: u64,
        now: Option<UnixMs>,
    ) -> Result<(), BackendError> {
        let now = self.now(now);
        self.with(event, |q| {
            q.claimed.insert(seq);
            if let Some(until) = q.pending.get_mut(&seq) {
                *until = now + CLAIM_SETTLE_MS;
            }
        });
        Ok(())
    }

    pub(crate) async fn tick(
        &self,
        event: &str,
        args: TickArgs,
        now: Option<UnixMs>,
    ) -> Result<TickOutcome, BackendError> {
        let now = self.now(now);
        let clock = self.clock.clone();
        let ep = self.epoch.clone();
        Ok(self.with(event, |q| {
            let opened = now >= args.opens_at_ms;
            if opened && q.cursor.is_none() {
                q.cursor = Some(q.seq);
            }
            // Lapse offers whose time ran out: their slots return to the meter.
            while let Some(&(exp, seq)) = q.offers_by_expiry.first() {
                if exp > now {
                    break;
                }
                q.offers_by_expiry.pop_first();
                q.offers.remove(&seq);
                q.lapsed += 1;
                // A lapsed offer gives its place in the rate back, so no-shows do not slow
                // the flow of buyers who do claim.
                let cap = u64::from(args.rate_per_min.div_ceil(60).max(1));
                q.credit = (q.credit + 1).min(cap);
            }
            q.pending.retain(|_, until| *until > now);
            let mut offered = Vec::new();
            let open = (q.offers.len() + q.pending.len()) as u64;
            let cursor = q.cursor.unwrap_or(0);
            let avail = q.z.len() as u64 + q.seq - cursor + q.pz.len() as u64;
            let slots = u64::from(args.max_active).saturating_sub(args.active + open);
            let pass = args.pass_through;
            if opened && !args.hold && avail > 0 && (pass || (args.rate_per_min > 0 && slots > 0)) {
                // Pass-through: no pace and no cap here (the database judges it at claim).
                let meter = (!pass).then(|| meter_for(&mut q.meter, args.rate_per_min, &clock));
                let mut budget = if pass {
                    avail.min(PASS_THROUGH_BATCH)
                } else {
                    slots.min(avail)
                };
                let expires = now + args.offer_ms;
                let mut credit = q.credit;
                while budget > 0
                    && (meter.is_none_or(|m| m.check().is_ok())
                        || credit.checked_sub(1).map(|c| credit = c).is_some())
                {
                    budget -= 1;
                    let general = q.z.len() as u64 + q.seq - q.cursor.unwrap_or(0);
                    let priority = next_is_priority(
                        &mut q.carry,
                        args.priority_permille,
                        !q.pz.is_empty(),
                        general > 0,
                    );
                    let seq = if priority {
                        match q.pz.pop_first() {
                            Some((bits, seq)) => {
                                q.p_through = Some(f64::from_bits(bits));
                                seq
                            }
                            None => break,
                        }
                    } else {
                        match q.z.pop_first() {
                            Some((bits, seq)) => {
                                // Pre-queue ranks lie in [0, 1); returned places score their seq.
                                let rank = f64::from_bits(bits);
                                if rank < 1.0 {
                                    q.pq_through = Some(rank);
                                }
                                seq
                            }
                            None => {
                                let next = q.cursor.unwrap_or(0) + 1;
                                q.cursor = Some(next);
                                next
                            }
                        }
                    };
                    q.offers.insert(seq, expires);
                    q.offers_by_expiry.insert((expires, seq));
                    offered.push(seq);
                }
                q.served += offered.len() as u64;
                q.credit = credit;
            }
            TickOutcome {
                served: q.served,
                cursor: q.cursor.unwrap_or(0),
                ahead: q.z.len() as u64,
                seq: q.seq,
                // Claims in flight are (or are about to be) active sessions.
                open_offers: q.offers.len() as u64,
                claiming: q.pending.len() as u64,
                lapsed: q.lapsed,
                epoch: ep,
                now: clock.now_ms().max(now),
                pq_through: q.pq_through,
                p_through: q.p_through,
                offered,
                pseq: q.pseq,
                pahead: q.pz.len() as u64,
            }
        }))
    }

    /// Process memory is never lost while the process lives.
    pub(crate) async fn recover(
        &self,
        _event: &str,
        _args: RecoverArgs<'_>,
        _now: Option<UnixMs>,
    ) -> Result<bool, BackendError> {
        Ok(false)
    }
}

/// The event's governor meter, rebuilt when the rate changes (a live change is obeyed on the
/// next tick; a fresh bucket holds only the quarter-second burst, so a change cannot flood).
fn meter_for<'q>(slot: &'q mut Option<(u32, Meter)>, rate: u32, clock: &Clock) -> &'q Meter {
    if slot.as_ref().is_none_or(|(r, _)| *r != rate) {
        let interval = Duration::from_secs_f64(60.0 / f64::from(rate));
        let burst = (tolerance_ms(rate) as f64 / (60_000.0 / f64::from(rate))) as u32 + 1;
        let quota = Quota::with_period(interval)
            .expect("rate > 0 gives a non-zero period")
            .allow_burst(NonZeroU32::new(burst).unwrap_or(NonZeroU32::MIN));
        let meter = RateLimiter::direct_with_clock(quota, clock.clone());
        if slot.is_some() {
            // A changed rate starts from an empty bucket, as the Redis GCRA keeps its tat.
            let _ = meter.check_n(NonZeroU32::new(burst).unwrap_or(NonZeroU32::MIN));
        }
        *slot = Some((rate, meter));
    }
    &slot.as_ref().expect("set just above").1
}
