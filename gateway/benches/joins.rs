//! Joins per second through the real gateway (`POST /api/events/{event}/queue`) on the memory
//! backend and on Redis, against a bare axum route answering the same status and body bytes,
//! all driven by the same load generator in the same run (targets: ≥ 0.5× the bare route on
//! memory, ≥ 0.3× on Redis, ≥ 10,000 joins/s on memory). The waiting-room page sends every join
//! with an `Idempotency-Key` (a retried join gets the same place), which takes the queue's keyed
//! path; the last target joins so, each request with a key of its own.
//!
//! The gateways are the built `gateway` binary (`CARGO_BIN_EXE_gateway`): one on the embedded
//! default (SQLite, in-memory queue), one on PostgreSQL + Redis. Both keep the production join
//! limit (60 per client address per minute) and trust 127.0.0.0/8 as a proxy: every request
//! carries its own `X-Forwarded-For`, as a flash crowd of distinct buyers would. The load
//! generator is this bench re-executed as worker processes, each a minimal HTTP/1.1 keep-alive
//! client over many connections (wrk-like: one request in flight per connection, no
//! pipelining). Targets take turns over a few rounds; the median round is reported.
//! Run with `cargo bench -p gateway --bench joins`; needs PostgreSQL and Redis.
//! `FLOODGATE_BENCH_QUICK=1` runs the same steps in one short round.

mod support;

use std::net::{Ipv4Addr, SocketAddr};
use std::time::{Duration, Instant};

use axum::Router;
use axum::http::{StatusCode, header};
use axum::routing::post;
use serde_json::json;
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;

use support::http1;
use support::stats::{median, quantile, verdict};
use support::worker::{self, Worker, say};
use support::{Backends, FreshPostgres, GatewayProcess, Organizer};

const WORKERS: usize = 2;
const CONNECTIONS_PER_WORKER: usize = 32;
const ROUNDS: usize = 3;
const WARMUP: Duration = Duration::from_secs(1);
const MEASURE: Duration = Duration::from_secs(6);
/// `FLOODGATE_BENCH_QUICK=1`: a smoke run of the same steps, one short round.
fn quick() -> bool {
    std::env::var_os("FLOODGATE_BENCH_QUICK").is_some()
}

fn round_count() -> usize {
    if quick() { 1 } else { ROUNDS }
}

fn measure_for() -> Duration {
    if quick() {
        Duration::from_secs(1)
    } else {
        MEASURE
    }
}

fn main() {
    let role = worker::role();
    let runtime = match role.as_deref() {
        Some("load") => tokio::runtime::Builder::new_current_thread(),
        _ => tokio::runtime::Builder::new_multi_thread(),
    }
    .enable_all()
    .build()
    .expect("build a tokio runtime");
    match role.as_deref() {
        Some("load") => runtime.block_on(load()),
        Some("bare-join") => runtime.block_on(bare_server()),
        Some(other) => panic!("unknown bench role {other}"),
        None => runtime.block_on(coordinate()),
    }
}

// ---- the coordinator ----------------------------------------------------------------------

/// One server under load and the path its joins go to.
struct Target {
    name: &'static str,
    addr: SocketAddr,
    path: String,
    /// Each join carries an `Idempotency-Key` of its own, as the page's joins do.
    keyed: bool,
}

/// What one round against one target measured.
struct Round {
    per_s: f64,
    other: u64,
    errors: u64,
    p50_us: u64,
    p99_us: u64,
}

async fn coordinate() {
    println!(
        "joins: {WORKERS} load processes × {CONNECTIONS_PER_WORKER} keep-alive connections, \
         {} rounds of {:?} (after {WARMUP:?} warm-up) per target",
        round_count(),
        measure_for()
    );
    let memory =
        GatewayProcess::start("joins-memory", &Backends::embedded("joins-memory"), 60).await;
    let postgres = FreshPostgres::create().await;
    let redis =
        GatewayProcess::start("joins-redis", &Backends::postgres_redis(&postgres), 60).await;
    let memory_event = Organizer::new(&memory.base())
        .create_open_event("joins", json!({}), 500)
        .await;
    let redis_event = Organizer::new(&redis.base())
        .create_open_event("joins", json!({}), 500)
        .await;

    // The bare route answers exactly what the gateway answered to a join.
    let path = |event: &str| format!("/api/events/{event}/queue");
    let sample = reqwest::Client::new()
        .post(format!("{}{}", memory.base(), path(&memory_event)))
        .header("x-forwarded-for", "192.0.2.1")
        .send()
        .await
        .expect("a sample join");
    assert_eq!(sample.status().as_u16(), 201, "the sample join failed");
    let body = sample.text().await.expect("the sample join's body");
    let bare_port = support::free_port();
    let mut bare = Worker::spawn(
        "bare-join",
        &[("FB_PORT", bare_port.to_string()), ("FB_BODY", body)],
    );
    bare.expect("listening", Duration::from_secs(10)).await;

    let targets = [
        Target {
            name: "bare axum route",
            addr: SocketAddr::from(([127, 0, 0, 1], bare_port)),
            path: path("bare"),
            keyed: false,
        },
        Target {
            name: "gateway, memory",
            addr: memory.addr,
            path: path(&memory_event),
            keyed: false,
        },
        Target {
            name: "gateway, Redis",
            addr: redis.addr,
            path: path(&redis_event),
            keyed: false,
        },
        Target {
            name: "Redis, keyed",
            addr: redis.addr,
            path: path(&redis_event),
            keyed: true,
        },
    ];
    let mut rounds: Vec<Vec<Round>> = targets.iter().map(|_| Vec::new()).collect();
    let mut next_worker = 0u32;
    for round in 0..round_count() {
        for (t, target) in targets.iter().enumerate() {
            let r = drive(target, &mut next_worker).await;
            println!(
                "  round {}: {:<16} {:>8.0} joins/s  p50 {:>5} µs  p99 {:>6} µs  non-201 {}  errors {}",
                round + 1,
                target.name,
                r.per_s,
                r.p50_us,
                r.p99_us,
                r.other,
                r.errors
            );
            rounds[t].push(r);
        }
    }
    bare.stop().await;
    memory.stop().await;
    redis.stop().await;
    support::forget_redis_event(&redis_event).await;
    postgres.drop_now().await;
    report(&targets, &rounds);
}

/// One round against one target: fresh load processes, warm-up, measured window.
async fn drive(target: &Target, next_worker: &mut u32) -> Round {
    let mut workers = Vec::new();
    for _ in 0..WORKERS {
        // Each worker forwards addresses from its own 2^20 block, so no buyer address repeats
        // within the run and the per-address join limit never refuses one.
        let first_address = u32::from(Ipv4Addr::new(10, 0, 0, 0)) + (*next_worker << 20);
        *next_worker += 1;
        workers.push(Worker::spawn(
            "load",
            &[
                ("FB_TARGET", target.addr.to_string()),
                ("FB_PATH", target.path.clone()),
                ("FB_CONNECTIONS", CONNECTIONS_PER_WORKER.to_string()),
                ("FB_FIRST_ADDRESS", first_address.to_string()),
                ("FB_KEYED", u8::from(target.keyed).to_string()),
            ],
        ));
    }
    for w in &mut workers {
        w.expect("ready", Duration::from_secs(30)).await;
    }
    for w in &mut workers {
        w.send("go").await;
    }
    let (mut ok, mut other, mut errors) = (0u64, 0u64, 0u64);
    let mut p50 = Vec::new();
    let mut p99 = Vec::new();
    for w in &mut workers {
        let line = w
            .expect("done", WARMUP + measure_for() + Duration::from_secs(30))
            .await;
        let n: Vec<u64> = line.split(' ').filter_map(|n| n.parse().ok()).collect();
        assert_eq!(n.len(), 5, "a load worker said done {line}");
        ok += n[0];
        other += n[1];
        errors += n[2];
        p50.push(n[3] as f64);
        p99.push(n[4] as f64);
    }
    for w in workers {
        w.stop().await;
    }
    Round {
        per_s: ok as f64 / measure_for().as_secs_f64(),
        other,
        errors,
        p50_us: median(p50) as u64,
        p99_us: p99.into_iter().fold(0.0, f64::max) as u64,
    }
}

fn report(targets: &[Target], rounds: &[Vec<Round>]) {
    let per_s: Vec<f64> = rounds
        .iter()
        .map(|r| median(r.iter().map(|r| r.per_s).collect()))
        .collect();
    let bare = per_s[0].max(1.0);
    println!();
    println!(
        "{:<18} {:>12} {:>8} {:>9} {:>9} {:>8} {:>7}",
        "target", "joins/s", "× bare", "p50 µs", "p99 µs", "non-201", "errors"
    );
    for (t, target) in targets.iter().enumerate() {
        let p50 = median(rounds[t].iter().map(|r| r.p50_us as f64).collect());
        let p99 = median(rounds[t].iter().map(|r| r.p99_us as f64).collect());
        let other: u64 = rounds[t].iter().map(|r| r.other).sum();
        let errors: u64 = rounds[t].iter().map(|r| r.errors).sum();
        println!(
            "{:<18} {:>12.0} {:>7.2}× {:>9.0} {:>9.0} {:>8} {:>7}",
            target.name,
            per_s[t],
            per_s[t] / bare,
            p50,
            p99,
            other,
            errors
        );
    }
    println!(
        "(median of {} rounds; non-201 and errors summed over them; latency per request)",
        round_count()
    );
    println!(
        "memory: {:.2}× bare (target ≥ 0.5): {}; {:.0} joins/s (target ≥ 10,000): {}",
        per_s[1] / bare,
        verdict(per_s[1] / bare >= 0.5),
        per_s[1],
        verdict(per_s[1] >= 10_000.0)
    );
    println!(
        "Redis: {:.2}× bare (target ≥ 0.3): {}; keyed as pages join: {:.2}× bare",
        per_s[2] / bare,
        verdict(per_s[2] / bare >= 0.3),
        per_s[3] / bare
    );
}

// ---- the load generator -------------------------------------------------------------------

/// Opens `FB_CONNECTIONS` connections; on `go`, each sends joins back to back through the
/// warm-up and the measured window, then says `done OK OTHER ERRORS P50_US P99_US` for the
/// answers completed inside the window.
async fn load() {
    let target: SocketAddr = worker::setting("FB_TARGET")
        .parse()
        .expect("FB_TARGET is an address");
    let path = worker::setting("FB_PATH");
    let connections = worker::number("FB_CONNECTIONS") as usize;
    let first_address = worker::number("FB_FIRST_ADDRESS") as u32;
    let keyed = worker::number("FB_KEYED") == 1;
    let mut streams = Vec::new();
    for _ in 0..connections {
        let stream = TcpStream::connect(target)
            .await
            .expect("connect to the target");
        stream.set_nodelay(true).expect("set TCP_NODELAY");
        streams.push(stream);
    }
    say("ready");
    let mut commands = worker::commands();
    loop {
        match commands.next_line().await {
            Ok(Some(line)) if line == "go" => break,
            Ok(Some(_)) => {}
            _ => return,
        }
    }
    let start = Instant::now();
    let window = (start + WARMUP, start + WARMUP + measure_for());
    let tasks: Vec<_> = streams
        .into_iter()
        .enumerate()
        .map(|(c, stream)| {
            let path = path.clone();
            // Connection `c` forwards addresses c, c + connections, c + 2·connections, …
            let addresses = (0u32..)
                .map(move |n| Ipv4Addr::from(first_address + c as u32 + n * connections as u32));
            tokio::spawn(hammer(stream, target, path, keyed, addresses, window))
        })
        .collect();
    let mut tally = Tally::default();
    for task in tasks {
        let part = task.await.expect("a load connection's task");
        tally.ok += part.ok;
        tally.other += part.other;
        tally.errors += part.errors;
        tally.latencies_us.extend(part.latencies_us);
    }
    tally.latencies_us.sort_unstable();
    say(&format!(
        "done {} {} {} {} {}",
        tally.ok,
        tally.other,
        tally.errors,
        quantile(&tally.latencies_us, 0.5).unwrap_or(0),
        quantile(&tally.latencies_us, 0.99).unwrap_or(0)
    ));
}

#[derive(Default)]
struct Tally {
    ok: u64,
    other: u64,
    errors: u64,
    latencies_us: Vec<u32>,
}

/// One keep-alive connection sending joins back to back until the window closes.
async fn hammer(
    mut stream: TcpStream,
    target: SocketAddr,
    path: String,
    keyed: bool,
    mut addresses: impl Iterator<Item = Ipv4Addr>,
    (from, until): (Instant, Instant),
) -> Tally {
    let mut tally = Tally::default();
    let mut answers = http1::Answers::default();
    loop {
        let address = addresses.next().unwrap_or(Ipv4Addr::UNSPECIFIED);
        // Addresses never repeat within a run, so the address names the buyer's key too.
        let key = if keyed {
            format!("idempotency-key: join-{address}\r\n")
        } else {
            String::new()
        };
        let request = format!(
            "POST {path} HTTP/1.1\r\nhost: {target}\r\nx-forwarded-for: {address}\r\n{key}content-length: 0\r\n\r\n"
        );
        let sent = Instant::now();
        let status = match exchange(&mut stream, request.as_bytes(), &mut answers).await {
            Ok(status) => status,
            Err(_) => {
                tally.errors += 1;
                // The server closed the connection (or broke it): open another.
                match TcpStream::connect(target).await {
                    Ok(s) => {
                        stream = s;
                        answers.clear();
                        continue;
                    }
                    Err(_) => return tally,
                }
            }
        };
        let done = Instant::now();
        if sent >= from && done <= until {
            if status == 201 {
                tally.ok += 1;
            } else {
                tally.other += 1;
            }
            tally
                .latencies_us
                .push(done.duration_since(sent).as_micros() as u32);
        }
        if done >= until {
            return tally;
        }
    }
}

/// Writes one request and reads its answer; returns the status code.
async fn exchange(
    stream: &mut TcpStream,
    request: &[u8],
    answers: &mut http1::Answers,
) -> std::io::Result<u16> {
    stream.write_all(request).await?;
    Ok(answers.next(stream).await?.status)
}

// ---- the bare baseline server -------------------------------------------------------------

/// The same path answering 201 with the gateway's join body, and nothing else.
async fn bare_server() {
    let port = worker::number("FB_PORT") as u16;
    let body = bytes::Bytes::from(worker::setting("FB_BODY"));
    let listener = gateway::listener::bind(SocketAddr::from(([127, 0, 0, 1], port)))
        .expect("bind the bare server's port");
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
    say("listening");
    axum::serve(listener, app)
        .await
        .expect("serve the bare join route");
}
