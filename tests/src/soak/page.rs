//! What a waiting page works out from the public queue snapshot and its own queue token, as
//! `static/queue-snapshot.js` does: its place, wait range, chance of a seat and when to read
//! again. The soak's polling buyers wait this way, so the load they put on the front is the
//! pages' load (one cacheable read each, the per-token status only when the turn may have come).

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde::Deserialize;
use time::format_description::well_known::Rfc3339;

/// The queue token's claims a page reads (the payload is readable; the server checks it).
pub struct Claims {
    pub seq: u64,
    pub pre: bool,
    pub epoch: String,
    pub ticket: String,
}

#[derive(Deserialize)]
struct RawClaims {
    seq: u64,
    #[serde(default)]
    pre: bool,
    ep: String,
    tid: String,
}

impl Claims {
    pub fn of(token: &str) -> Option<Claims> {
        let payload = token.split('.').nth(1)?;
        let bytes = URL_SAFE_NO_PAD.decode(payload.trim_end_matches('=')).ok()?;
        let raw: RawClaims = serde_json::from_slice(&bytes).ok()?;
        Some(Claims {
            seq: raw.seq,
            pre: raw.pre,
            epoch: raw.ep,
            ticket: raw.tid,
        })
    }
}

/// The snapshot's fields a page uses (API.md "queue snapshot").
#[derive(Deserialize)]
pub struct Snapshot {
    pub state: String,
    #[serde(default)]
    pub opened: bool,
    #[serde(default)]
    pub epoch: String,
    #[serde(default)]
    pub fifo_served_through: u64,
    pub prequeue_served_through: Option<f64>,
    #[serde(default)]
    pub prequeue_left: u64,
    /// Offers made so far.
    #[serde(default)]
    pub served: u64,
    pub outflow_per_min: Option<f64>,
    #[serde(default)]
    pub rate_per_min: u64,
    /// The server's own model: `stated(p)` is the formula the page mirrors.
    pub seat_model: Option<admission::SeatModel>,
    #[serde(default)]
    pub retry_after_s: u64,
    pub read_within_s: Option<u64>,
    /// Before the opening: the seconds the pre-queue's first reads after it are spread over.
    #[serde(default)]
    pub opening_spread_s: u64,
    /// When the queue opens (RFC 3339).
    #[serde(default)]
    pub opens_at: String,
    /// The pre-queue draw's seed, once opened.
    pub seed: Option<String>,
    /// What the wait is computed from: the server's model, as the page reads it.
    pub cap: Option<admission::CapModel>,
}

/// What the snapshot told the page; `None` from `read` when only the server can say.
pub enum Update {
    Waiting {
        position: u64,
        /// Point, low and high seconds.
        wait: Option<(u64, u64, u64)>,
        chance: Option<f64>,
    },
    Paused {
        position: u64,
    },
    PreQueue,
    SoldOut,
    Closed,
}

/// Buyers ahead, or `None` when the snapshot cannot tell (`placeFromSnapshot`).
fn place(snap: &Snapshot, claims: &Claims, score: Option<f64>) -> Option<u64> {
    // The frontiers are the general lane's: a priority place asks the server.
    if !snap.opened || snap.epoch != claims.epoch || claims.seq >= admission::PRIORITY_BASE {
        return None;
    }
    let left = snap.prequeue_left;
    if !claims.pre {
        let served = snap.fifo_served_through;
        return (claims.seq > served).then(|| left + claims.seq - served - 1);
    }
    let score = score?;
    let frontier = snap.prequeue_served_through.unwrap_or(0.0);
    if score <= frontier || left == 0 {
        return None;
    }
    Some((left as f64 * (score - frontier) / (1.0 - frontier)).floor() as u64)
}

/// (point, low, high) seconds for `position` ahead: the server's formula, as `waitEstimate`.
fn wait_estimate(snap: &Snapshot, position: u64) -> Option<(u64, u64, u64)> {
    admission::wait_estimate(position, snap.cap.as_ref()?)
}

fn seat_chance(snap: &Snapshot, position: u64) -> Option<f64> {
    snap.seat_model.and_then(|m| m.stated(position))
}

/// What the snapshot tells this buyer, or `None` when the page asks `…/queue/status` once
/// (`updateFromSnapshot`).
pub fn read(snap: &Snapshot, claims: &Claims, score: Option<f64>) -> Option<Update> {
    if snap.state == "closed" {
        return Some(Update::Closed);
    }
    if !snap.opened {
        return claims.pre.then_some(Update::PreQueue);
    }
    let position = place(snap, claims, score)?;
    // Near the front the page asks the server, which knows of its offer to the second.
    let per_poll = snap.outflow_per_min.unwrap_or(0.0) / 60.0 * 4.0;
    if (position as f64) < per_poll.max(3.0) {
        return None;
    }
    match snap.state.as_str() {
        "sold_out" => Some(Update::SoldOut),
        "paused" => Some(Update::Paused { position }),
        _ => Some(Update::Waiting {
            position,
            wait: wait_estimate(snap, position),
            chance: seat_chance(snap, position),
        }),
    }
}

/// How soon a turn counts as near: within this many seconds, the soak sends the buyer's reads
/// from the pool kept for turns, so a read waiting behind the far-back crowd's cannot let an
/// offer lapse unseen.
const NEAR_FRONT_S: u64 = 60;

/// Whether this buyer's turn may come within `NEAR_FRONT_S`: by the low end of its wait, or,
/// before the wait is known, by a minute at the rate the organizer set.
pub fn near_front(snap: &Snapshot, update: &Update) -> bool {
    let Update::Waiting { position, wait, .. } = update else {
        return false;
    };
    match wait {
        Some((_, low, _)) => *low <= NEAR_FRONT_S,
        None => *position < snap.rate_per_min.max(1),
    }
}

/// Seconds until the next read (`nextReadS`): the snapshot's own, longer far back, never past
/// its `read_within_s` nor half the soonest the offer may come (the range's low end, or the
/// place at the offer rate while the wait is not known); paused, the same spacing by place;
/// before the opening, a second past it by the server's clock (`now_ms`, UNIX ms; the soak
/// shares the machine's clock) plus the page's `opening_share` of the opening's spread, as the
/// server tells it.
pub fn next_read_s(snap: &Snapshot, update: &Update, now_ms: u64, opening_share: f64) -> u64 {
    let floor = if snap.retry_after_s > 0 {
        snap.retry_after_s
    } else {
        5
    };
    if snap.state == "pre_queue" {
        let Ok(opens) = time::OffsetDateTime::parse(&snap.opens_at, &Rfc3339) else {
            return floor;
        };
        let opens_ms = i64::try_from(opens.unix_timestamp_nanos() / 1_000_000).unwrap_or(0);
        let now_ms = i64::try_from(now_ms).unwrap_or(i64::MAX);
        return admission::pre_queue_read_s(opens_ms, now_ms, snap.opening_spread_s, opening_share)
            .min(floor);
    }
    let within = snap.read_within_s.unwrap_or(120);
    let (position, soonest) = match update {
        // Offers resume at the rate set: never asleep past half the soonest they reach it.
        Update::Paused { position } if snap.state == "paused" => {
            let rate = u32::try_from(snap.rate_per_min).unwrap_or(u32::MAX);
            (*position, admission::soonest_at_rate_s(*position, rate))
        }
        // The update already carries the range read from this snapshot.
        Update::Waiting { position, wait, .. } if snap.state == "open" => (
            *position,
            match wait {
                Some((_, low, _)) => Some(*low),
                None => snap
                    .cap
                    .as_ref()
                    .and_then(|cap| admission::soonest_offer_s(*position, cap)),
            },
        ),
        _ => return floor,
    };
    floor.max(admission::read_by_place_s(Some(position), soonest, within))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn snap(json: serde_json::Value) -> Snapshot {
        serde_json::from_value(json).expect("snapshot")
    }

    /// The cap with every place free: the rate alone decides the wait.
    fn rate_bound(per_min: u32) -> serde_json::Value {
        serde_json::json!({
            "size": 1_000_000, "free": 1_000_000, "offer_rate_per_min": per_min,
            "held_s": null, "held_spread": null,
        })
    }

    fn fifo(seq: u64) -> Claims {
        Claims {
            seq,
            pre: false,
            epoch: "e1".into(),
            ticket: "t".into(),
        }
    }

    #[test]
    fn a_far_back_fifo_buyer_reads_its_place_and_range_from_the_snapshot() {
        let s = snap(serde_json::json!({
            "state": "open", "opened": true, "epoch": "e1", "fifo_served_through": 100,
            "prequeue_left": 50, "outflow_per_min": 600.0, "retry_after_s": 2,
            "read_within_s": 49, "cap": rate_bound(600),
        }));
        let Some(Update::Waiting { position, wait, .. }) = read(&s, &fifo(1101), None) else {
            panic!("a far-back buyer is told by the snapshot");
        };
        assert_eq!(position, 1050);
        // 1,051 offers at 10 a second: 105.1 s, ÷ 1.2 and × 1.2, and the seconds a page at
        // the front takes to hear of its offer.
        assert_eq!(wait, Some((106, 87, 130)));
        assert_eq!(
            next_read_s(
                &s,
                &Update::Waiting {
                    position,
                    wait,
                    chance: None
                },
                0,
                0.0
            ),
            12
        );
        // Near the front (under four seconds of outflow) the page asks the server.
        assert!(read(&s, &fifo(80), None).is_none());
        // Another epoch: the server re-registers the place.
        let other = Claims {
            epoch: "e2".into(),
            ..fifo(1101)
        };
        assert!(read(&s, &other, None).is_none());
        // A priority place waits in its own lane: the server says where.
        assert!(read(&s, &fifo(admission::PRIORITY_BASE + 3), None).is_none());
    }

    #[test]
    fn beyond_the_free_places_the_range_follows_the_caps_turnover() {
        // 450 places, 50 free, held 30 s: 1,000 ahead wait about 1 + 63 s, not the 22 s the
        // rate alone would give.
        let s = snap(serde_json::json!({
            "state": "open", "opened": true, "epoch": "e1", "fifo_served_through": 0,
            "prequeue_left": 0, "outflow_per_min": 2700.0, "retry_after_s": 2,
            "read_within_s": 49, "cap": {"size": 450, "free": 50, "offer_rate_per_min": 2700,
            "held_s": [30.0, 30.0], "held_spread": 0.05},
        }));
        let Some(Update::Waiting { wait, .. }) = read(&s, &fifo(1_000), None) else {
            panic!("told by the snapshot");
        };
        let (_, low, high) = wait.expect("turnover known");
        assert!(low <= 64 && high >= 64 && low > 22, "{low}–{high}");
    }

    #[test]
    fn paused_the_crowd_keeps_its_spacing() {
        // A pause of minutes with 490,000 waiting: far back the page reads within 49 s, as the
        // server's status and the browser's page, near the front at the snapshot's pace.
        let s = snap(serde_json::json!({
            "state": "paused", "opened": true, "epoch": "e1", "fifo_served_through": 100,
            "prequeue_left": 0, "retry_after_s": 5, "read_within_s": 49,
        }));
        let far = read(&s, &fifo(400_101), None).expect("told by the snapshot");
        assert!(matches!(far, Update::Paused { position: 400_000 }));
        assert_eq!(next_read_s(&s, &far, 0, 0.0), 49);
        let near = read(&s, &fifo(251), None).expect("told by the snapshot");
        assert_eq!(next_read_s(&s, &near, 0, 0.0), 5);
        // Offers resuming at 15,000 a minute reach 4,700 ahead within 18 s: within 9 s.
        let resuming = snap(serde_json::json!({
            "state": "paused", "opened": true, "epoch": "e1", "fifo_served_through": 100,
            "prequeue_left": 0, "retry_after_s": 5, "read_within_s": 49, "rate_per_min": 15_000,
        }));
        let mid = read(&resuming, &fifo(4_801), None).expect("told by the snapshot");
        assert_eq!(next_read_s(&resuming, &mid, 0, 0.0), 9);
    }

    #[test]
    fn told_not_known_yet_a_buyer_reads_again_by_the_rate() {
        // The cap full and the time a place is held not known: 3,000 ahead at 150 a second
        // come no sooner than 20 s, so the soak's page reads within 10 s, as the server's.
        let s = snap(serde_json::json!({
            "state": "open", "opened": true, "epoch": "e1", "fifo_served_through": 100,
            "prequeue_left": 0, "outflow_per_min": 9000.0, "retry_after_s": 2,
            "read_within_s": 49, "cap": {"size": 1500, "free": 0, "offer_rate_per_min": 9000,
            "held_s": null, "held_spread": null},
        }));
        let update = read(&s, &fifo(3_101), None).expect("told by the snapshot");
        assert!(matches!(
            update,
            Update::Waiting {
                position: 3_000,
                wait: None,
                ..
            }
        ));
        assert_eq!(next_read_s(&s, &update, 0, 0.0), 10);
    }

    #[test]
    fn a_buyer_is_near_the_front_within_a_minute_of_its_turn() {
        let s = snap(serde_json::json!({
            "state": "open", "opened": true, "epoch": "e1", "fifo_served_through": 100,
            "prequeue_left": 0, "outflow_per_min": 600.0, "rate_per_min": 900,
            "retry_after_s": 2, "read_within_s": 49, "cap": rate_bound(600),
        }));
        let waiting = |seq| read(&s, &fifo(seq), None).expect("told by the snapshot");
        // 600 ahead at 10 a second: 60.1 s at best ÷ 1.2, so within the minute.
        assert!(near_front(&s, &waiting(701)));
        assert!(!near_front(&s, &waiting(1_001)));
        // No wait known yet: a minute at the rate set (900 ahead).
        let young = snap(serde_json::json!({
            "state": "open", "opened": true, "epoch": "e1", "fifo_served_through": 100,
            "rate_per_min": 900,
        }));
        let place = |seq| read(&young, &fifo(seq), None).expect("told by the snapshot");
        assert!(near_front(&young, &place(999)));
        assert!(!near_front(&young, &place(1_001)));
        assert!(!near_front(&s, &Update::Paused { position: 10 }));
    }

    #[test]
    fn the_token_payload_is_read_without_its_signature() {
        let payload =
            URL_SAFE_NO_PAD.encode(br#"{"ev":"x","tid":"t1","seq":7,"pre":true,"ep":"e9"}"#);
        let c = Claims::of(&format!("h.{payload}.sig")).expect("claims");
        assert_eq!(
            (c.seq, c.pre, c.epoch.as_str(), c.ticket.as_str()),
            (7, true, "e9", "t1")
        );
        assert!(Claims::of("not-a-token").is_none());
    }

    #[test]
    fn a_pre_queue_page_reads_again_a_second_past_the_opening() {
        let s = snap(serde_json::json!({
            "state": "pre_queue", "opened": false, "epoch": "e1",
            "prequeue_served_through": null, "outflow_per_min": null,
            "seat_model": null, "read_within_s": 2, "retry_after_s": 10,
            "opens_at": "2026-12-03T18:00:00Z",
        }));
        let opens: u64 = 1_796_320_800_000;
        assert_eq!(next_read_s(&s, &Update::PreQueue, opens - 60_000, 0.0), 10);
        assert_eq!(next_read_s(&s, &Update::PreQueue, opens - 3_400, 0.0), 4);
        assert_eq!(next_read_s(&s, &Update::PreQueue, opens + 500, 0.0), 1);
        // A large pre-queue wakes over the opening's spread, and only once: told "pre-queue"
        // after the opening, a page reads again in a second.
        let large = snap(serde_json::json!({
            "state": "pre_queue", "opened": false, "epoch": "e1",
            "prequeue_served_through": null, "outflow_per_min": null,
            "seat_model": null, "read_within_s": 60, "retry_after_s": 10,
            "opening_spread_s": 5, "opens_at": "2026-12-03T18:00:00Z",
        }));
        let told = |now_ms, share| next_read_s(&large, &Update::PreQueue, now_ms, share);
        assert_eq!(told(opens - 3_400, 0.0), 4);
        assert_eq!(told(opens - 3_400, 0.5), 6);
        assert_eq!(told(opens - 300_000, 0.5), 10);
        assert_eq!(told(opens + 4_000, 0.9), 1);
    }
}
