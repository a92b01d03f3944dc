//! Overload: does a join storm at opening starve holds and checkouts?
//!
//! 1. Measure what this machine serves in joins per second (closed loop, 64 connections).
//! 2. Hold and checkout latency p99, unloaded (one buyer at a time).
//! 3. The same under an open-loop join flood offered at 5× that rate (wrk2-style: each flood
//!    connection sends on a fixed schedule whatever the answers, pipelined so that the client
//!    can afford the rate), then the ratio loaded/unloaded
//!    (target: within 2×) and how the flood was answered (201, 503 with `Retry-After`, other).
//!
//! Three processes, as in production: the built `gateway` binary on PostgreSQL (a fresh
//! database) and Redis, with its in-process payment simulator; the flood, this bench
//! re-executed as a worker (its own runtime and CPU, so the probes' latency is the gateway's and
//! not the flood client's); and this coordinator, which probes one buyer at a time.
//!
//! `cargo bench -p gateway --bench overload` (`OVERLOAD_PROBES` buyers per phase, default 300).
#![allow(clippy::unwrap_used)]

mod support;

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;

use support::http1;
use support::worker::{self, Worker, say};
use support::{Backends, FreshPostgres, GatewayProcess, Organizer};

const CAPACITY_CONNECTIONS: usize = 64;
const FLOOD_CONNECTIONS: usize = 512;
const FLOOD_FACTOR: f64 = 5.0;

fn setting(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn main() {
    let role = worker::role();
    let runtime = match role.as_deref() {
        // The flood needs both cores' worth of client if it can get them.
        Some("flood") => tokio::runtime::Builder::new_multi_thread(),
        // One buyer at a time needs no more than one thread.
        _ => tokio::runtime::Builder::new_current_thread(),
    }
    .enable_all()
    .build()
    .unwrap();
    match role.as_deref() {
        Some("flood") => runtime.block_on(flood_worker()),
        Some(other) => panic!("unknown bench role {other}"),
        None => runtime.block_on(coordinate()),
    }
}

async fn coordinate() {
    let probes = setting("OVERLOAD_PROBES", 300);
    let postgres = FreshPostgres::create().await;
    // Every bench client is 127.0.0.1: the per-address join limit would stop the flood first.
    let gateway = GatewayProcess::start("overload", &Backends::postgres_redis(&postgres), 0).await;
    run(gateway.addr, probes).await;
    gateway.stop().await;
    postgres.drop_now().await;
}

struct Api {
    base: String,
    http: reqwest::Client,
}

impl Api {
    async fn call(
        &self,
        method: reqwest::Method,
        path: &str,
        token: Option<&str>,
        body: Option<Value>,
        key: Option<&str>,
    ) -> (u16, Value) {
        let mut request = self.http.request(method, format!("{}{path}", self.base));
        if let Some(token) = token {
            request = request.bearer_auth(token);
        }
        if let Some(key) = key {
            request = request.header("idempotency-key", key);
        }
        if let Some(body) = body {
            request = request.json(&body);
        }
        let response = request.send().await.unwrap();
        let status = response.status().as_u16();
        let body = response.json().await.unwrap_or(Value::Null);
        (status, body)
    }

    /// Join, wait for the offer, claim: an admission token.
    async fn admit(&self, event: &str) -> String {
        let (status, joined) = self
            .call(
                reqwest::Method::POST,
                &format!("/api/events/{event}/queue"),
                None,
                None,
                None,
            )
            .await;
        assert_eq!(status, 201, "{joined}");
        let token = joined["queue_token"].as_str().unwrap().to_owned();
        loop {
            let (_, status) = self
                .call(
                    reqwest::Method::GET,
                    &format!("/api/events/{event}/queue/status"),
                    Some(&token),
                    None,
                    None,
                )
                .await;
            if status["status"] == "offered" {
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let (status, claimed) = self
            .call(
                reqwest::Method::POST,
                &format!("/api/events/{event}/queue/claim"),
                Some(&token),
                None,
                None,
            )
            .await;
        assert_eq!(status, 200, "{claimed}");
        claimed["admission_token"].as_str().unwrap().to_owned()
    }
}

async fn run(addr: SocketAddr, probes: usize) {
    let api = Arc::new(Api {
        base: format!("http://{addr}"),
        http: reqwest::Client::new(),
    });
    let organizer = Organizer::new(&api.base);
    let seats = u32::try_from(2 * probes).unwrap();
    let event = organizer
        .create_open_event(
            "overload",
            json!({"rate_per_min": 600000, "max_active": 100000, "offer_s": 600}),
            seats,
        )
        .await;
    // The flood joins an event that makes no offers: joins cost what they cost, no sessions.
    let flood_event = organizer
        .create_open_event("flood", json!({"rate_per_min": 1, "max_active": 1}), 1)
        .await;
    organizer
        .tune(&flood_event, json!({"max_active": 0, "rate_per_min": 0}))
        .await;

    eprintln!("admitting {} buyers…", 2 * probes);
    let mut tokens = Vec::new();
    for chunk in 0..(2 * probes).div_ceil(32) {
        let batch = (0..32.min(2 * probes - chunk * 32)).map(|_| {
            let api = api.clone();
            let event = event.clone();
            tokio::spawn(async move { api.admit(&event).await })
        });
        for task in batch.collect::<Vec<_>>() {
            tokens.push(task.await.unwrap());
        }
    }
    let (unloaded_buyers, loaded_buyers) = tokens.split_at(probes);

    let mut flood = Worker::spawn(
        "flood",
        &[
            ("FLOOD_ADDR", addr.to_string()),
            ("FLOOD_PATH", format!("/api/events/{flood_event}/queue")),
        ],
    );
    flood.send("capacity").await;
    let capacity: f64 = flood
        .expect("capacity", Duration::from_secs(60))
        .await
        .parse()
        .unwrap();
    println!(
        "join capacity (closed loop, {CAPACITY_CONNECTIONS} connections): {capacity:.0} joins/s"
    );

    let unloaded = probe(&api, &event, unloaded_buyers, 0).await;

    let offered = capacity * FLOOD_FACTOR;
    flood.send(&format!("flood {offered}")).await;
    flood.expect("flooding", Duration::from_secs(10)).await;
    // Let the flood reach its rate before measuring.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let loaded = probe(&api, &event, loaded_buyers, probes).await;
    flood.send("stop").await;
    let tally: Vec<f64> = flood
        .expect("tally", Duration::from_secs(60))
        .await
        .split(' ')
        .map(|v| v.parse().unwrap())
        .collect();
    flood.stop().await;
    let [
        sent,
        ok,
        shed_with_retry,
        shed_without_retry,
        other,
        errors,
        flood_s,
    ] = tally[..]
    else {
        panic!("a tally of seven figures, got {tally:?}");
    };

    println!();
    println!(
        "flood offered: {offered:.0} joins/s target (5 × capacity), {:.0} joins/s sent over {flood_s:.1} s ({:.1}× capacity)",
        sent / flood_s,
        sent / flood_s / capacity
    );
    println!(
        "gateway answered {:.0} requests/s during the flood, {:.0} joins/s served",
        (ok + shed_with_retry + shed_without_retry + other) / flood_s,
        ok / flood_s
    );
    println!(
        "flood answers: {ok} × 201, {shed_with_retry} × 503 overloaded with Retry-After, {shed_without_retry} × 503 without, {other} other, {errors} connection errors",
    );
    println!();
    println!("| latency (ms) | unloaded p50 | unloaded p99 | flood p50 | flood p99 | p99 ratio |");
    println!("|---|---|---|---|---|---|");
    for (name, quiet, busy) in [
        ("hold", &unloaded.holds, &loaded.holds),
        ("checkout", &unloaded.checkouts, &loaded.checkouts),
    ] {
        let ratio = pct(busy, 0.99) / pct(quiet, 0.99);
        println!(
            "| {name} | {:.2} | {:.2} | {:.2} | {:.2} | {ratio:.2}× {} |",
            pct(quiet, 0.50),
            pct(quiet, 0.99),
            pct(busy, 0.50),
            pct(busy, 0.99),
            if ratio <= 2.0 {
                "(within 2×)"
            } else {
                "(OVER 2×)"
            }
        );
    }
    println!(
        "refused during the probes: unloaded {} holds/checkouts, flood {}",
        unloaded.refused, loaded.refused
    );
}

/// Hold and checkout latencies (ms) of one buyer at a time.
struct Probes {
    holds: Vec<f64>,
    checkouts: Vec<f64>,
    refused: usize,
}

async fn probe(api: &Api, event: &str, buyers: &[String], first_seat: usize) -> Probes {
    let mut out = Probes {
        holds: Vec::new(),
        checkouts: Vec::new(),
        refused: 0,
    };
    for (i, token) in buyers.iter().enumerate() {
        let seat = format!("A-A-{}", first_seat + i + 1);
        let t = Instant::now();
        let (status, held) = api
            .call(
                reqwest::Method::POST,
                &format!("/api/events/{event}/holds"),
                Some(token),
                Some(json!({"seats": [seat]})),
                None,
            )
            .await;
        out.holds.push(t.elapsed().as_secs_f64() * 1000.0);
        if status != 201 {
            out.refused += 1;
            eprintln!("hold refused: {status} {held}");
            continue;
        }
        let hold = held["hold_id"].as_str().unwrap().to_owned();
        let t = Instant::now();
        let (status, paid) = api
            .call(
                reqwest::Method::POST,
                &format!("/api/holds/{hold}/checkout"),
                Some(token),
                Some(json!({"payment_method": "pm_card_visa"})),
                Some(&format!("bench-{hold}")),
            )
            .await;
        out.checkouts.push(t.elapsed().as_secs_f64() * 1000.0);
        if status != 202 {
            out.refused += 1;
            eprintln!("checkout refused: {status} {paid}");
        }
    }
    out
}

fn pct(samples: &[f64], q: f64) -> f64 {
    if samples.is_empty() {
        return f64::NAN;
    }
    let mut sorted = samples.to_vec();
    sorted.sort_by(f64::total_cmp);
    let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1]
}

#[derive(Default)]
struct Tally {
    sent: AtomicU64,
    ok: AtomicU64,
    shed_with_retry: AtomicU64,
    shed_without_retry: AtomicU64,
    other: AtomicU64,
    errors: AtomicU64,
}

/// One HTTP/1.1 keep-alive connection speaking raw bytes (the flood must cost the client less
/// than the server), reconnecting after a failure.
struct Raw {
    addr: SocketAddr,
    stream: Option<TcpStream>,
    answers: http1::Answers,
}

impl Raw {
    fn new(addr: SocketAddr) -> Self {
        Self {
            addr,
            stream: None,
            answers: http1::Answers::default(),
        }
    }

    async fn send(&mut self, request: &[u8]) -> std::io::Result<http1::Answer> {
        if self.stream.is_none() {
            let stream = TcpStream::connect(self.addr).await?;
            stream.set_nodelay(true)?;
            self.stream = Some(stream);
            self.answers.clear();
        }
        let stream = self.stream.as_mut().unwrap();
        let result = match stream.write_all(request).await {
            Ok(()) => self.answers.next(stream).await,
            Err(e) => Err(e),
        };
        if result.is_err() {
            self.stream = None;
        }
        result
    }
}

/// Joins per second this machine serves: closed loop, no shedding (connections = budget).
async fn join_capacity(addr: SocketAddr, request: &str) -> f64 {
    let served = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let run = Duration::from_secs(4);
    let tasks: Vec<_> = (0..CAPACITY_CONNECTIONS)
        .map(|_| {
            let (served, stop, request) = (served.clone(), stop.clone(), request.to_owned());
            tokio::spawn(async move {
                let mut raw = Raw::new(addr);
                while !stop.load(Ordering::Relaxed) {
                    if raw
                        .send(request.as_bytes())
                        .await
                        .is_ok_and(|a| a.status == 201)
                    {
                        served.fetch_add(1, Ordering::Relaxed);
                    }
                }
            })
        })
        .collect();
    // The first second warms up; the rest is measured.
    tokio::time::sleep(Duration::from_secs(1)).await;
    let before = served.load(Ordering::Relaxed);
    let t = Instant::now();
    tokio::time::sleep(run - Duration::from_secs(1)).await;
    let rate = (served.load(Ordering::Relaxed) - before) as f64 / t.elapsed().as_secs_f64();
    stop.store(true, Ordering::Relaxed);
    for task in tasks {
        let _ = task.await;
    }
    rate
}

/// How often a flood connection writes what its schedule says is due.
const FLOOD_TICK: Duration = Duration::from_millis(20);

/// One flood connection sending at `rate` per second on a fixed schedule (open loop: answers
/// are never waited for, requests are pipelined, and a connection the gateway reads slowly
/// falls behind and catches up in a burst; the schedule is never re-based). Pipelining keeps
/// the flood cheap for the client, so one process on this machine can offer many times what
/// the gateway serves. A reader half counts the answers.
async fn flood_connection(
    addr: SocketAddr,
    request: String,
    rate: f64,
    index: usize,
    stop: Arc<AtomicBool>,
    tally: Arc<Tally>,
) {
    // Spread the connections' phases over one tick.
    let started = tokio::time::Instant::now();
    tokio::time::sleep(FLOOD_TICK.mul_f64(index as f64 / FLOOD_CONNECTIONS as f64)).await;
    while !stop.load(Ordering::Relaxed) {
        let Ok(stream) = TcpStream::connect(addr).await else {
            tally.errors.fetch_add(1, Ordering::Relaxed);
            tokio::time::sleep(FLOOD_TICK).await;
            continue;
        };
        let _ = stream.set_nodelay(true);
        let (reader, mut writer) = stream.into_split();
        let answers = tokio::spawn(count_answers(reader, tally.clone()));
        let mut ticks = tokio::time::interval(FLOOD_TICK);
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Burst);
        let mut written = 0u64;
        let mut batch = Vec::new();
        while !stop.load(Ordering::Relaxed) {
            ticks.tick().await;
            let due = (started.elapsed().as_secs_f64() * rate) as u64;
            if due <= written {
                continue;
            }
            batch.clear();
            for _ in written..due {
                batch.extend_from_slice(request.as_bytes());
            }
            if writer.write_all(&batch).await.is_err() {
                tally.errors.fetch_add(1, Ordering::Relaxed);
                break;
            }
            tally.sent.fetch_add(due - written, Ordering::Relaxed);
            written = due;
        }
        drop(writer);
        answers.abort();
    }
}

/// Reads pipelined answers off one connection and counts them by status.
async fn count_answers(mut reader: tokio::net::tcp::OwnedReadHalf, tally: Arc<Tally>) {
    let mut answers = http1::Answers::default();
    while let Ok(answer) = answers.next(&mut reader).await {
        let counter = match (answer.status, answer.retry_after) {
            (201, _) => &tally.ok,
            (503, true) => &tally.shed_with_retry,
            (503, false) => &tally.shed_without_retry,
            _ => &tally.other,
        };
        counter.fetch_add(1, Ordering::Relaxed);
    }
}

// ---- the flood worker ---------------------------------------------------------------------

/// The flood process: `capacity` measures closed-loop joins/s; `flood RATE` starts the open-loop
/// flood; `stop` ends it and answers the tally (sent, 201, 503 with and without `Retry-After`,
/// other, connection errors, seconds).
async fn flood_worker() {
    let addr: SocketAddr = worker::setting("FLOOD_ADDR").parse().unwrap();
    let request = format!(
        "POST {} HTTP/1.1\r\nhost: {addr}\r\ncontent-length: 0\r\n\r\n",
        worker::setting("FLOOD_PATH")
    );
    let mut commands = worker::commands();
    let stop = Arc::new(AtomicBool::new(false));
    let tally = Arc::new(Tally::default());
    let mut tasks = Vec::new();
    let mut started = Instant::now();
    while let Ok(Some(line)) = commands.next_line().await {
        match line.split_once(' ').unwrap_or((line.as_str(), "")) {
            ("capacity", _) => say(&format!("capacity {}", join_capacity(addr, &request).await)),
            ("flood", rate) => {
                let offered: f64 = rate.parse().unwrap();
                started = Instant::now();
                tasks = (0..FLOOD_CONNECTIONS)
                    .map(|i| {
                        tokio::spawn(flood_connection(
                            addr,
                            request.clone(),
                            offered / FLOOD_CONNECTIONS as f64,
                            i,
                            stop.clone(),
                            tally.clone(),
                        ))
                    })
                    .collect();
                say("flooding");
            }
            ("stop", _) => {
                stop.store(true, Ordering::Relaxed);
                for task in tasks.drain(..) {
                    let _ = task.await;
                }
                let t = &tally;
                say(&format!(
                    "tally {} {} {} {} {} {} {}",
                    t.sent.load(Ordering::Relaxed),
                    t.ok.load(Ordering::Relaxed),
                    t.shed_with_retry.load(Ordering::Relaxed),
                    t.shed_without_retry.load(Ordering::Relaxed),
                    t.other.load(Ordering::Relaxed),
                    t.errors.load(Ordering::Relaxed),
                    started.elapsed().as_secs_f64(),
                ));
            }
            _ => panic!("unknown flood command {line:?}"),
        }
    }
}
