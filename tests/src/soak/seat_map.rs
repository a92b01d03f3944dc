//! The seat map as a browser keeps it: every buyer asks with `If-None-Match`, and the last map
//! this worker read answers the 304s. A 5,000-seat map is half a megabyte of JSON: sent and
//! parsed into a JSON tree for every buyer who lost a hot seat, it was a large share of both
//! the gateway's and the soak's work in a profile of a 150,000-buyer run.

use std::sync::{Arc, Mutex};

use reqwest::Method;
use serde::Deserialize;

use super::client::Call;
use super::context::Ctx;
use super::plan::Plan;

/// The free seats of the last map read, and its ETag.
#[derive(Default)]
pub struct SeatMap(Mutex<Option<Cached>>);

struct Cached {
    etag: String,
    available: Arc<Vec<String>>,
}

/// Only what the buyer looks at; serde skips the other fields.
#[derive(Deserialize)]
struct Map {
    seats: Vec<Row>,
}

#[derive(Deserialize)]
struct Row {
    seat_id: String,
    state: String,
}

impl SeatMap {
    fn cached(&self) -> Option<(String, Arc<Vec<String>>)> {
        let cached = self.0.lock().unwrap_or_else(|p| p.into_inner());
        cached
            .as_ref()
            .map(|c| (c.etag.clone(), c.available.clone()))
    }

    fn store(&self, etag: String, available: Arc<Vec<String>>) {
        *self.0.lock().unwrap_or_else(|p| p.into_inner()) = Some(Cached { etag, available });
    }
}

/// The seats the map shows available (empty when the read failed).
pub async fn available(ctx: &Ctx, plan: &Plan) -> Arc<Vec<String>> {
    let path = format!("/api/events/{}/seats", ctx.event);
    let cached = ctx.seat_map.cached();
    let answer = ctx
        .send(Call {
            method: Method::GET,
            gateway: plan.gateway,
            path: &path,
            bearer: None,
            idempotency_key: None,
            forwarded_for: plan.forwarded_for,
            json: None,
            receipt: None,
            if_none_match: cached.as_ref().map(|(etag, _)| etag.as_str()),
            raw: true,
            near_front: false,
        })
        .await;
    let Some(answer) = answer else {
        return Arc::default();
    };
    match answer.status.as_u16() {
        304 => cached.map(|(_, seats)| seats).unwrap_or_default(),
        200 => {
            let Some(map) = answer
                .raw
                .and_then(|raw| serde_json::from_slice::<Map>(&raw).ok())
            else {
                ctx.stats.error("seat_map_unreadable");
                return Arc::default();
            };
            let seats: Arc<Vec<String>> = Arc::new(
                map.seats
                    .into_iter()
                    .filter(|row| row.state == "available")
                    .map(|row| row.seat_id)
                    .collect(),
            );
            if let Some(etag) = answer.etag {
                ctx.seat_map.store(etag, seats.clone());
            }
            seats
        }
        _ => Arc::default(),
    }
}
