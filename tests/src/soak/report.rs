//! The end of a run: figures from the merged partial reports, the CPU split and the verdict,
//! as a table on the terminal and as JSON.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use super::cpu::CpuSplit;
use super::figures::{ChanceTenth, Figure, Minute, PlaceChance, ShownRange, Storm};
use super::stats::{MeterSample, Partial};
use super::verdict::Verdict;

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Latency {
    pub count: u64,
    pub p50_ms: u64,
    pub p90_ms: u64,
    pub p99_ms: u64,
    pub max_ms: u64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Report {
    pub event: String,
    pub scenario: serde_json::Value,
    pub wall_s: f64,
    pub arrivals: u64,
    pub joins_per_s: f64,
    pub admissions_per_s: f64,
    /// A bare axum route returning a join's bytes, hammered by the same client in this run.
    pub baseline_joins_per_s: Option<f64>,
    pub latency: BTreeMap<String, Latency>,
    /// From the first buyer told "sold out" to the last (all waiting buyers).
    pub sold_out_spread: Option<Latency>,
    pub eta_honesty: Option<f64>,
    pub eta_samples: u64,
    pub outcomes: BTreeMap<String, u64>,
    pub counts: BTreeMap<String, u64>,
    pub errors: BTreeMap<String, u64>,
    pub cpu: CpuSplit,
    pub final_stats: serde_json::Value,
    /// The storm's figures, each against its target (`figures.rs`).
    #[serde(default)]
    pub figures: Vec<Figure>,
    /// Offers seen per minute, with the seconds in which only the rate held them back.
    #[serde(default)]
    pub offers_timeline: Vec<Minute>,
    /// Per tenth of the first chance of a seat stated, the share of buyers who reached one.
    #[serde(default)]
    pub seat_chance_calibration: Vec<ChanceTenth>,
    /// The first chance stated and the share reaching a seat, by place in the whole line.
    #[serde(default)]
    pub seat_chance_by_place: Vec<PlaceChance>,
    /// Offered buyers' first wait ranges by when they were shown.
    #[serde(default)]
    pub first_range_by_shown: Vec<ShownRange>,
    /// The organizer's stats about once a second: offers made, what held them back, and the
    /// counts behind the chance of a seat.
    #[serde(default)]
    pub meter_timeline: Vec<MeterSample>,
    pub verdict: Verdict,
}

fn latency(h: &hdrhistogram::Histogram<u64>, shift: u64) -> Latency {
    Latency {
        count: h.len(),
        p50_ms: h.value_at_quantile(0.5).saturating_sub(shift),
        p90_ms: h.value_at_quantile(0.9).saturating_sub(shift),
        p99_ms: h.value_at_quantile(0.99).saturating_sub(shift),
        max_ms: h.max().saturating_sub(shift),
    }
}

pub struct Inputs {
    pub event: String,
    pub scenario: serde_json::Value,
    pub wall_s: f64,
    pub arrivals: u64,
    pub baseline_joins_per_s: Option<f64>,
    pub cpu: CpuSplit,
    pub final_stats: serde_json::Value,
    pub storm: Storm,
    pub verdict: Verdict,
}

pub fn build(p: &Partial, inputs: Inputs) -> Report {
    let rate = |span: Option<(u64, u64)>, n: u64| match span {
        Some((a, b)) if b > a => n as f64 / ((b - a) as f64 / 1000.0),
        _ => 0.0,
    };
    let mut latency_map = BTreeMap::new();
    for name in super::stats::HISTOGRAMS {
        if matches!(
            name,
            "sold_out_learned_at_ms" | "eta_ratio_pct" | "eta_actual_pct"
        ) {
            continue;
        }
        let h = p.histogram(name);
        if !h.is_empty() {
            latency_map.insert(name.trim_end_matches("_ms").to_owned(), latency(&h, 0));
        }
    }
    let learned = p.histogram("sold_out_learned_at_ms");
    let sold_out_spread = (!learned.is_empty()).then(|| latency(&learned, learned.min()));
    let (outcomes, counts) = p
        .counts
        .iter()
        .map(|(k, v)| (k.clone(), *v))
        .partition(|(k, _)| k.starts_with("outcome_"));
    Report {
        event: inputs.event,
        scenario: inputs.scenario,
        wall_s: inputs.wall_s,
        arrivals: inputs.arrivals,
        joins_per_s: rate(p.join_span_ms, p.histogram("join_ms").len()),
        admissions_per_s: rate(p.admit_span_ms, p.sessions_claimed),
        baseline_joins_per_s: inputs.baseline_joins_per_s,
        latency: latency_map,
        sold_out_spread,
        eta_honesty: (p.eta_given > 0).then(|| p.eta_inside as f64 / p.eta_given as f64),
        eta_samples: p.eta_given,
        outcomes,
        counts,
        errors: p.errors.clone(),
        cpu: inputs.cpu,
        final_stats: inputs.final_stats,
        figures: inputs.storm.figures,
        offers_timeline: inputs.storm.offers_timeline,
        seat_chance_calibration: inputs.storm.seat_chance_calibration,
        seat_chance_by_place: inputs.storm.seat_chance_by_place,
        first_range_by_shown: inputs.storm.first_range_by_shown,
        meter_timeline: p.meter_samples.clone(),
        verdict: inputs.verdict,
    }
}

impl Report {
    /// The readable table.
    pub fn table(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(s, "\n== Floodgate soak: event {} ==", self.event);
        let _ = writeln!(
            s,
            "arrivals {}  wall {:.1}s  joins/s {:.0}  admissions/s {:.1}{}",
            self.arrivals,
            self.wall_s,
            self.joins_per_s,
            self.admissions_per_s,
            self.baseline_joins_per_s
                .map(|b| format!(
                    "  (bare axum route: {b:.0} req/s, ratio {:.2})",
                    self.joins_per_s / b.max(1.0)
                ))
                .unwrap_or_default()
        );
        let _ = writeln!(
            s,
            "\n{:<26}{:>9}{:>9}{:>9}{:>9}{:>9}",
            "latency (ms)", "count", "p50", "p90", "p99", "max"
        );
        let rows = self.latency.iter().map(|(k, v)| (k.as_str(), v)).chain(
            self.sold_out_spread
                .as_ref()
                .map(|v| ("sold_out_learned_after", v)),
        );
        for (name, l) in rows {
            let _ = writeln!(
                s,
                "{name:<26}{:>9}{:>9}{:>9}{:>9}{:>9}",
                l.count, l.p50_ms, l.p90_ms, l.p99_ms, l.max_ms
            );
        }
        let _ = writeln!(
            s,
            "\nETA honesty: {} of {} buyers waited within the range shown",
            self.eta_honesty
                .map(|h| format!("{:.1}%", h * 100.0))
                .unwrap_or_else(|| "-".into()),
            self.eta_samples
        );
        if !self.figures.is_empty() {
            let _ = writeln!(s, "\nthe storm's figures (target; met?):");
        }
        for f in &self.figures {
            let met = match f.met {
                Some(true) => "met",
                Some(false) => "MISSED",
                None => "-",
            };
            let _ = writeln!(
                s,
                "  [{met:^6}] {}: {} (target {})",
                f.name, f.value, f.target
            );
        }
        if !self.offers_timeline.is_empty() {
            let _ = writeln!(
                s,
                "offers per minute (minute: made by the meter, seen by buyers, rate-bound s / \
                 sampled s):"
            );
            for m in &self.offers_timeline {
                let _ = writeln!(
                    s,
                    "  {:>3}: {:>7} {:>7}  {:>2}/{:>2}",
                    m.minute, m.offers_made, m.offers, m.rate_bound_s, m.sampled_s
                );
            }
        }
        for t in &self.seat_chance_calibration {
            let _ = writeln!(
                s,
                "  chance {}: {} of {} buyers reached a seat ({:.0} %), {} claimed their offer",
                t.stated,
                t.reached_seat,
                t.buyers,
                t.share * 100.0,
                t.claimed
            );
        }
        let _ = writeln!(s, "\noutcomes:");
        for (k, v) in &self.outcomes {
            let _ = writeln!(s, "  {:<34}{v:>9}", k.trim_start_matches("outcome_"));
        }
        let _ = writeln!(s, "counts:");
        for (k, v) in &self.counts {
            let _ = writeln!(s, "  {k:<34}{v:>9}");
        }
        let _ = writeln!(s, "errors by code:");
        if self.errors.is_empty() {
            let _ = writeln!(s, "  none");
        }
        for (k, v) in &self.errors {
            let _ = writeln!(s, "  {k:<34}{v:>9}");
        }
        let _ = writeln!(s, "\nCPU seconds:");
        let _ = writeln!(
            s,
            "  {:<34}{:>9.1}",
            "soak (incl. workers)", self.cpu.soak_s
        );
        for (k, v) in &self.cpu.servers {
            let _ = writeln!(s, "  {k:<34}{v:>9.1}");
        }
        let _ = writeln!(
            s,
            "\nverdict: {}",
            if self.verdict.clean {
                "CLEAN"
            } else {
                "BREACHED"
            }
        );
        for c in &self.verdict.checks {
            let _ = writeln!(
                s,
                "  [{}] {} — {}",
                if c.ok { "ok" } else { "FAIL" },
                c.name,
                c.detail
            );
            for b in &c.breaches {
                let _ = writeln!(s, "        {b}");
            }
        }
        s
    }
}
