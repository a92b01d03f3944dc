//! The yardsticks of the storm's figures, measured after the storm by the same client for
//! `--baseline-s` each, closed-loop, on a scratch event (so the judged event is untouched):
//! - joins/s of the gateway's own join route, and of a bare axum route answering with the
//!   bytes of a real join: what a join costs beyond HTTP itself;
//! - reads/s of the public queue snapshot through the front the buyers used (the proxy's cache
//!   when there is one): how fast polling alone can tell a crowd anything.

use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use axum::Router;
use axum::http::{StatusCode, header};
use axum::routing::post;
use reqwest::Method;

use super::client::{Call, Net};
use super::config::Config;
use super::organizer::Organizer;
use super::trust::Trust;

pub struct Baseline {
    pub bare_per_s: f64,
    pub gateway_per_s: f64,
    pub snapshot_reads_per_s: f64,
}

/// Answers per second with status `ok` of closed-loop `method` requests to `path` on `net`'s
/// first gateway, by `concurrency` tasks; with the first such answer's body.
async fn hammer(
    net: Arc<Net>,
    method: Method,
    path: String,
    ok_status: u16,
    concurrency: usize,
    for_s: u64,
) -> (f64, Option<String>) {
    let ok = Arc::new(AtomicU64::new(0));
    let sample = Arc::new(std::sync::Mutex::new(None::<String>));
    let counter = Arc::new(AtomicU64::new(0));
    let until = Instant::now() + Duration::from_secs(for_s);
    let started = Instant::now();
    let mut tasks = Vec::new();
    for _ in 0..concurrency {
        let (net, method, path, ok, sample, counter) = (
            net.clone(),
            method.clone(),
            path.clone(),
            ok.clone(),
            sample.clone(),
            counter.clone(),
        );
        tasks.push(tokio::spawn(async move {
            while Instant::now() < until {
                // A fresh forwarded address per join keeps the per-address limit out of the way.
                let n = counter.fetch_add(1, Ordering::Relaxed) as u32;
                let forwarded_for = Ipv4Addr::from(0x0B00_0000u32 | (n & 0x00FF_FFFF));
                let answer = net
                    .send(Call {
                        method: method.clone(),
                        gateway: 0,
                        path: &path,
                        bearer: None,
                        idempotency_key: None,
                        forwarded_for,
                        json: None,
                        receipt: None,
                        if_none_match: None,
                        raw: false,
                        near_front: false,
                    })
                    .await;
                if let Ok(a) = answer
                    && a.status.as_u16() == ok_status
                {
                    ok.fetch_add(1, Ordering::Relaxed);
                    let mut s = sample.lock().unwrap_or_else(|p| p.into_inner());
                    if s.is_none() {
                        *s = Some(a.body.to_string());
                    }
                }
            }
        }));
    }
    for t in tasks {
        let _ = t.await;
    }
    let rate = ok.load(Ordering::Relaxed) as f64 / started.elapsed().as_secs_f64();
    let body = sample.lock().unwrap_or_else(|p| p.into_inner()).clone();
    (rate, body)
}

pub async fn measure(config: &Config) -> anyhow::Result<Baseline> {
    let concurrency = config.http_concurrency.min(256);
    // The gateway first, on a scratch event that opens at once.
    let mut scratch = config.clone();
    scratch.event = format!("{}-bench", config.event);
    scratch.opens_in_s = 0;
    scratch.seat_count = 10;
    Organizer::new(&scratch)?.create_event(&scratch).await?;
    let trust = Trust::load(config.ca_file.as_deref())?;
    let net = Net::new(
        &config.gateways,
        config.source_addresses(),
        concurrency,
        0,
        &trust,
    )?;
    let path = format!("/api/events/{}/queue", scratch.event);
    let (gateway_per_s, sample) = hammer(
        net.clone(),
        Method::POST,
        path.clone(),
        201,
        concurrency,
        config.baseline_s,
    )
    .await;
    let snapshot = format!("/api/events/{}/queue/snapshot", scratch.event);
    let (snapshot_reads_per_s, _) = hammer(
        net,
        Method::GET,
        snapshot,
        200,
        concurrency,
        config.baseline_s,
    )
    .await;

    let body = sample.unwrap_or_else(|| "{}".to_owned());
    let app = Router::new().route(
        "/api/events/{event}/queue",
        post(move || {
            let body = body.clone();
            async move {
                (
                    StatusCode::CREATED,
                    [(header::CONTENT_TYPE, "application/json")],
                    body,
                )
            }
        }),
    );
    let listener = gateway::listener::bind(SocketAddr::from(([127, 0, 0, 1], 0)))?;
    let addr = listener.local_addr()?;
    let server = tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    let net = Net::new(
        &[format!("http://{addr}")],
        config.source_addresses(),
        concurrency,
        0,
        &trust,
    )?;
    let (bare_per_s, _) =
        hammer(net, Method::POST, path, 201, concurrency, config.baseline_s).await;
    server.abort();
    Ok(Baseline {
        bare_per_s,
        gateway_per_s,
        snapshot_reads_per_s,
    })
}
