//! Where the queue lives: in this process, or in Redis shared by every gateway instance.
//! Both keep the same state per event and take the same steps, each step atomic:
//!
//! - a join counter (`seq`): a FIFO arrival's place is its sequence number, so the FIFO queue
//!   is the range `(cursor, seq]` and costs nothing per buyer;
//! - a sorted set `z` ahead of that range: pre-queue tickets scored by their seeded rank, and
//!   tokens that came back after a Redis loss, scored by their old place;
//! - open offers with their expiry, claims in flight, claimed tickets;
//! - the served counter, the lapsed counter and the meter's GCRA state;
//! - the priority lane: its own counter (places numbered from `PRIORITY_BASE`) and one sorted
//!   set (pre-queue ranks in [0, 1), then place numbers: shuffled, then FIFO), and the carry
//!   that splits each tick's offers between the lanes by the organizer's share;
//! - the served frontier of the pre-queue (the rank of the last pre-queue ticket offered) and,
//!   after a loss, the frontiers restored from the checkpoint.

pub(crate) mod memory;
pub(crate) mod redis;

use crate::clock::UnixMs;

#[derive(Debug, thiserror::Error)]
pub(crate) enum BackendError {
    /// The epoch key is gone: Redis restarted empty. Recover, then retry.
    #[error("queue state lost")]
    Lost,
    #[error(transparent)]
    Redis(#[from] ::redis::RedisError),
    #[error("unexpected script reply: {0}")]
    Reply(String),
}

impl From<BackendError> for crate::error::StorageError {
    fn from(e: BackendError) -> Self {
        match e {
            BackendError::Redis(r) => crate::error::StorageError::Redis(r),
            other => crate::error::StorageError::Reply(other.to_string()),
        }
    }
}

impl From<BackendError> for crate::error::AdmissionError {
    fn from(e: BackendError) -> Self {
        crate::error::AdmissionError::Storage(e.into())
    }
}

pub(crate) struct JoinArgs<'a> {
    /// Idempotency key the join is remembered under; `None` for an anonymous join.
    pub key: Option<&'a str>,
    pub pre_score: f64,
    pub opens_at_ms: UnixMs,
    /// Into the priority lane.
    pub priority: bool,
}

#[derive(Debug, serde::Deserialize)]
pub(crate) struct JoinOutcome {
    pub seq: u64,
    pub pre: bool,
    pub ep: String,
    pub now: UnixMs,
    /// A priority place: `seq` counts that lane (the caller adds `PRIORITY_BASE`).
    #[serde(default)]
    pub p: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TicketState {
    Waiting {
        ahead: u64,
    },
    Offered {
        expires_ms: UnixMs,
    },
    Claimed,
    Lapsed,
    /// A ticket from before a loss, behind the frontiers saved then: offered before it, unless
    /// its page slept through an earlier loss. The database's log of offers decides, and the
    /// ticket is asked again with `never_offered` when it holds none.
    Behind,
}

pub(crate) struct TicketArgs<'a> {
    pub seq: u64,
    pub pre: bool,
    pub score: f64,
    pub epoch: &'a str,
    /// The database's log of offers holds none for this place: it comes back though behind
    /// the saved frontiers.
    pub never_offered: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ClaimStart {
    /// Was offered: now a claim in flight, counted against the cap until the session exists.
    Moved,
    /// Claimed before: the database holds its session.
    Claimed,
    NotOffered,
}

pub(crate) struct TickArgs {
    pub opens_at_ms: UnixMs,
    pub rate_per_min: u32,
    pub max_active: u32,
    pub active: u64,
    pub offer_ms: i64,
    /// Paused, closed or sold out: lapse offers but make none.
    pub hold: bool,
    /// The priority lane's share of offers, in thousandths.
    pub priority_permille: u32,
    /// Offer everyone waiting (up to `PASS_THROUGH_BATCH` a tick), with no pace and no cap:
    /// the database judges the cap when an offer is claimed.
    pub pass_through: bool,
}

/// Offers one pass-through tick makes at most: ten ticks a second empty a line of 100,000 in
/// a second, and one script never runs long enough to stall Redis for everyone else.
pub(crate) const PASS_THROUGH_BATCH: u64 = 10_000;

#[derive(Debug, Clone, Default)]
pub(crate) struct TickOutcome {
    /// Join sequences offered by this tick, in queue order.
    pub offered: Vec<u64>,
    pub served: u64,
    pub cursor: u64,
    pub ahead: u64,
    pub seq: u64,
    /// Offers not yet claimed (claims in flight are not counted here).
    pub open_offers: u64,
    /// Claims in flight, and claims whose session is so new a tick may not have counted it:
    /// each keeps its place of the cap until then.
    pub claiming: u64,
    pub lapsed: u64,
    pub epoch: String,
    pub now: UnixMs,
    /// The pre-queue rank of the last pre-queue ticket offered; `None` before any.
    pub pq_through: Option<f64>,
    /// Places the priority lane has handed out, and those still waiting in it.
    pub pseq: u64,
    pub pahead: u64,
    /// The highest score the priority lane has offered (a pre-queue rank, or a place from
    /// `PRIORITY_BASE`); `None` before any.
    pub p_through: Option<f64>,
}

pub(crate) struct RecoverArgs<'a> {
    pub epoch: &'a str,
    pub seq_floor: u64,
    pub served_floor: u64,
    /// Offers wait this long after the loss so returning tokens re-register first.
    pub grace_ms: i64,
    pub opens_at_ms: UnixMs,
    /// The served frontiers saved before the loss: a ticket behind them does not come back.
    pub fifo_floor: u64,
    pub pq_floor: Option<f64>,
    pub p_floor: Option<f64>,
}

/// How long a claim in flight keeps its slot: covers a tick that read the active-session count
/// just before the session was inserted, so the cap holds without a lock across the database.
pub(crate) const CLAIM_SLOT_MS: i64 = 3_000;

/// Once the session is in the database, its claim stays counted this much longer: long enough
/// for any tick that read the active count before the insert to finish.
pub(crate) const CLAIM_SETTLE_MS: i64 = 1_000;

/// GCRA burst tolerance: a quarter second of the rate, so a 100 ms tick never lags behind it.
pub(crate) fn tolerance_ms(rate_per_min: u32) -> i64 {
    let interval = 60_000.0 / f64::from(rate_per_min.max(1));
    (250.0f64).max(interval) as i64
}

/// The lane of the next offer. `carry` (thousandths) grows by the share with every offer and
/// pays 1000 for a priority one, so with both lanes waiting the priority lane gets its share
/// exactly; it is capped at one offer ahead, so an idle priority lane banks no burst. A lane
/// with nobody waiting gives its turn to the other. It starts full: priority is offered first.
pub(crate) fn next_is_priority(
    carry: &mut u32,
    permille: u32,
    priority_waiting: bool,
    general_waiting: bool,
) -> bool {
    *carry = (*carry + permille).min(1000 + permille);
    if priority_waiting && (!general_waiting || (permille > 0 && *carry >= 1000)) {
        *carry = carry.saturating_sub(1000);
        return true;
    }
    false
}

/// The carry a lane split starts with (see `next_is_priority`).
pub(crate) const CARRY_START: u32 = 1000;

pub(crate) enum Backend {
    Memory(memory::MemoryQueue),
    Redis(Box<redis::RedisQueue>),
}

macro_rules! dispatch {
    ($self:ident . $m:ident ( $($a:expr),* )) => {
        match $self {
            Backend::Memory(b) => b.$m($($a),*).await,
            Backend::Redis(b) => b.$m($($a),*).await,
        }
    };
}

impl Backend {
    pub(crate) async fn join(
        &self,
        event: &str,
        args: JoinArgs<'_>,
        now: Option<UnixMs>,
    ) -> Result<JoinOutcome, BackendError> {
        dispatch!(self.join(event, args, now))
    }

    /// Whether a keyed join already holds a place (no change either way).
    pub(crate) async fn has_key(&self, event: &str, key: &str) -> Result<bool, BackendError> {
        dispatch!(self.has_key(event, key))
    }

    pub(crate) async fn ticket(
        &self,
        event: &str,
        args: TicketArgs<'_>,
        now: Option<UnixMs>,
    ) -> Result<(TicketState, UnixMs), BackendError> {
        dispatch!(self.ticket(event, args, now))
    }

    pub(crate) async fn claim_start(
        &self,
        event: &str,
        seq: u64,
        now: Option<UnixMs>,
    ) -> Result<ClaimStart, BackendError> {
        dispatch!(self.claim_start(event, seq, now))
    }

    pub(crate) async fn claim_done(
        &self,
        event: &str,
        seq: u64,
        now: Option<UnixMs>,
    ) -> Result<(), BackendError> {
        dispatch!(self.claim_done(event, seq, now))
    }

    pub(crate) async fn tick(
        &self,
        event: &str,
        args: TickArgs,
        now: Option<UnixMs>,
    ) -> Result<TickOutcome, BackendError> {
        dispatch!(self.tick(event, args, now))
    }

    pub(crate) async fn recover(
        &self,
        event: &str,
        args: RecoverArgs<'_>,
        now: Option<UnixMs>,
    ) -> Result<bool, BackendError> {
        dispatch!(self.recover(event, args, now))
    }
}

#[cfg(test)]
mod tests {
    use super::next_is_priority;

    /// With both lanes waiting, the priority lane gets its share exactly (after its first
    /// offer); with one lane empty the other takes every offer; a share of 0 gives none.
    #[test]
    fn the_split_follows_the_share() {
        for permille in [0, 100, 300, 500, 1000] {
            let mut carry = super::CARRY_START;
            let priority = (0..10_000)
                .filter(|_| next_is_priority(&mut carry, permille, true, true))
                .count() as i64;
            let expected = i64::from(permille) * 10;
            assert!((priority - expected).abs() <= 1, "{permille}: {priority}");
        }
        let mut carry = 0;
        assert!(next_is_priority(&mut carry, 0, true, false));
        assert!(!next_is_priority(&mut carry, 1000, false, true));
    }
}
