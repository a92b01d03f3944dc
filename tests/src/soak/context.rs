//! What every buyer task of one worker shares: the network, the stats, the event, the clock
//! of the run and the flag that says the event has finally sold out.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use reqwest::Method;
use tokio::sync::OnceCell;
use tokio::time::Instant;

use super::client::{Answer, Call, Net};
use super::config::Config;
use super::plan::{Plan, SeatPicker};
use super::seat_map::SeatMap;
use super::stats::Stats;

/// What one buyer met after its admission (for "admitted buyers who hit a 503 or lose their
/// hold", the figure backpressure is judged by); set by `call_with`, read in `buyer::run`.
#[derive(Clone, Copy, Default)]
pub struct AfterAdmission {
    pub admitted: bool,
    pub met_503: bool,
    /// Won a hold: the buyer reached a seat (for the chance-of-a-seat calibration).
    pub held: bool,
}

tokio::task_local! {
    pub static AFTER_ADMISSION: std::cell::Cell<AfterAdmission>;
}

pub struct Ctx {
    pub net: Arc<Net>,
    pub stats: Arc<Stats>,
    pub event: String,
    /// The run's start, as this process's monotonic clock and as UNIX ms (shared by workers).
    pub start: Instant,
    pub start_ms: u64,
    pub deadline: Instant,
    pub picker: SeatPicker,
    pub section: String,
    pub max_hold: Duration,
    /// How long an offer waits to be claimed.
    pub offer: Duration,
    /// How long a paying hold may take to settle, as seen by the buyer.
    pub pay_patience: Duration,
    /// The revealed fairness seed (fetched once, after opening).
    pub seed: OnceCell<String>,
    /// Set once nothing is available, held or paying: no seat can come back.
    pub sold_out: AtomicBool,
    /// The last seat map read, for conditional reads.
    pub seat_map: SeatMap,
}

pub fn unix_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

impl Ctx {
    pub fn new(
        config: &Config,
        net: Arc<Net>,
        stats: Arc<Stats>,
        start_ms: u64,
        picker: SeatPicker,
    ) -> Ctx {
        // The worker may start after the run's start (a re-executed process): line the
        // monotonic clock up with the shared wall-clock start.
        let behind = Duration::from_millis(unix_ms().saturating_sub(start_ms));
        let start = Instant::now()
            .checked_sub(behind)
            .unwrap_or_else(Instant::now);
        Ctx {
            net,
            stats,
            event: config.event.clone(),
            start,
            start_ms,
            deadline: start + Duration::from_secs(config.max_duration_s),
            section: section(config).to_owned(),
            picker,
            max_hold: Duration::from_secs(u64::from(config.max_hold_s)),
            offer: Duration::from_secs(u64::from(config.offer_s)),
            pay_patience: Duration::from_secs(u64::from(config.abandon_s + config.resolve_s) + 30),
            seed: OnceCell::new(),
            sold_out: AtomicBool::new(false),
            seat_map: SeatMap::default(),
        }
    }

    /// Milliseconds since the run's start.
    pub fn now_ms(&self) -> u64 {
        self.start.elapsed().as_millis() as u64
    }

    pub fn live(&self) -> &super::stats::Live {
        &self.stats.live
    }

    pub fn is_sold_out(&self) -> bool {
        self.sold_out.load(Ordering::Relaxed)
    }

    /// A buyer's request; transport failures and error answers are counted by code.
    pub async fn call(
        &self,
        plan: &Plan,
        method: Method,
        path: &str,
        bearer: Option<&str>,
        idempotency_key: Option<&str>,
        json: Option<&serde_json::Value>,
    ) -> Option<Answer> {
        self.call_with(plan, method, path, bearer, idempotency_key, json, None)
            .await
    }

    /// `call` with a receipt key instead of (or beside) a bearer token.
    #[allow(clippy::too_many_arguments)]
    pub async fn call_with(
        &self,
        plan: &Plan,
        method: Method,
        path: &str,
        bearer: Option<&str>,
        idempotency_key: Option<&str>,
        json: Option<&serde_json::Value>,
        receipt: Option<&str>,
    ) -> Option<Answer> {
        self.send(Call {
            method,
            gateway: plan.gateway,
            path,
            bearer,
            idempotency_key,
            forwarded_for: plan.forwarded_for,
            json,
            receipt,
            if_none_match: None,
            raw: false,
            near_front: false,
        })
        .await
    }

    /// Sends a prepared call, counting error answers by code and a 503 met after admission.
    pub async fn send(&self, call: Call<'_>) -> Option<Answer> {
        let kind = call_kind(&call);
        match self.net.send(call).await {
            Ok(a) => {
                if a.status.as_u16() == 503 {
                    let admitted = AFTER_ADMISSION
                        .try_with(|c| {
                            let mut f = c.get();
                            // Refused for load while holding the admission token: what the
                            // gateway promises never to do. Public reads (the seat map) and a
                            // second tab's claim carry no admission token and are counted apart.
                            f.met_503 |= f.admitted && kind == "admission_token";
                            c.set(f);
                            f.admitted
                        })
                        .unwrap_or(false);
                    if admitted {
                        self.stats.count(&format!("admitted_503_on_{kind}"));
                    }
                }
                if !a.status.is_success() && a.status.as_u16() != 304 {
                    self.stats.error(&a.code());
                }
                Some(a)
            }
            Err(kind) => {
                self.stats.error(&kind);
                None
            }
        }
    }

    /// The fairness seed, once the queue has opened (`None` before or on failure).
    pub async fn fairness_seed(&self, plan: &Plan) -> Option<String> {
        if let Some(s) = self.seed.get() {
            return Some(s.clone());
        }
        let path = format!("/api/events/{}/fairness", self.event);
        let answer = self
            .call(plan, Method::GET, &path, None, None, None)
            .await?;
        let seed = answer.body.get("seed")?.as_str()?.to_owned();
        let _ = self.seed.set(seed.clone());
        Some(seed)
    }
}

/// What a call carries, for counting the 503s admitted buyers meet: their admission token
/// (holds, checkout, session, their hold and order), a receipt key, or nothing the gateway
/// could tell an admitted buyer by (public reads, a claim with the queue token).
fn call_kind(call: &Call<'_>) -> &'static str {
    if call.path.ends_with("/queue/claim") || call.path.ends_with("/queue/status") {
        "queue_token"
    } else if call.bearer.is_some() {
        "admission_token"
    } else if call.receipt.is_some() {
        "receipt"
    } else if call.path.ends_with("/seats") {
        "seat_map"
    } else {
        "public_read"
    }
}

/// The section seats are created in.
pub fn section(config: &Config) -> &'static str {
    match config.seats {
        super::config::SeatChoice::Named => "S",
        super::config::SeatChoice::Ga => "GA",
    }
}
