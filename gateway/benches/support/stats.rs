//! Percentiles and formatting for the summary tables.

use std::time::Duration;

/// The `q`-quantile (0..=1) of sorted samples, nearest rank.
pub fn quantile<T: Copy>(sorted: &[T], q: f64) -> Option<T> {
    if sorted.is_empty() {
        return None;
    }
    let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    Some(sorted[rank - 1])
}

pub fn ms(d: Option<Duration>) -> String {
    d.map_or_else(
        || "-".to_owned(),
        |d| format!("{:.0}", d.as_secs_f64() * 1e3),
    )
}

pub fn kib(bytes: f64) -> String {
    format!("{:.2}", bytes / 1024.0)
}

pub fn verdict(ok: bool) -> &'static str {
    if ok { "met" } else { "NOT MET" }
}

/// The median of a few rounds' figures.
pub fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values.get(values.len() / 2).copied().unwrap_or(0.0)
}
