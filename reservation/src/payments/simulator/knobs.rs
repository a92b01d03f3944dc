//! The simulator's run-time knobs, set globally (in-process or through `POST /_sim/knobs`).

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Knobs {
    /// Every call waits a uniform draw in `latency_min_ms..=latency_max_ms`.
    pub latency_min_ms: u64,
    pub latency_max_ms: u64,
    /// How long `pm_card_slow` takes to answer (after the intent exists).
    pub slow_ms: u64,
    /// Chance that an otherwise good card is declined.
    pub decline_rate: f64,
    /// Chance that a POST takes effect but its answer is lost.
    pub lost_rate: f64,
    /// Chance that a call answers 500 and changes nothing.
    pub error_rate: f64,
    /// Where webhooks go; `None` sends none.
    pub webhook_url: Option<String>,
    pub webhook_delay_ms: u64,
    /// Chance that a webhook is delivered twice (same event id).
    pub webhook_duplicate_rate: f64,
    /// Deliver events in swapped pairs: each event waits up to `reorder_window_ms` for the
    /// next one and is delivered after it.
    pub webhook_out_of_order: bool,
    pub reorder_window_ms: u64,
}

impl Default for Knobs {
    fn default() -> Self {
        Self {
            latency_min_ms: 0,
            latency_max_ms: 0,
            slow_ms: 1_500,
            decline_rate: 0.0,
            lost_rate: 0.0,
            error_rate: 0.0,
            webhook_url: None,
            webhook_delay_ms: 0,
            webhook_duplicate_rate: 0.0,
            webhook_out_of_order: false,
            reorder_window_ms: 200,
        }
    }
}

/// A partial update: absent fields keep their value; `webhook_url: ""` clears the URL.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct KnobsPatch {
    pub latency_min_ms: Option<u64>,
    pub latency_max_ms: Option<u64>,
    pub slow_ms: Option<u64>,
    pub decline_rate: Option<f64>,
    pub lost_rate: Option<f64>,
    pub error_rate: Option<f64>,
    pub webhook_url: Option<String>,
    pub webhook_delay_ms: Option<u64>,
    pub webhook_duplicate_rate: Option<f64>,
    pub webhook_out_of_order: Option<bool>,
    pub reorder_window_ms: Option<u64>,
}

impl Knobs {
    pub(crate) fn apply(&mut self, p: &KnobsPatch) {
        fn set<T: Clone>(slot: &mut T, v: &Option<T>) {
            if let Some(v) = v {
                *slot = v.clone();
            }
        }
        set(&mut self.latency_min_ms, &p.latency_min_ms);
        set(&mut self.latency_max_ms, &p.latency_max_ms);
        set(&mut self.slow_ms, &p.slow_ms);
        set(&mut self.decline_rate, &p.decline_rate);
        set(&mut self.lost_rate, &p.lost_rate);
        set(&mut self.error_rate, &p.error_rate);
        set(&mut self.webhook_delay_ms, &p.webhook_delay_ms);
        set(&mut self.webhook_duplicate_rate, &p.webhook_duplicate_rate);
        set(&mut self.webhook_out_of_order, &p.webhook_out_of_order);
        set(&mut self.reorder_window_ms, &p.reorder_window_ms);
        if let Some(url) = &p.webhook_url {
            self.webhook_url = (!url.is_empty()).then(|| url.clone());
        }
        if self.latency_max_ms < self.latency_min_ms {
            self.latency_max_ms = self.latency_min_ms;
        }
    }
}
