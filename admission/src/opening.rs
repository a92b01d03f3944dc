//! The opening's wake-up: until the opening every pre-queue page waits for it, and all of them
//! reading the second after would be the whole pre-queue in one second, the storm's worst, while
//! the crowd's reads are budgeted at `waiting_reads_per_s`. So each pre-queue ticket wakes at
//! its own moment in the first seconds after the opening: spread over the pre-queue ÷ that
//! budget, but never more than a quarter of an offer's life, since the first offers go out at
//! the opening and a page at the front of the draw must still hear of its offer in time.

use sha2::{Digest, Sha256};

use crate::clock::UnixMs;
use crate::snapshot::EventState;

/// The longest a pre-queue page goes between reads: the snapshot's own pace before the
/// opening. Not longer, whatever the crowd: the organizer may bring the opening forward.
pub(crate) const PRE_QUEUE_READ_S: u64 = crate::public::retry_after_s(EventState::PreQueue);

/// Seconds over which the pre-queue's first reads after the opening are spread: its size at the
/// crowd's read budget, at most a quarter of an offer's life (and at least one second).
pub(crate) fn spread_s(pre_queue: u64, reads_per_s: u32, offer_s: u32) -> u64 {
    pre_queue
        .div_ceil(u64::from(reads_per_s.max(1)))
        .min(u64::from(offer_s) / 4)
        .max(1)
}

/// Where in the spread a ticket wakes, in [0, 1): the top 53 bits of SHA-256 of its id, so
/// every answer to the same ticket, and its page (`openingShare` in
/// `static/queue-snapshot.js`), give the same moment, and the draw's tickets fall evenly.
pub fn ticket_share(ticket_id: &str) -> f64 {
    let digest = Sha256::digest(ticket_id.as_bytes());
    let mut first = [0u8; 8];
    first.copy_from_slice(&digest[..8]);
    (u64::from_be_bytes(first) >> 11) as f64 / (1u64 << 53) as f64
}

/// Seconds until a pre-queue page reads again: a second past the opening plus its `share` of
/// the `spread_s`, at most `PRE_QUEUE_READ_S` from now. Once the opening has passed by the
/// clock (an answer a tick behind it, or a cached copy), a second: its moment was already
/// waited for (`nextReadS` in `static/queue-snapshot.js` does the same).
pub fn read_s(opens_at_ms: UnixMs, now_ms: UnixMs, spread_s: u64, share: f64) -> u64 {
    if now_ms >= opens_at_ms {
        return 1;
    }
    let until_s = u64::try_from(opens_at_ms - now_ms).unwrap_or(0) / 1000;
    let moment = (share.clamp(0.0, 1.0) * spread_s as f64) as u64;
    (until_s + 1 + moment).min(PRE_QUEUE_READ_S)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_spread_is_the_pre_queue_at_the_read_budget_within_a_quarter_of_an_offer() {
        // 50,000 in the pre-queue at 10,000 reads a second: five seconds.
        assert_eq!(spread_s(50_000, 10_000, 20), 5);
        // 300,000 would take 30 s, but an offer made at the opening lasts 20 s.
        assert_eq!(spread_s(300_000, 10_000, 20), 5);
        assert_eq!(spread_s(300_000, 10_000, 120), 30);
        // A small pre-queue wakes together, a second past the opening.
        assert_eq!(spread_s(40, 10_000, 20), 1);
        assert_eq!(spread_s(0, 10_000, 2), 1);
    }

    #[test]
    fn a_tickets_moment_is_its_own_and_the_draw_fills_the_spread_evenly() {
        assert_eq!(ticket_share("t-1"), ticket_share("t-1"));
        let shares: Vec<f64> = (0..10_000)
            .map(|i| ticket_share(&format!("ticket-{i}")))
            .collect();
        assert!(shares.iter().all(|s| (0.0..1.0).contains(s)));
        // Each fifth of the spread wakes about a fifth of the pre-queue.
        for fifth in 0..5 {
            let lo = f64::from(fifth) / 5.0;
            let n = shares
                .iter()
                .filter(|s| (lo..lo + 0.2).contains(*s))
                .count();
            assert!((1_800..=2_200).contains(&n), "fifth {fifth}: {n}");
        }
    }

    #[test]
    fn a_pre_queue_page_wakes_at_its_moment_after_the_opening() {
        let opens = 1_000_000;
        // A minute before, every 10 s whatever the crowd: the opening may be brought forward.
        assert_eq!(read_s(opens, opens - 60_000, 5, 0.0), 10);
        // Close to it: a second past the opening, then the ticket's share of the spread.
        assert_eq!(read_s(opens, opens - 3_400, 5, 0.0), 4);
        assert_eq!(read_s(opens, opens - 3_400, 5, 0.5), 6);
        assert_eq!(read_s(opens, opens - 3_400, 5, 0.99), 8);
        assert_eq!(read_s(opens, opens - 400, 5, 0.99), 5);
        // Opened by the clock but told "pre-queue" (a tick behind, or a cached copy): the
        // moment was already waited for, so again in a second, not a second moment later.
        assert_eq!(read_s(opens, opens, 5, 0.7), 1);
        assert_eq!(read_s(opens, opens + 4_500, 5, 0.99), 1);
    }

    #[test]
    fn the_page_computes_the_same_share() {
        // The top 53 bits of SHA-256("t-1"), as `openingShare` in `static/queue-snapshot.js`
        // computes them (tests/pages/queue_snapshot.test.js holds the same figure).
        assert_eq!(ticket_share("t-1"), SHARE_OF_T_1);
    }

    /// SHA-256("t-1") begins 46e9bc3476c92ea2: shifted right by 11 bits, over 2^53.
    const SHARE_OF_T_1: f64 = 0.277_004_015_740_008_77;
}
