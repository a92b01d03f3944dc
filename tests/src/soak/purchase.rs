//! From a session to a sale: hold a seat (Zipf pick, then the seat map after a loss), leave or
//! pay, follow the hold until it is confirmed, retry a decline with a good card.

use std::sync::Arc;
use std::time::Duration;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use reqwest::Method;
use serde_json::{Value, json};
use tokio::time::Instant;

use super::config::SeatChoice;
use super::context::Ctx;
use super::plan::{Leave, Plan};
use super::stats::Live;

struct Held {
    hold_id: String,
    /// Reads of the hold keep working with it after the session (and its token) ended.
    receipt_key: Option<String>,
}

pub async fn run(ctx: &Ctx, plan: &Plan, token: &str) -> &'static str {
    let mut rng = StdRng::seed_from_u64(plan.seed.rotate_left(17));
    let Some(held) = hold(ctx, plan, token, &mut rng).await else {
        return "no_seat";
    };
    Live::gauge(&ctx.live().holding, 1);
    if plan.two_tabs {
        second_hold(ctx, plan, token, &mut rng).await;
    }
    if plan.leave == Leave::WhileHolding {
        Live::gauge(&ctx.live().holding, -1);
        return "left_holding";
    }
    // The payment form opens: extend, as the page does.
    let extend = format!("/api/holds/{}/extend", held.hold_id);
    ctx.call(plan, Method::POST, &extend, Some(token), None, None)
        .await;
    let outcome = pay(ctx, plan, token, &held).await;
    Live::gauge(&ctx.live().holding, -1);
    outcome
}

fn body_for(ctx: &Ctx, seat: Option<&str>) -> Value {
    match (ctx.picker.choice, seat) {
        (SeatChoice::Named, Some(seat)) => json!({ "seats": [seat] }),
        _ => json!({ "section": ctx.section, "quantity": 1 }),
    }
}

async fn hold(ctx: &Ctx, plan: &Plan, token: &str, rng: &mut StdRng) -> Option<Held> {
    let path = format!("/api/events/{}/holds", ctx.event);
    let give_up = Instant::now() + ctx.max_hold;
    let mut tries = 0u32;
    let mut from_map: Arc<Vec<String>> = Arc::default();
    while Instant::now() < give_up && !ctx.is_sold_out() {
        tries += 1;
        // The first tries go for the hot seats; after that the buyer looks at the map.
        let seat = if tries <= 2 || ctx.picker.choice == SeatChoice::Ga {
            ctx.picker.pick(rng).map(str::to_owned)
        } else {
            // Looked at again every few tries: the map is at most a second old when read.
            if from_map.is_empty() || tries % 4 == 3 {
                from_map = super::seat_map::available(ctx, plan).await;
            }
            if from_map.is_empty() {
                // Everything is taken for now; held seats may come back when holds lapse.
                tokio::time::sleep(Duration::from_secs(2)).await;
                continue;
            }
            from_map.get(rng.random_range(0..from_map.len())).cloned()
        };
        let body = body_for(ctx, seat.as_deref());
        let key = uuid::Uuid::new_v4().to_string();
        let asked = Instant::now();
        let answer = ctx
            .call(
                plan,
                Method::POST,
                &path,
                Some(token),
                Some(&key),
                Some(&body),
            )
            .await;
        let ms = asked.elapsed().as_millis() as u64;
        match answer {
            Some(a) if a.status.as_u16() == 201 => {
                ctx.stats.record("hold_won_ms", ms);
                ctx.stats.count("holds_won");
                let _ = super::context::AFTER_ADMISSION.try_with(|c| {
                    c.set(super::context::AfterAdmission {
                        held: true,
                        ..c.get()
                    })
                });
                let hold_id = a.body.get("hold_id")?.as_str()?.to_owned();
                let receipt_key = a
                    .body
                    .get("receipt_key")
                    .and_then(Value::as_str)
                    .map(str::to_owned);
                return Some(Held {
                    hold_id,
                    receipt_key,
                });
            }
            Some(a) => {
                ctx.stats.record("hold_lost_ms", ms);
                match a.code().as_str() {
                    "seat_unavailable" => {}
                    "sold_out" => tokio::time::sleep(Duration::from_secs(2)).await,
                    "overloaded" | "rate_limited" => {
                        tokio::time::sleep(Duration::from_secs(a.retry_after_s.unwrap_or(1))).await;
                    }
                    // Session over, or a refusal retrying cannot fix.
                    _ => return None,
                }
            }
            None => tokio::time::sleep(Duration::from_millis(300)).await,
        }
        tokio::time::sleep(Duration::from_millis(rng.random_range(100..400))).await;
    }
    None
}

/// The second tab tries to hold too: one live hold per session, so it must be refused.
async fn second_hold(ctx: &Ctx, plan: &Plan, token: &str, rng: &mut StdRng) {
    let path = format!("/api/events/{}/holds", ctx.event);
    let seat = ctx.picker.pick(rng).map(str::to_owned);
    let body = body_for(ctx, seat.as_deref());
    let key = uuid::Uuid::new_v4().to_string();
    if let Some(a) = ctx
        .call(
            plan,
            Method::POST,
            &path,
            Some(token),
            Some(&key),
            Some(&body),
        )
        .await
        && a.status.is_success()
    {
        ctx.stats.mismatch(format!(
            "buyer {}: a second live hold for one session: {}",
            plan.index, a.body
        ));
    }
    ctx.stats.count("two_tab_second_holds");
}

async fn pay(ctx: &Ctx, plan: &Plan, token: &str, held: &Held) -> &'static str {
    let path = format!("/api/holds/{}/checkout", held.hold_id);
    let mut card = plan.card;
    for _attempt in 0..4 {
        let key = uuid::Uuid::new_v4().to_string();
        let body = json!({ "payment_method": card });
        let started = Instant::now();
        let answer = if plan.two_tabs {
            // The same checkout from two tabs at once: one payment, the same answer twice.
            let (a, b) = tokio::join!(
                ctx.call(
                    plan,
                    Method::POST,
                    &path,
                    Some(token),
                    Some(&key),
                    Some(&body)
                ),
                ctx.call(
                    plan,
                    Method::POST,
                    &path,
                    Some(token),
                    Some(&key),
                    Some(&body)
                ),
            );
            let id = |x: &Option<super::client::Answer>| {
                x.as_ref()
                    .filter(|a| a.status.as_u16() == 202)
                    .and_then(|a| a.body.get("payment_id").cloned())
            };
            if let (Some(x), Some(y)) = (id(&a), id(&b))
                && x != y
            {
                ctx.stats.mismatch(format!(
                    "buyer {}: one Idempotency-Key, two payments {x} and {y}",
                    plan.index
                ));
            }
            ctx.stats.count("two_tab_checkouts");
            if id(&a).is_some() { a } else { b }
        } else {
            ctx.call(
                plan,
                Method::POST,
                &path,
                Some(token),
                Some(&key),
                Some(&body),
            )
            .await
        };
        match answer {
            Some(a) if a.status.as_u16() == 202 => {}
            Some(a) if a.code() == "payment_in_progress" => {}
            _ => return "checkout_refused",
        }
        Live::gauge(&ctx.live().paying, 1);
        let settled = follow(ctx, plan, token, held).await;
        Live::gauge(&ctx.live().paying, -1);
        match settled {
            Settled::Confirmed => {
                ctx.stats.record(
                    "checkout_to_confirmed_ms",
                    started.elapsed().as_millis() as u64,
                );
                Live::add(&ctx.live().sold);
                return "bought";
            }
            Settled::Declined => {
                ctx.stats.count("declines_seen");
                card = "pm_card_visa";
            }
            Settled::Ended => return "payment_ended_without_sale",
            Settled::Unknown => return "payment_unresolved",
        }
    }
    "declined_out"
}

enum Settled {
    Confirmed,
    Declined,
    /// Released, expired or abandoned: the seat went back.
    Ended,
    Unknown,
}

async fn follow(ctx: &Ctx, plan: &Plan, token: &str, held: &Held) -> Settled {
    let path = format!("/api/holds/{}", held.hold_id);
    // The receipt, when the hold has one: the session (and its token) may end first.
    let (bearer, receipt) = match &held.receipt_key {
        Some(key) => (None, Some(key.as_str())),
        None => (Some(token), None),
    };
    let give_up = Instant::now() + ctx.pay_patience;
    while Instant::now() < give_up {
        tokio::time::sleep(Duration::from_millis(500)).await;
        let answer = ctx
            .call_with(plan, Method::GET, &path, bearer, None, None, receipt)
            .await;
        let Some(a) = answer else {
            continue;
        };
        if !a.status.is_success() {
            continue;
        }
        match a.body.get("state").and_then(Value::as_str) {
            Some("confirmed") => return Settled::Confirmed,
            Some("held") if a.body.get("last_payment_error").is_some() => return Settled::Declined,
            Some("released" | "expired" | "abandoned") => return Settled::Ended,
            _ => {}
        }
    }
    Settled::Unknown
}
