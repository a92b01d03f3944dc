//! The opening's wake-up: until the opening every pre-queue page waits for it, and all of them
//! reading the second after would be the whole pre-queue in one second, the storm's worst, while
//! the crowd's reads are budgeted at `waiting_reads_per_s`. So each pre-queue ticket wakes at
//! its own moment in the first seconds after the opening: spread over the pre-queue ÷ that
//! budget, but never more than a quarter of an offer's life, since the first offers go out at
//! the opening and a page at the front of the draw must still hear of its offer in time.

use sha2::{Digest, Sha256};

use crate::clock::UnixMs;

/// The longest a pre-queue page goes between reads while the pre-queue is small.
pub(crate) const PRE_QUEUE_READ_S: u64 = 10;

/// Seconds over which the pre-queue's first reads after the opening are spread: its size at the
/// crowd's read budget, at most a quarter of an offer's life (and at least one second).
pub(crate) fn spread_s(pre_queue: u64, reads_per_s: u32, offer_s: u32) -> u64 {
    pre_queue
        .div_ceil(u64::from(reads_per_s.max(1)))
        .min(u64::from(offer_s) / 4)
        .max(1)
}

/// Where in the spread a ticket wakes, in [0, 1): from its id, so every answer to the same
/// ticket gives the same moment, and the draw's tickets fall evenly over it.
pub fn ticket_share(ticket_id: &str) -> f64 {
    let digest = Sha256::digest(ticket_id.as_bytes());
    let mut first = [0u8; 8];
    first.copy_from_slice(&digest[..8]);
    // The top 53 bits, the precision of an `f64` in [0, 1).
    (u64::from_be_bytes(first) >> 11) as f64 / (1u64 << 53) as f64
}

/// Seconds until a pre-queue page reads again: a second past the opening plus its `share` of
/// the `spread_s`, and meanwhile at the crowd's spacing (`within`), at least every
/// `PRE_QUEUE_READ_S` (`nextReadS` in `static/queue-snapshot.js` does the same).
pub(crate) fn read_s(
    opens_at_ms: UnixMs,
    now_ms: UnixMs,
    within: u64,
    spread_s: u64,
    share: f64,
) -> u64 {
    let until_s = u64::try_from(opens_at_ms.saturating_sub(now_ms)).unwrap_or(0) / 1000;
    let wake = until_s + 1 + (share.clamp(0.0, 1.0) * spread_s as f64) as u64;
    wake.min(within.max(PRE_QUEUE_READ_S)).max(1)
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
        // A minute before, a small pre-queue reads every 10 s; a large one at its spacing.
        assert_eq!(read_s(opens, opens - 60_000, 2, 5, 0.0), 10);
        assert_eq!(read_s(opens, opens - 60_000, 30, 5, 0.0), 30);
        // Close to it: a second past the opening, then the ticket's share of the spread.
        assert_eq!(read_s(opens, opens - 3_400, 2, 5, 0.0), 4);
        assert_eq!(read_s(opens, opens - 3_400, 2, 5, 0.5), 6);
        assert_eq!(read_s(opens, opens - 3_400, 2, 5, 0.99), 8);
        // Opened by the clock, not yet by the snapshot.
        assert_eq!(read_s(opens, opens + 500, 2, 1, 0.7), 1);
        assert_eq!(read_s(opens, opens + 500, 2, 5, 0.7), 4);
    }
}
