//! FIFO order kept: of the buyers who joined after opening, the pairs that arrived at least a
//! second apart and were queued the other way round (the later arrival given the earlier place).
//! A buyer shed at the door and queued behind people who came long after is what this counts.
//!
//! Counted in O(n log n), not over all pairs: buyers taken in arrival order, a Fenwick tree over
//! join-sequence ranks holds those who arrived at least the gap earlier, and each buyer counts
//! how many of them were given a later place.

use serde::{Deserialize, Serialize};

/// Pairs a second or more apart, and how many of them were queued the other way round.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Inversions {
    pub pairs: u64,
    pub inverted: u64,
}

impl Inversions {
    pub fn share(&self) -> Option<f64> {
        (self.pairs > 0).then(|| self.inverted as f64 / self.pairs as f64)
    }
}

/// The order the verdict judges, and by which clock.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Judged {
    pub inversions: Inversions,
    /// What the arrival is: when the first join "reached the door" (the proxy's log) or, with
    /// no proxy, when it "left the soak".
    pub basis: &'static str,
    /// FIFO buyers missing from the door log (`None`: no log).
    pub unlogged: Option<u64>,
}

/// The gap below which two arrivals are too close to call (clocks, one network round trip).
pub const GAP_MS: u64 = 1_000;

/// `arrivals`: (arrival ms, join sequence) per buyer.
pub fn count(arrivals: &[(u64, u64)], gap_ms: u64) -> Inversions {
    let mut by_arrival = arrivals.to_vec();
    by_arrival.sort_unstable();
    let mut seqs: Vec<u64> = by_arrival.iter().map(|&(_, seq)| seq).collect();
    seqs.sort_unstable();
    seqs.dedup();
    // 1-based rank of a sequence number among all of them.
    let rank = |seq: u64| seqs.partition_point(|&s| s <= seq);
    let mut tree = Fenwick(vec![0; seqs.len() + 1]);
    let (mut earlier, mut next) = (0u64, 0usize);
    let mut found = Inversions::default();
    for &(at, seq) in &by_arrival {
        while let Some(&(then, their_seq)) = by_arrival.get(next) {
            if then + gap_ms > at {
                break;
            }
            tree.add(rank(their_seq));
            earlier += 1;
            next += 1;
        }
        found.pairs += earlier;
        // Earlier arrivals with a place after this buyer's.
        found.inverted += earlier - tree.up_to(rank(seq));
    }
    found
}

struct Fenwick(Vec<u64>);

impl Fenwick {
    fn add(&mut self, mut i: usize) {
        while i < self.0.len() {
            self.0[i] += 1;
            i += i & i.wrapping_neg();
        }
    }

    fn up_to(&self, mut i: usize) -> u64 {
        let mut sum = 0;
        while i > 0 {
            sum += self.0[i];
            i -= i & i.wrapping_neg();
        }
        sum
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn brute(arrivals: &[(u64, u64)], gap: u64) -> Inversions {
        let mut found = Inversions::default();
        for a in arrivals {
            for b in arrivals {
                if a.0 + gap <= b.0 {
                    found.pairs += 1;
                    found.inverted += u64::from(a.1 > b.1);
                }
            }
        }
        found
    }

    #[test]
    fn in_order_has_none_and_a_late_queued_buyer_counts_once_per_overtaker() {
        let fair: Vec<_> = (0..10).map(|i| (i * 1_000, i)).collect();
        assert_eq!(
            count(&fair, GAP_MS),
            Inversions {
                pairs: 45,
                inverted: 0
            }
        );
        // The first arrival was shed and queued last: the nine who came after overtook it.
        let mut shed = fair.clone();
        shed[0].1 = 100;
        assert_eq!(count(&shed, GAP_MS).inverted, 9);
        // Arrivals closer than the gap are not judged.
        let close = [(0, 5), (999, 1)];
        assert_eq!(count(&close, GAP_MS), Inversions::default());
    }

    #[test]
    fn agrees_with_counting_every_pair() {
        let mut x: u64 = 7;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let arrivals: Vec<_> = (0..400)
            .map(|_| (next() % 20_000, next() % 1_000))
            .collect();
        for gap in [0, 1, 500, 1_000, 5_000] {
            assert_eq!(count(&arrivals, gap), brute(&arrivals, gap), "gap {gap}");
        }
    }
}
