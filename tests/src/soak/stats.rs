//! What buyers record while they run: live counters (for the progress bars), latency
//! histograms, errors by code and the facts the queue-order check needs. One `Stats` per worker
//! process; `Partial` is its serialisable form, merged across workers.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

/// Live gauges and totals shown while running.
#[derive(Default)]
pub struct Live {
    pub arrived: AtomicU64,
    pub joined: AtomicU64,
    pub waiting: AtomicI64,
    pub offered: AtomicU64,
    pub admitted: AtomicU64,
    pub holding: AtomicI64,
    pub paying: AtomicI64,
    pub sold: AtomicU64,
    pub sold_out_notices: AtomicU64,
    pub done: AtomicU64,
    pub sockets: AtomicI64,
    pub errors: AtomicU64,
}

impl Live {
    pub fn add(counter: &AtomicU64) {
        counter.fetch_add(1, Ordering::Relaxed);
    }

    pub fn gauge(gauge: &AtomicI64, delta: i64) {
        gauge.fetch_add(delta, Ordering::Relaxed);
    }
}

/// Histogram names, in milliseconds unless said otherwise.
pub const HISTOGRAMS: [&str; 12] = [
    "join_ms",
    // From the buyer's arrival to its queue token, across every shed and retried join.
    "arrival_to_token_ms",
    // The first wait range shown: high ÷ low, in hundredths (not milliseconds).
    "eta_ratio_pct",
    // The real wait ÷ the first range's point (its harmonic middle), in hundredths: how wide a
    // range would have had to be.
    "eta_actual_pct",
    "queue_wait_ms",
    // From the offer made to the buyer seeing it, where the answer said the offer's time left.
    "offer_seen_late_ms",
    "claim_ms",
    "hold_won_ms",
    "hold_lost_ms",
    "checkout_to_confirmed_ms",
    // Absolute: ms since the run's start when each buyer learned "sold out".
    "sold_out_learned_at_ms",
    "poll_ms",
];

#[derive(Default, Serialize, Deserialize, Clone, Debug)]
pub struct Partial {
    pub buyers: u64,
    /// Outcome and event counts (joined, offered, admitted, bought, lapsed, …).
    pub counts: BTreeMap<String, u64>,
    /// Errors by problem code (or transport error kind).
    pub errors: BTreeMap<String, u64>,
    /// name → recorded (value, count) pairs.
    pub histograms: BTreeMap<String, Vec<(u64, u64)>>,
    /// ETA honesty: buyers given a wait range, and those whose actual wait fell inside it.
    pub eta_given: u64,
    pub eta_inside: u64,
    /// The same buyers whose offer said its time left, judged by when the offer was made.
    #[serde(default)]
    pub eta_made_given: u64,
    #[serde(default)]
    pub eta_made_inside: u64,
    /// First and last successful join and claim, ms since the run's start.
    pub join_span_ms: Option<(u64, u64)>,
    pub admit_span_ms: Option<(u64, u64)>,
    /// Queue order keys (see `order.rs`): the latest among buyers who were offered, and the
    /// earliest among buyers still waiting when the queue sold out.
    pub last_offered_key: Option<String>,
    pub first_unoffered_key: Option<String>,
    /// Idempotency seen from the client: a repeated checkout or claim answered differently.
    pub two_tab_mismatches: Vec<String>,
    /// Sessions claimed by buyers of this worker (session id per buyer).
    pub sessions_claimed: u64,
    /// CPU seconds used by this worker process.
    pub cpu_s: f64,
    /// FIFO order: (arrival ms since the run's start, join sequence) of every buyer who joined
    /// after opening (the pre-queue is ordered by its seed, not by arrival).
    #[serde(default)]
    pub arrivals: Vec<(u64, u64)>,
    /// The same buyers by when their first join request left the soak for the gateway: the
    /// arrival the gateway can see, without the soak's own backlog of joins not yet sent.
    #[serde(default)]
    pub sent_arrivals: Vec<(u64, u64)>,
    /// The same buyers by their join's Idempotency-Key, to find them in the proxy's door log.
    #[serde(default)]
    pub join_keys: Vec<(String, u64)>,
    /// Chance of a seat: by tenth of the first chance stated (0–9), buyers who stayed for their
    /// turn, and those of them who held a seat; buyers never stated one (`null` throughout).
    #[serde(default)]
    pub chance_given: Vec<u64>,
    #[serde(default)]
    pub chance_reached: Vec<u64>,
    /// Of the same buyers, those who claimed their offer: a buyer who never read or took it
    /// could not reach a seat however many were left.
    #[serde(default)]
    pub chance_claimed: Vec<u64>,
    /// Of the same buyers who did not hold a seat, by tenth: how each journey ended, so a
    /// place the seats covered but a buyer lost (an offer read too late, a race for the last
    /// seats) is told from a wrong forecast.
    #[serde(default)]
    pub chance_missed: BTreeMap<usize, BTreeMap<String, u64>>,
    #[serde(default)]
    pub chance_unknown: u64,
    /// The same buyers by their place in the whole line when first stated, in bands of
    /// `PLACE_BAND` places (the page's reading of the snapshot only).
    #[serde(default)]
    pub chance_by_place: BTreeMap<u64, PlaceBand>,
    /// Offered buyers' first wait ranges by when they were shown, in bands of
    /// `SHOWN_BAND_MS` since the run's start.
    #[serde(default)]
    pub first_range_by_shown: BTreeMap<u64, RangeBand>,
    /// The same ranges one by one, for `--range-samples`.
    #[serde(default)]
    pub first_ranges: Vec<FirstRange>,
    /// Offers seen by buyers, per second of the run.
    #[serde(default)]
    pub offers_by_s: BTreeMap<u64, u64>,
    /// The meter as the organizer sees it, about once a second (sampled by the first worker).
    #[serde(default)]
    pub meter_samples: Vec<MeterSample>,
}

/// An offered buyer's first wait range and what came of it (ms since the run's start); the
/// range's fields are empty for a buyer offered before any range was shown.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq)]
pub struct FirstRange {
    pub shown_ms: Option<u64>,
    pub point_s: Option<u64>,
    pub low_s: Option<u64>,
    pub high_s: Option<u64>,
    /// When the buyer saw the offer.
    pub seen_ms: u64,
    /// When the offer was made, as its time left told the buyer (whole seconds).
    pub made_ms: Option<u64>,
    /// Whether the buyer was told its place in line before the offer, and whether a read
    /// went unanswered before that.
    pub told_waiting: bool,
    pub unanswered: bool,
}

/// One read of the organizer's stats.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq)]
pub struct MeterSample {
    /// Ms since the run's start.
    pub at_ms: u64,
    /// Offers the meter has made so far (lapsed ones included).
    pub served: u64,
    /// Nothing but the rate held offers back: buyers waiting, room under the cap, seats left,
    /// no backpressure.
    pub rate_bound: bool,
    /// Backpressure's share of the rate (1: none; 0: offers held).
    #[serde(default = "whole_share")]
    pub backpressure_share: f64,
    /// What the chance of a seat is computed from, as the organizer saw it that second.
    #[serde(default)]
    pub seats: SeatSample,
    /// What the wait is computed from, as the public snapshot published it that second: the
    /// report keeps it so the wait range can be replayed against when places were offered.
    #[serde(default)]
    pub cap: Option<admission::CapModel>,
}

/// The queue's and the seats' counts behind the chance of a seat, from one read of the
/// organizer's stats: the report keeps them per second so the model can be replayed against
/// where the seats really ran out.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq)]
pub struct SeatSample {
    /// Offers claimed, offers lapsed, sessions not ended and offers open.
    pub admitted: u64,
    pub lapsed: u64,
    pub active: u64,
    pub open_offers: u64,
    /// Seats by state.
    pub available: u64,
    pub held: u64,
    pub paying: u64,
    pub sold: u64,
    /// Holds ended: sold, run out, abandoned after a failed payment.
    pub holds_confirmed: u64,
    pub holds_expired: u64,
    pub holds_abandoned: u64,
}

/// One count of the organizer's stats answer; a missing count reads as zero.
fn stat(stats: &serde_json::Value, section: &str, key: &str) -> u64 {
    stats[section][key].as_u64().unwrap_or(0)
}

impl MeterSample {
    /// One read of the organizer's stats, `at_ms` into the run, under a cap of `cap` sessions.
    /// It was bound by the rate alone when buyers were waiting, the cap had room (its places in
    /// use counted as the meter counts them: open offers, sessions, and claims in flight or
    /// just settled), seats were left and backpressure was off.
    pub fn from_stats(at_ms: u64, stats: &serde_json::Value, cap: u64) -> Self {
        let n = |key: &str| stat(stats, "queue", key);
        let seats = SeatSample::from_stats(stats);
        let backpressure_share = stats["backpressure"]["share"].as_f64().unwrap_or(1.0);
        let in_use = seats.open_offers + seats.active + n("claiming");
        MeterSample {
            at_ms,
            served: n("served"),
            rate_bound: n("waiting") > 0
                && in_use < cap.saturating_sub(cap / 10)
                && seats.available > 0
                && backpressure_share >= 0.999,
            backpressure_share,
            seats,
            cap: None,
        }
    }
}

impl SeatSample {
    /// From the organizer's stats answer; a missing count reads as zero.
    pub fn from_stats(stats: &serde_json::Value) -> Self {
        let n = |section: &str, key: &str| stat(stats, section, key);
        SeatSample {
            admitted: n("queue", "admitted_total"),
            lapsed: n("queue", "lapsed_total"),
            active: n("queue", "active"),
            open_offers: n("queue", "offered"),
            available: n("seats", "available"),
            held: n("seats", "held"),
            paying: n("seats", "paying"),
            sold: n("seats", "sold"),
            holds_confirmed: n("holds", "confirmed"),
            holds_expired: n("holds", "expired"),
            holds_abandoned: n("holds", "abandoned"),
        }
    }
}

fn whole_share() -> f64 {
    1.0
}

/// Tenths of the stated chance of a seat.
pub const CHANCE_BUCKETS: usize = 10;
/// Places per band of `chance_by_place`.
pub const PLACE_BAND: u64 = 250;

/// Buyers first stated a chance in one band of places: how many, the chances' sum, and how
/// many held a seat.
#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct PlaceBand {
    pub buyers: u64,
    pub stated_sum: f64,
    pub reached: u64,
}

impl PlaceBand {
    fn add(&mut self, other: PlaceBand) {
        self.buyers += other.buyers;
        self.stated_sum += other.stated_sum;
        self.reached += other.reached;
    }
}

/// Milliseconds per band of `first_range_by_shown`.
pub const SHOWN_BAND_MS: u64 = 15_000;

/// Offered buyers first shown a range in one band of the run: how many, how many ranges held
/// the real wait, and the sums of real wait ÷ the range's point and of high ÷ low.
#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct RangeBand {
    pub buyers: u64,
    pub inside: u64,
    pub real_over_point_sum: f64,
    pub high_over_low_sum: f64,
}

impl RangeBand {
    fn add(&mut self, other: RangeBand) {
        self.buyers += other.buyers;
        self.inside += other.inside;
        self.real_over_point_sum += other.real_over_point_sum;
        self.high_over_low_sum += other.high_over_low_sum;
    }
}

pub struct Stats {
    pub live: Live,
    inner: Mutex<Inner>,
}

struct Inner {
    partial: Partial,
    histograms: BTreeMap<&'static str, Histogram<u64>>,
}

/// What became of a buyer stated a chance of a seat.
#[derive(Clone, Copy, Debug)]
pub struct ChanceSeen<'a> {
    /// Whether it claimed its offer.
    pub claimed: bool,
    /// Whether it went on to hold a seat.
    pub reached: bool,
    /// Its place in the whole line when first stated.
    pub place: Option<u64>,
    /// How its journey ended (`bought`, `no_seat`, `claim_failed`, …).
    pub outcome: &'a str,
}

/// The tenth a chance falls in: 0.0–0.1 → 0, …, 0.9–1.0 (and 1.0 itself) → 9.
pub fn chance_bucket(p: f64) -> usize {
    ((p.max(0.0) * CHANCE_BUCKETS as f64) as usize).min(CHANCE_BUCKETS - 1)
}

fn widen(span: &mut Option<(u64, u64)>, at: u64) {
    *span = Some(match *span {
        None => (at, at),
        Some((a, b)) => (a.min(at), b.max(at)),
    });
}

impl Default for Stats {
    fn default() -> Self {
        Self::new()
    }
}

impl Stats {
    pub fn new() -> Stats {
        let histograms = HISTOGRAMS
            .iter()
            .map(|name| {
                // 1 ms .. 1 day at 3 significant figures; bounds are constants, so this holds.
                let h = Histogram::new_with_bounds(1, 86_400_000, 3)
                    .unwrap_or_else(|_| unreachable!("constant histogram bounds are valid"));
                (*name, h)
            })
            .collect();
        Stats {
            live: Live::default(),
            inner: Mutex::new(Inner {
                partial: Partial::default(),
                histograms,
            }),
        }
    }

    fn with<R>(&self, f: impl FnOnce(&mut Inner) -> R) -> R {
        let mut guard = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        f(&mut guard)
    }

    pub fn record(&self, name: &'static str, ms: u64) {
        self.with(|i| {
            if let Some(h) = i.histograms.get_mut(name) {
                h.saturating_record(ms.max(1));
            }
        });
    }

    pub fn count(&self, name: &str) {
        self.with(|i| *i.partial.counts.entry(name.to_owned()).or_default() += 1);
    }

    pub fn error(&self, code: &str) {
        Live::add(&self.live.errors);
        self.with(|i| *i.partial.errors.entry(code.to_owned()).or_default() += 1);
    }

    pub fn joined_at(&self, at_ms: u64) {
        self.with(|i| widen(&mut i.partial.join_span_ms, at_ms));
    }

    pub fn admitted_at(&self, at_ms: u64) {
        self.with(|i| {
            widen(&mut i.partial.admit_span_ms, at_ms);
            i.partial.sessions_claimed += 1;
        });
    }

    /// An offered buyer's first range, judged: shown `shown_ms` into the run.
    pub fn eta(&self, inside: bool, shown_ms: u64, real_over_point: f64, high_over_low: f64) {
        self.with(|i| {
            i.partial.eta_given += 1;
            i.partial.eta_inside += u64::from(inside);
            i.partial
                .first_range_by_shown
                .entry(shown_ms / SHOWN_BAND_MS)
                .or_default()
                .add(RangeBand {
                    buyers: 1,
                    inside: u64::from(inside),
                    real_over_point_sum: real_over_point,
                    high_over_low_sum: high_over_low,
                });
        });
    }

    pub fn first_range(&self, range: FirstRange) {
        self.with(|i| i.partial.first_ranges.push(range));
    }

    pub fn eta_made(&self, inside: bool) {
        self.with(|i| {
            i.partial.eta_made_given += 1;
            i.partial.eta_made_inside += u64::from(inside);
        });
    }

    pub fn offered_key(&self, key: &str) {
        self.with(|i| {
            let slot = &mut i.partial.last_offered_key;
            if slot.as_deref().is_none_or(|k| k < key) {
                *slot = Some(key.to_owned());
            }
        });
    }

    pub fn unoffered_key(&self, key: &str) {
        self.with(|i| {
            let slot = &mut i.partial.first_unoffered_key;
            if slot.as_deref().is_none_or(|k| k > key) {
                *slot = Some(key.to_owned());
            }
        });
    }

    /// A buyer who joined after opening: when it was meant to arrive, when its first join
    /// request left for the gateway, and the place it was given.
    pub fn arrival(&self, planned_ms: u64, sent_ms: u64, seq: u64, key: &str) {
        self.with(|i| {
            i.partial.arrivals.push((planned_ms, seq));
            i.partial.sent_arrivals.push((sent_ms, seq));
            i.partial.join_keys.push((key.to_owned(), seq));
        });
    }

    /// The first chance of a seat a staying buyer was stated (`None`: only ever shown as not
    /// known yet), whether it claimed its offer and whether it went on to hold a seat, and how
    /// its journey ended.
    pub fn chance(&self, stated: Option<f64>, seen: ChanceSeen) {
        let ChanceSeen {
            claimed,
            reached,
            place,
            outcome,
        } = seen;
        self.with(|i| {
            let p = &mut i.partial;
            let Some(chance) = stated else {
                p.chance_unknown += 1;
                return;
            };
            if let Some(place) = place {
                p.chance_by_place
                    .entry(place / PLACE_BAND)
                    .or_default()
                    .add(PlaceBand {
                        buyers: 1,
                        stated_sum: chance,
                        reached: u64::from(reached),
                    });
            }
            p.chance_given.resize(CHANCE_BUCKETS, 0);
            p.chance_reached.resize(CHANCE_BUCKETS, 0);
            p.chance_claimed.resize(CHANCE_BUCKETS, 0);
            let tenth = chance_bucket(chance);
            p.chance_given[tenth] += 1;
            p.chance_reached[tenth] += u64::from(reached);
            p.chance_claimed[tenth] += u64::from(claimed);
            if !reached {
                *p.chance_missed
                    .entry(tenth)
                    .or_default()
                    .entry(outcome.to_owned())
                    .or_default() += 1;
            }
        });
    }

    pub fn offered_at(&self, at_ms: u64) {
        self.with(|i| *i.partial.offers_by_s.entry(at_ms / 1000).or_default() += 1);
    }

    pub fn meter_sample(&self, sample: MeterSample) {
        self.with(|i| i.partial.meter_samples.push(sample));
    }

    pub fn mismatch(&self, what: String) {
        self.with(|i| i.partial.two_tab_mismatches.push(what));
    }

    pub fn errors(&self) -> BTreeMap<String, u64> {
        self.with(|i| i.partial.errors.clone())
    }

    pub fn partial(&self, buyers: u64) -> Partial {
        self.with(|i| {
            let mut p = i.partial.clone();
            p.buyers = buyers;
            for (name, h) in &i.histograms {
                p.histograms.insert(
                    (*name).to_owned(),
                    h.iter_recorded()
                        .map(|v| (v.value_iterated_to(), v.count_at_value()))
                        .collect(),
                );
            }
            p
        })
    }
}

impl Partial {
    /// Folds another worker's partial report into this one.
    pub fn merge(&mut self, other: Partial) {
        self.buyers += other.buyers;
        for (k, v) in other.counts {
            *self.counts.entry(k).or_default() += v;
        }
        for (k, v) in other.errors {
            *self.errors.entry(k).or_default() += v;
        }
        for (k, v) in other.histograms {
            self.histograms.entry(k).or_default().extend(v);
        }
        self.eta_given += other.eta_given;
        self.eta_inside += other.eta_inside;
        self.eta_made_given += other.eta_made_given;
        self.eta_made_inside += other.eta_made_inside;
        for (mine, theirs) in [
            (&mut self.join_span_ms, other.join_span_ms),
            (&mut self.admit_span_ms, other.admit_span_ms),
        ] {
            if let Some((a, b)) = theirs {
                widen(mine, a);
                widen(mine, b);
            }
        }
        if let Some(k) = other.last_offered_key
            && self.last_offered_key.as_ref().is_none_or(|m| *m < k)
        {
            self.last_offered_key = Some(k);
        }
        if let Some(k) = other.first_unoffered_key
            && self.first_unoffered_key.as_ref().is_none_or(|m| *m > k)
        {
            self.first_unoffered_key = Some(k);
        }
        self.two_tab_mismatches.extend(other.two_tab_mismatches);
        self.sessions_claimed += other.sessions_claimed;
        self.cpu_s += other.cpu_s;
        self.arrivals.extend(other.arrivals);
        self.sent_arrivals.extend(other.sent_arrivals);
        self.join_keys.extend(other.join_keys);
        for (mine, theirs) in [
            (&mut self.chance_given, other.chance_given),
            (&mut self.chance_reached, other.chance_reached),
            (&mut self.chance_claimed, other.chance_claimed),
        ] {
            mine.resize(CHANCE_BUCKETS, 0);
            for (m, t) in mine.iter_mut().zip(theirs) {
                *m += t;
            }
        }
        for (tenth, outcomes) in other.chance_missed {
            let mine = self.chance_missed.entry(tenth).or_default();
            for (outcome, n) in outcomes {
                *mine.entry(outcome).or_default() += n;
            }
        }
        self.chance_unknown += other.chance_unknown;
        for (band, theirs) in other.chance_by_place {
            self.chance_by_place.entry(band).or_default().add(theirs);
        }
        for (band, theirs) in other.first_range_by_shown {
            self.first_range_by_shown
                .entry(band)
                .or_default()
                .add(theirs);
        }
        self.first_ranges.extend(other.first_ranges);
        for (s, n) in other.offers_by_s {
            *self.offers_by_s.entry(s).or_default() += n;
        }
        self.meter_samples.extend(other.meter_samples);
        self.meter_samples.sort_by_key(|m| m.at_ms);
    }

    pub fn histogram(&self, name: &str) -> Histogram<u64> {
        let mut h = Histogram::new_with_bounds(1, 86_400_000, 3)
            .unwrap_or_else(|_| unreachable!("constant histogram bounds are valid"));
        for (v, n) in self.histograms.get(name).into_iter().flatten() {
            h.saturating_record_n(*v, *n);
        }
        h
    }

    pub fn get(&self, name: &str) -> u64 {
        self.counts.get(name).copied().unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_seat_sample_reads_the_organizers_stats_and_zero_for_what_is_missing() {
        // The organizer's stats as the gateway answers them at the end of a sale.
        let stats = serde_json::json!({
            "holds": {"abandoned": 109, "confirmed": 5000, "expired": 888},
            "queue": {"active": 153, "admitted_total": 8493, "claiming": 0,
                      "lapsed_total": 1417, "offered": 2, "served": 9910, "waiting": 328200},
            "seats": {"available": 0, "held": 7, "paying": 3, "sold": 5000}
        });
        let s = SeatSample::from_stats(&stats);
        assert_eq!(
            (s.admitted, s.lapsed, s.active, s.open_offers),
            (8493, 1417, 153, 2)
        );
        assert_eq!((s.available, s.held, s.paying, s.sold), (0, 7, 3, 5000));
        assert_eq!(
            (s.holds_confirmed, s.holds_expired, s.holds_abandoned),
            (5000, 888, 109)
        );
        assert_eq!(
            SeatSample::from_stats(&serde_json::json!({})),
            SeatSample::default()
        );
    }

    #[test]
    fn a_second_is_rate_bound_only_with_buyers_waiting_room_under_the_cap_seats_and_no_backpressure()
     {
        let stats = |waiting: u64, in_use: u64, available: u64, share: f64| {
            serde_json::json!({
                "backpressure": {"share": share},
                "queue": {"active": in_use / 2, "offered": in_use - in_use / 2 - 1,
                          "claiming": 1, "served": 4_000, "waiting": waiting},
                "seats": {"available": available}
            })
        };
        let sample = MeterSample::from_stats(1_500, &stats(10, 100, 5, 1.0), 1_000);
        assert!(sample.rate_bound);
        assert_eq!((sample.at_ms, sample.served), (1_500, 4_000));
        assert_eq!(sample.seats.available, 5);
        // Nobody waiting, the cap within a tenth of full, no seat left, backpressure on.
        assert!(!MeterSample::from_stats(0, &stats(0, 100, 5, 1.0), 1_000).rate_bound);
        assert!(!MeterSample::from_stats(0, &stats(10, 900, 5, 1.0), 1_000).rate_bound);
        assert!(!MeterSample::from_stats(0, &stats(10, 100, 0, 1.0), 1_000).rate_bound);
        let slowed = MeterSample::from_stats(0, &stats(10, 100, 5, 0.5), 1_000);
        assert!(!slowed.rate_bound);
        assert_eq!(slowed.backpressure_share, 0.5);
    }
}
