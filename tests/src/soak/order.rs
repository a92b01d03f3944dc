//! A buyer's place in the queue, from its own token: pre-queue arrivals are ordered by the
//! revealed seed's HMAC of their ticket id, later ones by join sequence behind them. Each is
//! turned into a key that sorts as the queue does, so "offers in queue order" becomes: every
//! buyer offered sorts before every buyer still waiting when the queue sold out.

use base64::Engine;
use serde::Deserialize;

#[derive(Debug, Clone, Deserialize)]
pub struct QueuePlace {
    #[serde(rename = "tid")]
    pub ticket_id: String,
    pub seq: u64,
    #[serde(rename = "pre")]
    pub pre_queue: bool,
}

/// Reads the (unverified) claims of a queue token: the soak only needs its own place.
pub fn place(queue_token: &str) -> Option<QueuePlace> {
    let payload = queue_token.split('.').nth(1)?;
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(payload.trim_end_matches('='))
        .ok()?;
    serde_json::from_slice(&bytes).ok()
}

/// The sort key of a place, given the event's revealed fairness seed.
pub fn key(place: &QueuePlace, seed: &str) -> String {
    if place.pre_queue {
        let rank = admission::rank_key(seed, &place.ticket_id);
        let hex: String = rank.iter().map(|b| format!("{b:02x}")).collect();
        format!("0:{hex}")
    } else {
        format!("1:{:020}", place.seq)
    }
}
