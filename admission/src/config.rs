//! Admission's settings; the gateway fills them from its `Config`.

use std::time::Duration;

use crate::clock::Clock;
use crate::token::KeyRing;

#[derive(Clone, Debug)]
pub struct AdmissionConfig {
    pub keys: KeyRing,
    pub clock: Clock,
    /// Queue tokens outlive any realistic wait (a place is kept across reconnects).
    pub queue_token_ttl_s: i64,
    /// Joins per client address per minute (`FLOODGATE_JOIN_LIMIT_PER_MIN`); 0 = no limit.
    pub join_limit_per_min: u32,
    /// How often `run_meter` ticks each event; keep it under the meter's 250 ms tolerance.
    pub tick_interval: Duration,
    /// After a Redis loss, new join sequences start this far past the checkpoint, so nobody
    /// who joined after the last checkpoint is overtaken.
    pub recovery_margin: u64,
    /// After a Redis loss, offers wait this long while returning tokens re-register, and then
    /// until 5 s have passed without a return (at most six times this long in all).
    pub reconnect_grace: Duration,
    /// How often a tick writes the checkpoint to the database.
    pub checkpoint_every: Duration,
    /// Extra trusted CA certificates (PEM) for `rediss://`, beside the platform's roots.
    pub tls_ca_pem: Option<Vec<u8>>,
    /// Reads per second of the queue snapshot and status that the front (a CDN, the proxy or
    /// the gateways themselves) answers waiting buyers. Every waiting page reads again within
    /// `waiting ÷ this` seconds (`Snapshot::read_within_s`), so what concerns everyone (sold
    /// out, a pause) reaches the whole crowd in that time, at this many reads a second.
    pub waiting_reads_per_s: u32,
}

impl AdmissionConfig {
    pub fn new(keys: KeyRing) -> Self {
        AdmissionConfig {
            keys,
            clock: Clock::system(),
            queue_token_ttl_s: 24 * 3600,
            join_limit_per_min: 60,
            tick_interval: Duration::from_millis(100),
            recovery_margin: 100_000,
            reconnect_grace: Duration::from_secs(10),
            checkpoint_every: Duration::from_secs(1),
            tls_ca_pem: None,
            waiting_reads_per_s: 10_000,
        }
    }
}
