//! The storm's figures, each against its target and marked met or missed: how fast arrivals
//! got a place, how many joins were refused for load, whether the queue kept arrival order,
//! whether the wait and the chance of a seat shown were true, whether admitted buyers were
//! answered, whether offers kept the rate set, how fast "sold out" reached everyone, and what
//! the servers spent per arrival. A report, not a timed test: the verdict judges only the two
//! that do not depend on the machine's speed (admitted buyers answered, FIFO order).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::cpu::CpuSplit;
use super::fifo::{Inversions, Judged};
use super::stats::{CHANCE_BUCKETS, MeterSample, PLACE_BAND, Partial, SHOWN_BAND_MS};

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Figure {
    pub name: String,
    pub value: String,
    pub target: String,
    /// `None`: nothing to judge in this run (not shown, or no sample).
    pub met: Option<bool>,
}

/// One minute of the run: offers buyers saw, offers the meter made, and the seconds sampled in
/// which only the rate held offers back.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Minute {
    pub minute: u64,
    /// Seen by buyers, each at its next read.
    pub offers: u64,
    /// Made by the meter, from its own count.
    #[serde(default)]
    pub offers_made: u64,
    pub rate_bound_s: u64,
    /// Seconds backpressure held offers (share 0), and slowed them (share below 1).
    #[serde(default)]
    pub held_by_backpressure_s: u64,
    #[serde(default)]
    pub slowed_by_backpressure_s: u64,
    pub sampled_s: u64,
}

/// One tenth of the stated chance of a seat.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ChanceTenth {
    /// "0.3–0.4"
    pub stated: String,
    pub buyers: u64,
    pub reached_seat: u64,
    pub share: f64,
    /// Of the buyers, those who claimed their offer (older reports: not counted).
    #[serde(default)]
    pub claimed: u64,
    /// How the journeys of the buyers who did not hold a seat ended, by outcome (older
    /// reports: not counted).
    #[serde(default)]
    pub missed_by: BTreeMap<String, u64>,
}

/// One band of places in the whole line, by the first chance stated there: where the seats
/// ran out against where the model said they would.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PlaceChance {
    /// "5000–5249"
    pub places: String,
    pub buyers: u64,
    pub mean_stated: f64,
    pub reached_share: f64,
}

/// Offered buyers' first wait ranges, by when in the run they were shown: which phase of the
/// storm the range holds in and which it misses.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ShownRange {
    /// "15–30 s" since the run's start.
    pub shown: String,
    pub buyers: u64,
    pub held_share: f64,
    pub mean_real_over_point: f64,
    pub mean_high_over_low: f64,
}

pub struct Inputs<'a> {
    pub partial: &'a Partial,
    pub arrivals: u64,
    pub rate_per_min: u64,
    /// The order the verdict judges (by the door, with a proxy log).
    pub fifo: Judged,
    /// By when each buyer's first join left the soak.
    pub fifo_sent: Inversions,
    /// From the door (the proxy's log) to the token: p50, p99 and max ms.
    pub door_to_token_ms: Option<(u64, u64, u64)>,
    /// By when each buyer was meant to arrive, the soak's own join backlog included.
    pub fifo_planned: Inversions,
    /// When the last seat was sold, ms since the run's start.
    pub last_sale_ms: Option<u64>,
    pub cpu: &'a CpuSplit,
    /// The arrival window, seconds.
    pub window_s: f64,
    /// What the machine answers at most, measured after the storm (`--baseline-s`).
    pub limits: Option<Limits>,
}

/// The physical limits beside the figures they bound.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// The gateway's own join route, closed-loop, with nothing else running.
    pub joins_per_s: f64,
    /// The public queue snapshot through the front the buyers used.
    pub snapshot_reads_per_s: f64,
}

pub struct Storm {
    pub figures: Vec<Figure>,
    pub offers_timeline: Vec<Minute>,
    pub seat_chance_calibration: Vec<ChanceTenth>,
    pub seat_chance_by_place: Vec<PlaceChance>,
    pub first_range_by_shown: Vec<ShownRange>,
}

/// Fewer buyers than this in a tenth say nothing about its share.
const MIN_CHANCE_SAMPLES: u64 = 20;
/// Fewer rate-bound seconds than this say nothing about the rate kept.
const MIN_RATE_BOUND_S: u64 = 20;
/// The processes of the service: not the soak, not the payment simulator.
const SERVERS: [&str; 4] = ["gateway", "postgres", "redis-server", "nginx"];

fn figure(name: &str, value: String, target: &str, met: Option<bool>) -> Figure {
    Figure {
        name: name.to_owned(),
        value,
        target: target.to_owned(),
        met,
    }
}

fn pct(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        part as f64 * 100.0 / whole as f64
    }
}

pub fn build(i: &Inputs<'_>) -> Storm {
    let p = i.partial;
    let mut figures = Vec::new();

    let token = p.histogram("arrival_to_token_ms");
    figures.push(figure(
        "arrival → queue token, p99 / max",
        if token.is_empty() {
            "no join".into()
        } else {
            format!(
                "{} ms / {} ms{}{}",
                token.value_at_quantile(0.99),
                token.max(),
                i.door_to_token_ms
                    .map(|(p50, p99, max)| format!(
                        "; from the door (nginx read the join's first byte) to the token: \
                         p50 {p50} ms, p99 {p99} ms, max {max} ms"
                    ))
                    .unwrap_or_default(),
                i.limits
                    .map(|l| join_limit(i.arrivals, i.window_s, l.joins_per_s))
                    .unwrap_or_default()
            )
        },
        "≤ 2,000 ms / ≤ 5,000 ms",
        (!token.is_empty()).then(|| token.value_at_quantile(0.99) <= 2_000 && token.max() <= 5_000),
    ));

    let overloaded = p.get("join_overloaded");
    figures.push(figure(
        "`overloaded` answers to joins",
        format!(
            "{overloaded} ({:.2} % of {} arrivals)",
            pct(overloaded, i.arrivals),
            i.arrivals
        ),
        "≤ 1 % of arrivals",
        Some(overloaded * 100 <= i.arrivals),
    ));

    figures.push(figure(
        "FIFO order kept: pairs arriving ≥ 1 s apart queued the other way round",
        format!(
            "{} by when each first join {}{}{}; {} by the planned arrival, the soak's own \
             backlog of joins included",
            pairs(&i.fifo.inversions),
            i.fifo.basis,
            match i.fifo.unlogged {
                Some(0) => " (nginx's join log)".to_owned(),
                Some(n) => format!(" (nginx's join log, {n} buyers missing from it)"),
                None => String::new(),
            },
            // Judged at the door, the count by when each join left the soak goes beside it.
            if i.fifo.unlogged.is_some() {
                format!("; {} by when it left the soak", pairs(&i.fifo_sent))
            } else {
                String::new()
            },
            pairs(&i.fifo_planned),
        ),
        "≤ 0.1 %",
        i.fifo
            .inversions
            .share()
            .map(|s| s <= 0.001 && i.fifo.unlogged.unwrap_or(0) == 0),
    ));

    // Offers held back by backpressure make the wait longer than any forecast of the cap and
    // the rate: the timeline's counts go beside the figure.
    let offers_timeline = timeline(p);
    let [held_s, slowed_s, read_s] = offers_timeline.iter().fold([0; 3], |[h, s, r], m| {
        [
            h + m.held_by_backpressure_s,
            s + m.slowed_by_backpressure_s,
            r + m.sampled_s,
        ]
    });
    let ratio = p.histogram("eta_ratio_pct");
    let median_ratio = ratio.value_at_quantile(0.5) as f64 / 100.0;
    let actual = p.histogram("eta_actual_pct");
    let actual_at = |q: f64| actual.value_at_quantile(q) as f64 / 100.0;
    let told_no_range = p.get("offered_without_range");
    let judged = p.eta_given + told_no_range;
    figures.push(figure(
        "first wait range shown contains the real wait",
        if judged == 0 {
            "no range shown".into()
        } else {
            format!(
                "{:.1} % of {judged} judged offered buyers: {:.1} % of the {} shown a range, and \
                 {told_no_range} told their place and then \"not known yet\" (or left \
                 unanswered) before their offer, each counted as a miss{}; {} more offered at \
                 their first word after joining or the opening, never told a place to wait in, \
                 not judged; median high ÷ low {median_ratio:.2}; real wait ÷ the range's \
                 point: p10 {:.2}, p50 {:.2}, p90 {:.2}; by when the offer was made rather than \
                 seen: {:.1} % of {}; backpressure held offers in {} and slowed them in {} of \
                 the {} seconds the organizer's stats were read",
                pct(p.eta_inside, judged),
                pct(p.eta_inside, p.eta_given),
                p.eta_given,
                known_wait_from(&p.meter_samples).map_or(String::new(), |(at_ms, offered)| {
                    format!(
                        " (limit: the time a place is held was first known well enough for a \
                         wait beyond the cap's free places at {:.1} s, when {offered} offers \
                         beyond the cap's size had gone out)",
                        at_ms as f64 / 1000.0
                    )
                }),
                p.get("offered_at_first_word"),
                actual_at(0.1),
                actual_at(0.5),
                actual_at(0.9),
                pct(p.eta_made_inside, p.eta_made_given),
                p.eta_made_given,
                held_s,
                slowed_s,
                read_s,
            )
        },
        "≥ 80 %, median high ÷ low ≤ 2",
        (judged > 0).then(|| ranges_met(p.eta_inside, p.eta_given, told_no_range, median_ratio)),
    ));

    let seat_chance_calibration = calibration(p);
    let judged: Vec<&ChanceTenth> = seat_chance_calibration
        .iter()
        .filter(|t| t.buyers >= MIN_CHANCE_SAMPLES)
        .collect();
    let worst = judged
        .iter()
        .map(|t| (t.share - midpoint(&t.stated)).abs() * 100.0)
        .fold(0.0_f64, f64::max);
    let shown: u64 = seat_chance_calibration.iter().map(|t| t.buyers).sum();
    // Buyers told they are likely to reach a seat who never claimed their offer could not
    // reach one: said beside the figure, so a starved load generator is told from a wrong forecast.
    let likely = seat_chance_calibration
        .iter()
        .filter(|t| midpoint(&t.stated) > 0.5);
    let (likely_buyers, likely_claimed) =
        likely.fold((0, 0), |(b, c), t| (b + t.buyers, c + t.claimed));
    figures.push(figure(
        "chance of a seat: share reaching a seat per tenth of stated chance",
        if shown == 0 {
            format!(
                "not stated ({} buyers only ever shown \"not known yet\")",
                p.chance_unknown
            )
        } else {
            format!(
                "{shown} buyers stated a chance ({} only ever shown \"not known yet\"); {} \
                 tenths with ≥ {MIN_CHANCE_SAMPLES} \
                 buyers, furthest {worst:.1} points from its tenth; {likely_claimed} of the \
                 {likely_buyers} stated 0.5 or more claimed their offer{}",
                p.chance_unknown,
                judged.len(),
                surest_missed(&seat_chance_calibration)
            )
        },
        "within ±15 points",
        (!judged.is_empty()).then_some(worst <= 15.0),
    ));

    let met_503 = p.get("admitted_met_503");
    let claims_503 = p.get("offered_claim_503");
    let elsewhere: Vec<String> = p
        .counts
        .iter()
        .filter_map(|(k, n)| {
            let kind = k.strip_prefix("admitted_503_on_")?;
            (kind != "admission_token").then(|| format!("{n} on {kind}"))
        })
        .collect();
    figures.push(figure(
        "admitted buyers answered 503 (on requests carrying their admission token, and offered \
         buyers' claims)",
        format!(
            "{met_503} of {} admitted; {claims_503} claims of offered buyers{}",
            p.sessions_claimed,
            if elsewhere.is_empty() {
                String::new()
            } else {
                format!(
                    "; requests without it answered 503 after admission: {}",
                    elsewhere.join(", ")
                )
            }
        ),
        "0",
        Some(met_503 == 0 && claims_503 == 0),
    ));

    let kept = rate_kept(&p.meter_samples, &p.offers_by_s);
    let per_min = kept.per_min();
    figures.push(figure(
        "offers per minute against the rate set, while seats, cap and backpressure allow",
        match per_min {
            Some((made, seen)) => format!(
                "{made:.0}/min made by the meter over {:.0} rate-bound seconds (buyers saw \
                 {seen:.0}/min in those seconds, each at its next read), rate set {}/min",
                kept.ms as f64 / 1000.0,
                i.rate_per_min
            ),
            None => format!(
                "no second bound by the rate alone; rate set {}/min",
                i.rate_per_min
            ),
        },
        "within ±10 % (per-minute timeline in the JSON report)",
        per_min
            .filter(|_| kept.ms >= MIN_RATE_BOUND_S * 1000)
            .map(|(r, _)| (r - i.rate_per_min as f64).abs() <= i.rate_per_min as f64 * 0.1),
    ));

    let learned = p.histogram("sold_out_learned_at_ms");
    let after_last = i.last_sale_ms.filter(|_| !learned.is_empty()).map(|last| {
        (
            learned.value_at_quantile(0.99).saturating_sub(last),
            learned.len(),
        )
    });
    figures.push(figure(
        "sold out told to every waiting buyer, p99 after the last seat sold",
        match after_last {
            Some((ms, n)) => format!(
                "{ms} ms ({n} buyers told){}",
                i.limits
                    .map(|l| polling_limit(n, l.snapshot_reads_per_s))
                    .unwrap_or_default()
            ),
            None => "did not sell out while buyers waited".into(),
        },
        "≤ 5,000 ms",
        after_last.map(|(ms, _)| ms <= 5_000),
    ));

    let server_s: f64 = i
        .cpu
        .servers
        .iter()
        .filter(|(name, _)| SERVERS.contains(&name.as_str()))
        .map(|(_, s)| s)
        .sum();
    let per_arrival_us = server_s * 1e6 / i.arrivals.max(1) as f64;
    let split: Vec<String> = SERVERS
        .iter()
        .filter_map(|n| i.cpu.servers.get(*n).map(|s| format!("{n} {s:.1} s")))
        .collect();
    figures.push(figure(
        "server CPU (gateway + PostgreSQL + Redis + proxy) per arrival",
        format!("{per_arrival_us:.0} µs ({})", split.join(", ")),
        "≤ 200 µs",
        Some(per_arrival_us <= 200.0),
    ));

    Storm {
        figures,
        offers_timeline,
        seat_chance_calibration,
        seat_chance_by_place: by_place(p),
        first_range_by_shown: by_shown(p),
    }
}

fn by_shown(p: &Partial) -> Vec<ShownRange> {
    p.first_range_by_shown
        .iter()
        .filter(|(_, b)| b.buyers > 0)
        .map(|(band, b)| {
            let n = b.buyers as f64;
            ShownRange {
                shown: format!(
                    "{}–{} s",
                    band * SHOWN_BAND_MS / 1000,
                    (band + 1) * SHOWN_BAND_MS / 1000
                ),
                buyers: b.buyers,
                held_share: b.inside as f64 / n,
                mean_real_over_point: b.real_over_point_sum / n,
                mean_high_over_low: b.high_over_low_sum / n,
            }
        })
        .collect()
}

/// The bands where a seat was reached or a chance above nothing was stated.
fn by_place(p: &Partial) -> Vec<PlaceChance> {
    p.chance_by_place
        .iter()
        .filter(|(_, b)| b.buyers > 0)
        .map(|(band, b)| PlaceChance {
            places: format!("{}–{}", band * PLACE_BAND, (band + 1) * PLACE_BAND - 1),
            buyers: b.buyers,
            mean_stated: b.stated_sum / b.buyers as f64,
            reached_share: b.reached as f64 / b.buyers as f64,
        })
        .filter(|c| c.reached_share > 0.0 || c.mean_stated >= 0.005)
        .collect()
}

/// Beside the token figure: how long joining every arrival takes at the most the join route
/// answers alone, against the window they arrive in.
fn join_limit(arrivals: u64, window_s: f64, joins_per_s: f64) -> String {
    let need_s = arrivals as f64 / joins_per_s.max(1.0);
    format!(
        "; limit: the join route alone answers {joins_per_s:.0}/s, so {arrivals} arrivals take \
         ≥ {need_s:.1} s of joining against their {window_s:.0} s window"
    )
}

/// Beside the sold-out figure: how long polling alone takes to tell `told` buyers anything,
/// at the most the snapshot is read through the front.
fn polling_limit(told: u64, reads_per_s: f64) -> String {
    format!(
        "; limit by polling: {told} buyers ÷ {reads_per_s:.0} snapshot reads/s = {:.1} s",
        told as f64 / reads_per_s.max(1.0)
    )
}

/// "N of M pairs (x %)".
fn pairs(fifo: &Inversions) -> String {
    format!(
        "{} of {} pairs ({:.4} %)",
        fifo.inverted,
        fifo.pairs,
        fifo.share().unwrap_or(0.0) * 100.0
    )
}

/// How the buyers told they were all but sure of a seat (the top tenth) and who did not hold
/// one lost it, most first: "; of the 4389 stated 0.9 or more, 705 held no seat: no_seat 339,
/// claim_failed 200, …". Where the seats covered their places, what is named is the load
/// generator's own lateness or the race for seats, not the forecast.
fn surest_missed(tenths: &[ChanceTenth]) -> String {
    let Some(top) = tenths.iter().find(|t| t.stated == "0.9–1.0") else {
        return String::new();
    };
    let missed = top.buyers - top.reached_seat;
    if missed == 0 {
        return String::new();
    }
    let mut by: Vec<(&String, &u64)> = top.missed_by.iter().collect();
    by.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
    let named: Vec<String> = by.iter().map(|(k, n)| format!("{k} {n}")).collect();
    format!(
        "; of the {} stated 0.9 or more, {missed} held no seat: {}",
        top.buyers,
        if named.is_empty() {
            "not counted".to_owned()
        } else {
            named.join(", ")
        }
    )
}

/// The middle of a tenth named "0.3–0.4".
fn midpoint(stated: &str) -> f64 {
    let low: f64 = stated
        .split('–')
        .next()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0.0);
    low + 0.05
}

fn calibration(p: &Partial) -> Vec<ChanceTenth> {
    (0..CHANCE_BUCKETS)
        .filter_map(|tenth| {
            let buyers = p.chance_given.get(tenth).copied().unwrap_or(0);
            let reached = p.chance_reached.get(tenth).copied().unwrap_or(0);
            let claimed = p.chance_claimed.get(tenth).copied().unwrap_or(0);
            (buyers > 0).then(|| ChanceTenth {
                stated: format!(
                    "{:.1}–{:.1}",
                    tenth as f64 / 10.0,
                    (tenth + 1) as f64 / 10.0
                ),
                buyers,
                reached_seat: reached,
                share: reached as f64 / buyers as f64,
                claimed,
                missed_by: p.chance_missed.get(&tenth).cloned().unwrap_or_default(),
            })
        })
        .collect()
}

/// Offers while only the rate held them back, from the meter's own count between two reads of
/// the organizer's stats that both found it rate-bound: its pace, not when buyers saw it.
#[derive(Debug, Default, PartialEq)]
struct RateKept {
    ms: u64,
    made: u64,
    /// Offers buyers saw in the whole seconds those spans cover.
    seen: u64,
    seen_s: u64,
}

impl RateKept {
    /// Made and seen, per minute.
    fn per_min(&self) -> Option<(f64, f64)> {
        (self.ms > 0).then(|| {
            (
                self.made as f64 * 60_000.0 / self.ms as f64,
                self.seen as f64 * 60.0 / self.seen_s.max(1) as f64,
            )
        })
    }
}

/// A gap longer than this between two reads is no measure of one second's pace.
const MAX_SAMPLE_GAP_MS: u64 = 2_500;
/// Nor is one shorter than this: the meter's count moves a whole tick at a time, so a span of a
/// tick or two (a read answered late, then the next on time) measures the tick, not the pace.
const MIN_SAMPLE_GAP_MS: u64 = 900;

fn rate_kept(samples: &[MeterSample], seen_by_s: &BTreeMap<u64, u64>) -> RateKept {
    let mut kept = RateKept::default();
    let mut seconds = std::collections::BTreeSet::new();
    for pair in samples.windows(2) {
        let (a, b) = (pair[0], pair[1]);
        let gap = b.at_ms.saturating_sub(a.at_ms);
        if a.rate_bound && b.rate_bound && (MIN_SAMPLE_GAP_MS..=MAX_SAMPLE_GAP_MS).contains(&gap) {
            kept.ms += gap;
            kept.made += b.served.saturating_sub(a.served);
            seconds.extend(a.at_ms / 1000..b.at_ms / 1000);
        }
    }
    kept.seen_s = seconds.len() as u64;
    kept.seen = seconds
        .iter()
        .map(|s| seen_by_s.get(s).copied().unwrap_or(0))
        .sum();
    kept
}

/// Whether the first ranges met their target: a buyer told its place and then offered before any
/// range was shown counts as one the range did not hold; one offered at its first word after
/// joining or the opening was never told a place to wait in, and is not judged.
fn ranges_met(inside: u64, shown: u64, told_no_range: u64, median_ratio: f64) -> bool {
    inside * 100 >= (shown + told_no_range) * 80 && median_ratio <= 2.0
}

/// When the time a place is held was first published well enough for a wait beyond the cap's
/// free places (`CapModel::held_known`), and how many offers had gone out by then beyond the
/// cap's size: buyers offered before it could be shown no range however often they read.
/// `None` when no sample carried the cap, or it never was.
fn known_wait_from(samples: &[MeterSample]) -> Option<(u64, u64)> {
    samples.iter().find_map(|m| {
        let cap = m.cap?;
        cap.held_known()
            .then(|| (m.at_ms, m.served.saturating_sub(u64::from(cap.size))))
    })
}

fn timeline(p: &Partial) -> Vec<Minute> {
    let mut minutes: BTreeMap<u64, Minute> = BTreeMap::new();
    fn at(minutes: &mut BTreeMap<u64, Minute>, minute: u64) -> &mut Minute {
        minutes.entry(minute).or_insert(Minute {
            minute,
            offers: 0,
            offers_made: 0,
            rate_bound_s: 0,
            held_by_backpressure_s: 0,
            slowed_by_backpressure_s: 0,
            sampled_s: 0,
        })
    }
    for (second, n) in &p.offers_by_s {
        at(&mut minutes, second / 60).offers += n;
    }
    // A second read twice (one answered late, the next on time) counts once.
    let mut last_second = None;
    for sample in &p.meter_samples {
        let second = sample.at_ms / 1000;
        if last_second.replace(second) == Some(second) {
            continue;
        }
        let m = at(&mut minutes, second / 60);
        m.sampled_s += 1;
        m.rate_bound_s += u64::from(sample.rate_bound);
        m.held_by_backpressure_s += u64::from(sample.backpressure_share <= 0.0);
        m.slowed_by_backpressure_s += u64::from(sample.backpressure_share < 1.0);
    }
    // Each span between two reads counts in the minute it starts in.
    for pair in p.meter_samples.windows(2) {
        at(&mut minutes, pair[0].at_ms / 60_000).offers_made +=
            pair[1].served.saturating_sub(pair[0].served);
    }
    minutes.into_values().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buyers_told_not_known_yet_count_against_the_range() {
        // 85 of 100 ranges held: met, until more than 6 buyers were told "not known yet".
        assert!(ranges_met(85, 100, 6, 1.8));
        assert!(!ranges_met(85, 100, 7, 1.8));
        assert!(!ranges_met(100, 100, 0, 2.01), "too wide");
    }

    #[test]
    fn the_wait_is_known_from_the_first_sample_with_the_ends_within_two() {
        let at = |at_ms, served, held_s| MeterSample {
            at_ms,
            served,
            cap: Some(admission::CapModel {
                size: 1_500,
                free: 0,
                offer_rate_per_min: 9_000,
                held_s,
                held_spread: None,
            }),
            ..MeterSample::default()
        };
        let samples = [
            MeterSample::default(),
            at(10_000, 1_400, None),
            at(24_000, 1_669, Some([10.5, 39.4])),
            at(41_800, 2_582, Some([16.0, 32.0])),
            at(50_000, 3_000, Some([20.0, 32.0])),
        ];
        assert_eq!(known_wait_from(&samples), Some((41_800, 1_082)));
        assert_eq!(known_wait_from(&samples[..3]), None);
    }

    #[test]
    fn a_tenth_is_judged_against_its_middle() {
        assert!((midpoint("0.3–0.4") - 0.35).abs() < 1e-9);
        let mut p = Partial {
            chance_given: vec![0; CHANCE_BUCKETS],
            chance_reached: vec![0; CHANCE_BUCKETS],
            chance_claimed: vec![0; CHANCE_BUCKETS],
            ..Partial::default()
        };
        p.chance_given[9] = 100;
        p.chance_reached[9] = 80;
        p.chance_claimed[9] = 85;
        p.chance_missed.insert(
            9,
            [("no_seat".into(), 5), ("claim_failed".into(), 15)].into(),
        );
        let tenths = calibration(&p);
        assert_eq!(tenths.len(), 1);
        assert_eq!(tenths[0].stated, "0.9–1.0");
        assert!((tenths[0].share - 0.8).abs() < 1e-9);
        assert_eq!(tenths[0].claimed, 85);
        assert_eq!(
            surest_missed(&tenths),
            "; of the 100 stated 0.9 or more, 20 held no seat: claim_failed 15, no_seat 5"
        );
    }

    #[test]
    fn journeys_that_missed_a_seat_are_counted_by_tenth_across_workers() {
        use crate::soak::stats::{ChanceSeen, Stats};
        let seen = |reached, outcome| ChanceSeen {
            claimed: true,
            reached,
            place: Some(10),
            outcome,
        };
        let (one, two) = (Stats::default(), Stats::default());
        one.chance(Some(0.95), seen(false, "no_seat"));
        one.chance(Some(0.95), seen(true, "bought"));
        two.chance(Some(0.97), seen(false, "no_seat"));
        two.chance(Some(0.15), seen(false, "claim_failed"));
        let mut p = one.partial(0);
        p.merge(two.partial(1));
        let tenths = calibration(&p);
        let top = tenths.iter().find(|t| t.stated == "0.9–1.0").unwrap();
        assert_eq!((top.buyers, top.reached_seat), (3, 1));
        assert_eq!(top.missed_by, [("no_seat".to_owned(), 2)].into());
        let low = tenths.iter().find(|t| t.stated == "0.1–0.2").unwrap();
        assert_eq!(low.missed_by, [("claim_failed".to_owned(), 1)].into());
    }

    #[test]
    fn places_are_shown_where_a_seat_was_reached_or_a_chance_stated() {
        let band = |buyers, stated_sum, reached| crate::soak::stats::PlaceBand {
            buyers,
            stated_sum,
            reached,
        };
        let p = Partial {
            chance_by_place: [
                (20, band(4, 3.0, 4)),
                (24, band(10, 0.02, 1)),
                (30, band(50, 0.1, 0)),
            ]
            .into(),
            ..Partial::default()
        };
        let shown = by_place(&p);
        assert_eq!(
            shown.len(),
            2,
            "the band told nothing and reaching nothing is left out"
        );
        assert_eq!(shown[0].places, "5000–5249");
        assert!((shown[0].mean_stated - 0.75).abs() < 1e-9);
        assert!((shown[0].reached_share - 1.0).abs() < 1e-9);
        assert_eq!(shown[1].places, "6000–6249");
        assert!((shown[1].reached_share - 0.1).abs() < 1e-9);
    }

    #[test]
    fn first_ranges_are_shown_by_when_the_buyer_saw_them() {
        let stats = crate::soak::stats::Stats::default();
        stats.eta(true, 16_000, 1.0, 1.5);
        stats.eta(false, 29_999, 2.0, 2.5);
        stats.eta(true, 61_000, 0.5, 1.5);
        let shown = by_shown(&stats.partial(3));
        assert_eq!(shown.len(), 2, "{shown:?}");
        assert_eq!((shown[0].shown.as_str(), shown[0].buyers), ("15–30 s", 2));
        assert!((shown[0].held_share - 0.5).abs() < 1e-9);
        assert!((shown[0].mean_real_over_point - 1.5).abs() < 1e-9);
        assert!((shown[0].mean_high_over_low - 2.0).abs() < 1e-9);
        assert_eq!(shown[1].shown, "60–75 s");
    }

    fn sample(at_ms: u64, served: u64, rate_bound: bool) -> MeterSample {
        MeterSample {
            at_ms,
            served,
            rate_bound,
            backpressure_share: if rate_bound { 1.0 } else { 0.0 },
            ..MeterSample::default()
        }
    }

    #[test]
    fn the_rate_kept_is_the_meters_count_over_spans_bound_at_both_ends() {
        // 45 offers a second while bound; a span that leaves the bound state, one after a
        // missed read, and one between a read answered late and the next say nothing of the
        // pace, and that second is sampled once.
        let samples = [
            sample(1_000, 0, true),
            sample(2_000, 45, true),
            sample(3_000, 90, true),
            sample(4_000, 100, false),
            sample(5_000, 101, true),
            sample(9_000, 281, true),
            sample(10_000, 326, true),
            sample(10_060, 356, true),
        ];
        let seen = BTreeMap::from([(1, 10), (2, 30), (9, 50), (4, 99)]);
        let kept = rate_kept(&samples, &seen);
        assert_eq!(
            kept,
            RateKept {
                ms: 3_000,
                made: 135,
                seen: 90,
                seen_s: 3,
            }
        );
        let (made, seen) = kept.per_min().expect("bound spans were sampled");
        assert!((made - 2_700.0).abs() < 1e-9);
        assert!((seen - 1_800.0).abs() < 1e-9);
        let p = Partial {
            meter_samples: samples.to_vec(),
            offers_by_s: seen_by_s_in_minutes(),
            ..Partial::default()
        };
        let minutes = timeline(&p);
        assert_eq!(minutes.len(), 2);
        assert_eq!(minutes[0].offers_made, 356);
        assert_eq!((minutes[0].rate_bound_s, minutes[0].sampled_s), (6, 7));
        assert_eq!(
            (
                minutes[0].held_by_backpressure_s,
                minutes[0].slowed_by_backpressure_s
            ),
            (1, 1)
        );
        assert_eq!(minutes[1].offers, 7);
    }

    fn seen_by_s_in_minutes() -> BTreeMap<u64, u64> {
        BTreeMap::from([(5, 3), (61, 7)])
    }
}
