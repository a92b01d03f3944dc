//! The public queue snapshot (`GET …/queue/snapshot`): the same for every buyer, so it is
//! serialized once when a tick is published and every poll (or a CDN in front) answers with a
//! copy of these bytes and their ETag. With its signed token a page computes its own place,
//! wait range and chance of a seat from it.

use bytes::Bytes;
use serde::Serialize;
use sha2::{Digest, Sha256};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

use crate::chance::SeatModel;
use crate::modes::{Mode, QueueMessage};
use crate::snapshot::{EventState, Snapshot};
use crate::wait::CapModel;

/// The bytes of the public JSON and their strong ETag (quoted). Equal to any other `Public`:
/// the bytes follow from the snapshot's other fields, which decide equality.
#[derive(Clone, Debug, Default)]
pub struct Public {
    pub body: Bytes,
    pub etag: String,
}

impl PartialEq for Public {
    fn eq(&self, _: &Public) -> bool {
        true
    }
}

/// The body, field by field (API.md "queue snapshot"; names may grow, never change).
#[derive(Serialize)]
struct Body<'a> {
    event: &'a str,
    state: EventState,
    /// `opens_at` has passed by the queue's clock: the pre-queue order is drawn.
    opened: bool,
    /// When the queue opens: a pre-queue page counts down to it.
    opens_at: String,
    at: String,
    /// The queue epoch: a token of another epoch asks `…/queue/status` once to re-register.
    epoch: &'a str,
    /// The highest FIFO join sequence offered: a FIFO token with `seq` has
    /// `prequeue_left + seq − fifo_served_through − 1` buyers ahead.
    fifo_served_through: u64,
    /// The pre-queue score of the last pre-queue ticket offered (`null` before any): a
    /// pre-queue token with a higher score has about `prequeue_left · (score − this) ÷ (1 −
    /// this)` ahead.
    prequeue_served_through: Option<f64>,
    /// Still queued ahead of every FIFO arrival (the pre-queue not yet offered).
    prequeue_left: u64,
    waiting: u64,
    served: u64,
    outflow_per_min: Option<f64>,
    /// The outflow's relative variation over the last minute.
    outflow_spread: Option<f64>,
    rate_per_min: u32,
    seats_left: u64,
    seats_held: u64,
    seats_per_buyer: f64,
    /// `chance(p)` for `p` ahead (`chance` module docs).
    seat_model: Option<SeatModel>,
    retry_after_s: u64,
    /// The longest a waiting page goes between reads (a page near the front reads sooner).
    read_within_s: u64,
    /// Before the opening: a pre-queue page reads a second past it plus its own share of this
    /// many seconds, so the pre-queue does not wake in one second (`opening`).
    opening_spread_s: u64,
    /// `normal`, `pass_through` or `maintenance` (offers pause: `state` says `paused`).
    mode: Mode,
    /// The organizer's message, shown as plain text: `{text, level}` or `null`.
    message: Option<&'a QueueMessage>,
    /// The pre-queue draw's seed once opened (`null` before): a pre-queue token's score is
    /// HMAC-SHA256(seed, ticket id), as `…/fairness` proves.
    seed: Option<&'a str>,
    /// What the wait is computed from: `{size, free, offer_rate_per_min, held_s, held_spread}`
    /// (`wait` module docs).
    cap: Option<&'a CapModel>,
}

/// How soon a page should read the snapshot again (its own place may ask it less often).
pub(crate) const fn retry_after_s(state: EventState) -> u64 {
    match state {
        EventState::Open => 2,
        EventState::Paused => 5,
        EventState::PreQueue | EventState::SoldOut => 10,
        EventState::Closed => 60,
    }
}

/// Serializes `snapshot` for every poller.
pub(crate) fn render(snapshot: &Snapshot) -> Public {
    let rfc3339 = |ms: i64| {
        OffsetDateTime::from_unix_timestamp_nanos(i128::from(ms) * 1_000_000)
            .ok()
            .and_then(|t| t.format(&Rfc3339).ok())
            .unwrap_or_default()
    };
    let at = rfc3339(snapshot.at_ms);
    let body = Body {
        event: &snapshot.event,
        state: snapshot.state,
        opened: snapshot.opened,
        opens_at: rfc3339(snapshot.opens_at_ms),
        at,
        epoch: &snapshot.epoch,
        fifo_served_through: snapshot.cursor,
        prequeue_served_through: snapshot.prequeue_served_through,
        prequeue_left: snapshot.ahead_of_fifo,
        waiting: snapshot.waiting,
        served: snapshot.served,
        outflow_per_min: snapshot.outflow_per_min.map(|f| (f * 10.0).round() / 10.0),
        outflow_spread: snapshot
            .outflow_per_min
            .and(snapshot.outflow_spread)
            .map(|s| (s * 1000.0).round() / 1000.0),
        rate_per_min: snapshot.rate_per_min,
        seats_left: snapshot.seats_left,
        seats_held: snapshot.seats_held,
        seats_per_buyer: snapshot.seats_per_buyer,
        seat_model: snapshot.seat_model,
        retry_after_s: retry_after_s(snapshot.state),
        read_within_s: snapshot.read_within_s,
        opening_spread_s: snapshot.opening_spread_s,
        mode: snapshot.mode,
        message: snapshot.message.as_ref(),
        seed: snapshot.seed.as_deref(),
        cap: snapshot.cap.as_ref(),
    };
    // Serializing plain numbers and strings cannot fail; an empty body would be answered as
    // "no tick yet" rather than panic.
    let body = serde_json::to_vec(&body).unwrap_or_default();
    let digest = Sha256::digest(&body);
    Public {
        etag: format!("\"{}\"", hex::encode(&digest[..12])),
        body: Bytes::from(body),
    }
}
