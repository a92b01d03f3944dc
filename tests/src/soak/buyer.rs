//! One buyer's journey up to a session: arrive on time (open loop), join, wait for the turn,
//! claim it (twice from two tabs), then hand over to `purchase`.

use std::cell::Cell;
use std::sync::atomic::Ordering;
use std::time::Duration;

use reqwest::Method;
use serde_json::Value;
use tokio::time::Instant;

use super::context::{AFTER_ADMISSION, AfterAdmission, Ctx};
use super::order;
use super::plan::{Leave, Plan};
use super::purchase;
use super::stats::{ChanceSeen, FirstRange, Live};
use super::waiting::{Turn, Waiter, claim_on_socket};

/// Runs one buyer to the end of its journey or the run's deadline.
pub async fn run(ctx: &Ctx, plan: Plan) {
    tokio::time::sleep_until(ctx.start + plan.arrive_after).await;
    Live::add(&ctx.live().arrived);
    let (outcome, after) = AFTER_ADMISSION
        .scope(Cell::new(AfterAdmission::default()), async {
            let outcome = tokio::time::timeout_at(ctx.deadline, journey(ctx, &plan)).await;
            (outcome, AFTER_ADMISSION.with(Cell::get))
        })
        .await;
    let (name, chance, place) = match outcome {
        Ok(journey) => journey,
        Err(_) => ("unfinished", None, None),
    };
    // Calibration of the chance of a seat: only buyers who stayed for their turn tried to
    // reach one.
    if plan.leave == Leave::Stays
        && let Some(stated) = chance
    {
        ctx.stats.chance(
            stated,
            ChanceSeen {
                claimed: after.admitted,
                reached: after.held,
                place,
                outcome: name,
            },
        );
    }
    ctx.stats.count(&format!("outcome_{name}"));
    // Per gateway: the buyers of a gateway killed mid-run must end like the others.
    ctx.stats
        .count(&format!("gateway{}_outcome_{name}", plan.gateway));
    if after.admitted {
        let lost_hold = matches!(
            name,
            "checkout_refused" | "payment_ended_without_sale" | "payment_unresolved" | "unfinished"
        );
        if after.met_503 {
            ctx.stats.count("admitted_met_503");
        }
        if lost_hold {
            ctx.stats.count("admitted_lost_hold");
        }
        if after.met_503 || lost_hold {
            ctx.stats.count("admitted_hurt");
        }
    }
    Live::add(&ctx.live().done);
}

/// The outcome, the first chance of a seat the buyer was shown while waiting (`None` if it
/// heard none; `Some(None)` if it was shown as unknown), and its place in the whole line then.
type Journey = (&'static str, Option<Option<f64>>, Option<u64>);

async fn journey(ctx: &Ctx, plan: &Plan) -> Journey {
    let Some(joined) = join(ctx, plan).await else {
        return ("join_failed", None, None);
    };
    if joined.sold_out {
        learned_sold_out(ctx);
        return ("sold_out_at_join", None, None);
    }
    let place = order::place(&joined.token);
    if let Some(place) = &place
        && !place.pre_queue
    {
        let planned_ms = plan.arrive_after.as_millis() as u64;
        ctx.stats
            .arrival(planned_ms, joined.sent_ms, place.seq, &joined.key);
    }
    let mut waiter = Waiter {
        ctx,
        plan,
        token: &joined.token,
        eta: joined.eta,
        chance: joined.chance,
        chance_place: None,
        told_waiting: joined.told_place,
        unanswered: false,
        first_read_at: joined.first_read_at,
    };
    let outcome = wait_and_buy(ctx, plan, &joined, &mut waiter, place).await;
    (outcome, waiter.chance, waiter.chance_place)
}

async fn wait_and_buy(
    ctx: &Ctx,
    plan: &Plan,
    joined: &Joined,
    waiter: &mut Waiter<'_>,
    place: Option<order::QueuePlace>,
) -> &'static str {
    Live::gauge(&ctx.live().waiting, 1);
    let waited_from = Instant::now();
    let turn = waiter.wait().await;
    let (eta, told_waiting, unanswered) = (waiter.eta, waiter.told_waiting, waiter.unanswered);
    Live::gauge(&ctx.live().waiting, -1);
    let (ws, offer_left_s) = match turn {
        Turn::Offered(ws, left) => (ws, left),
        Turn::Lapsed => {
            ctx.stats.offered_at(ctx.now_ms());
            offered(ctx, plan, place.as_ref()).await;
            return "lapsed_unseen";
        }
        other => {
            unoffered(ctx, plan, place.as_ref()).await;
            return match other {
                Turn::SoldOut => {
                    learned_sold_out(ctx);
                    "sold_out"
                }
                Turn::Closed => "closed",
                _ => "timed_out_waiting",
            };
        }
    };
    Live::add(&ctx.live().offered);
    ctx.stats.offered_at(ctx.now_ms());
    offered(ctx, plan, place.as_ref()).await;
    let waited = waited_from.elapsed();
    ctx.stats.record("queue_wait_ms", waited.as_millis() as u64);
    // How long after the offer was made the buyer saw it, from the offer's time left (whole
    // seconds).
    let late = offer_left_s.map(|left| (ctx.offer.as_secs_f64() - left as f64).max(0.0));
    let seen_ms = ctx.now_ms();
    let made_ms = late.map(|late| seen_ms.saturating_sub((late * 1000.0) as u64));
    // The real wait, from when the first range was shown to when the offer was seen.
    let since_shown = eta.map(|e| e.at.elapsed());
    let shown_ms = since_shown.map(|d| seen_ms.saturating_sub(d.as_millis() as u64));
    if let (Some(eta), Some(since_shown), Some(shown_ms)) = (eta, since_shown, shown_ms) {
        let actual = since_shown.as_secs_f64();
        // Whole seconds are what the buyer is shown: one second either side is the rounding.
        let inside = actual + 1.0 >= eta.low_s as f64 && actual <= eta.high_s as f64 + 1.0;
        // How wide the range was: high ÷ low in hundredths (a range from 0 counts as ×100).
        let ratio = (eta.high_s * 100).checked_div(eta.low_s).unwrap_or(10_000);
        ctx.stats.record("eta_ratio_pct", ratio);
        // The point the range was drawn around; where the source gave none, the harmonic mean
        // of its ends (the range is the point ÷ and × the same factor, short waits aside).
        let (low, high) = (eta.low_s.max(1) as f64, eta.high_s.max(1) as f64);
        let point = eta
            .point_s
            .map_or(2.0 / (1.0 / low + 1.0 / high), |p| p.max(1) as f64);
        ctx.stats
            .record("eta_actual_pct", (actual * 100.0 / point).round() as u64);
        ctx.stats
            .eta(inside, shown_ms, actual / point, ratio as f64 / 100.0);
        // The same range against when the offer was made: the wait without the buyer's own
        // read interval.
        if let Some(late) = late {
            ctx.stats
                .record("offer_seen_late_ms", (late * 1000.0) as u64);
            let made = (actual - late).max(0.0);
            ctx.stats
                .eta_made(made + 1.0 >= eta.low_s as f64 && made <= eta.high_s as f64 + 1.0);
        }
    } else {
        // Offered at the first word after joining or the opening: never told a place, so no
        // wait was there to show; counted apart from the buyers told "not known yet" (or left
        // unanswered, which count with them).
        ctx.stats.count(if told_waiting || unanswered {
            "offered_without_range"
        } else {
            "offered_at_first_word"
        });
    }
    ctx.stats.first_range(FirstRange {
        shown_ms,
        point_s: eta.and_then(|e| e.point_s),
        low_s: eta.map(|e| e.low_s),
        high_s: eta.map(|e| e.high_s),
        seen_ms,
        made_ms,
        told_waiting,
        unanswered,
    });
    if plan.leave == Leave::AtOffer {
        if let Some(mut ws) = ws {
            let _ = futures::SinkExt::close(&mut ws).await;
        }
        return "left_at_offer";
    }
    let Some(token) = claim(ctx, plan, &joined.token, ws).await else {
        return "claim_failed";
    };
    if plan.leave == Leave::AfterClaim {
        return "left_after_claim";
    }
    purchase::run(ctx, plan, &token).await
}

struct Joined {
    token: String,
    /// The join's Idempotency-Key, the same on every retry: the door log names it.
    key: String,
    /// When the first join request left for the gateway, ms since the run's start.
    sent_ms: u64,
    sold_out: bool,
    eta: Option<super::waiting::Eta>,
    /// The chance shown with the join's answer, as `Waiter::chance`.
    chance: Option<Option<f64>>,
    /// Whether the join's answer told the buyer its place (waiting or paused).
    told_place: bool,
    /// When the page reads first: the join's answer asked it to wait (`retry_after_s`).
    first_read_at: Option<Instant>,
}

async fn join(ctx: &Ctx, plan: &Plan) -> Option<Joined> {
    let path = format!("/api/events/{}/queue", ctx.event);
    // One key for the buyer's retries: a join whose answer was lost returns the same ticket.
    let key = uuid::Uuid::new_v4().to_string();
    // When the first request reached the door: the buyer's arrival as the gateway can see it.
    let mut first_sent = None;
    // A browser keeps trying while the gateway sheds load; the run's deadline bounds it.
    for _ in 0..60 {
        let asked = Instant::now();
        let answer = ctx
            .call(plan, Method::POST, &path, None, Some(&key), None)
            .await;
        if let Some(a) = &answer {
            first_sent.get_or_insert(a.sent);
        }
        let sent_ms = first_sent.map_or(0, |s| s.duration_since(ctx.start).as_millis() as u64);
        match answer {
            Some(a) if a.status.as_u16() == 201 => {
                ctx.stats
                    .record("join_ms", asked.elapsed().as_millis() as u64);
                let arrived_ms = plan.arrive_after.as_millis() as u64;
                ctx.stats.record(
                    "arrival_to_token_ms",
                    ctx.now_ms().saturating_sub(arrived_ms),
                );
                ctx.stats.joined_at(ctx.now_ms());
                Live::add(&ctx.live().joined);
                let token = a.body.get("queue_token")?.as_str()?.to_owned();
                let chance = (a.body.get("status").and_then(Value::as_str) == Some("waiting"))
                    .then(|| a.body.get("seat_chance").and_then(Value::as_f64));
                // The page shows the join's range at once (a bare point only from a server
                // that sends no range, shown as the page widens it).
                let eta = super::waiting::eta_from_status(&a.body).or_else(|| {
                    a.body
                        .get("estimated_wait_s")
                        .and_then(Value::as_u64)
                        .map(super::waiting::eta_from_point)
                });
                return Some(Joined {
                    token,
                    key,
                    sent_ms,
                    sold_out: false,
                    eta,
                    chance,
                    told_place: a.body.get("position").is_some_and(|p| !p.is_null()),
                    first_read_at: a
                        .body
                        .get("retry_after_s")
                        .and_then(Value::as_u64)
                        .map(|s| Instant::now() + super::waiting::page_wait(s)),
                });
            }
            Some(a) if a.code() == "sold_out" => {
                return Some(Joined {
                    token: String::new(),
                    key,
                    sent_ms,
                    sold_out: true,
                    eta: None,
                    chance: None,
                    told_place: false,
                    first_read_at: None,
                });
            }
            Some(a) if matches!(a.status.as_u16(), 429 | 503) => {
                if a.code() == "overloaded" {
                    ctx.stats.count("join_overloaded");
                }
                // As a browser would: the gateway's Retry-After grows with the crowd it sheds.
                let wait = a.retry_after_s.unwrap_or(1).clamp(1, 120);
                tokio::time::sleep(Duration::from_secs(wait)).await;
            }
            Some(_) => return None,
            None => tokio::time::sleep(Duration::from_millis(500)).await,
        }
    }
    None
}

fn learned_sold_out(ctx: &Ctx) {
    Live::add(&ctx.live().sold_out_notices);
    ctx.stats.record("sold_out_learned_at_ms", ctx.now_ms());
}

async fn offered(ctx: &Ctx, plan: &Plan, place: Option<&order::QueuePlace>) {
    if let (Some(place), Some(seed)) = (place, ctx.fairness_seed(plan).await) {
        ctx.stats.offered_key(&order::key(place, &seed));
    }
}

async fn unoffered(ctx: &Ctx, plan: &Plan, place: Option<&order::QueuePlace>) {
    // Only a queue that sold out for good says who was never reached.
    if !ctx.sold_out.load(Ordering::Relaxed) {
        return;
    }
    if let (Some(place), Some(seed)) = (place, ctx.fairness_seed(plan).await) {
        ctx.stats.unoffered_key(&order::key(place, &seed));
    }
}

/// Claims the offer (on the socket when there is one); two tabs claim twice and must get the
/// same session. Returns the admission token.
async fn claim(
    ctx: &Ctx,
    plan: &Plan,
    queue_token: &str,
    ws: Option<Box<super::client::Socket>>,
) -> Option<String> {
    let asked = Instant::now();
    let first = match ws {
        Some(mut ws) => {
            let heard = claim_on_socket(&mut ws).await;
            let _ = futures::SinkExt::close(&mut ws).await;
            match heard {
                Ok(m) => Some(m),
                Err(code) => {
                    ctx.stats.error(&code);
                    None
                }
            }
        }
        None => None,
    };
    let path = format!("/api/events/{}/queue/claim", ctx.event);
    let first = match first {
        Some(m) => m,
        None => claim_http(ctx, plan, &path, queue_token).await?,
    };
    ctx.stats
        .record("claim_ms", asked.elapsed().as_millis() as u64);
    let token = first.get("admission_token")?.as_str()?.to_owned();
    let session = first
        .get("session_id")
        .and_then(Value::as_str)
        .map(str::to_owned);
    Live::add(&ctx.live().admitted);
    let _ = AFTER_ADMISSION.try_with(|c| {
        c.set(AfterAdmission {
            admitted: true,
            ..c.get()
        })
    });
    ctx.stats.admitted_at(ctx.now_ms());
    if plan.two_tabs {
        let again = claim_http(ctx, plan, &path, queue_token).await;
        let other = again
            .as_ref()
            .and_then(|m| m.get("session_id"))
            .and_then(Value::as_str);
        if other.is_some() && other != session.as_deref() {
            ctx.stats.mismatch(format!(
                "buyer {}: claimed twice, sessions {session:?} and {other:?}",
                plan.index
            ));
        }
        ctx.stats.count("two_tab_claims");
    }
    Some(token)
}

async fn claim_http(ctx: &Ctx, plan: &Plan, path: &str, queue_token: &str) -> Option<Value> {
    for _ in 0..5 {
        match ctx
            .call(plan, Method::POST, path, Some(queue_token), None, None)
            .await
        {
            Some(a) if a.status.is_success() => return Some(a.body),
            Some(a) if matches!(a.status.as_u16(), 429 | 503) => {
                if a.status.as_u16() == 503 {
                    // Offered, so owed a real answer like an admitted buyer.
                    ctx.stats.count("offered_claim_503");
                }
                tokio::time::sleep(Duration::from_secs(
                    a.retry_after_s.unwrap_or(1).clamp(1, 5),
                ))
                .await;
            }
            Some(_) => return None,
            None => tokio::time::sleep(Duration::from_millis(300)).await,
        }
    }
    None
}
