//! Idle waiting-room sockets on loopback, each fleet against a bare axum WebSocket server
//! measured in the same run (same 4 KiB read buffer, same client):
//! 1. 15,000 sockets on one bare server, then on one gateway (the embedded default);
//! 2. 45,000 sockets over three bare servers, then over three gateways sharing PostgreSQL and
//!    Redis.
//!
//! For each: the server's resident set before and with all sockets open → bytes per socket
//! (target ≤ 8 KiB), its CPU while the sockets idle, and the time from one trigger (the
//! organizer's `PATCH …/admission` raising the rate from 0, so the next tick offers one buyer
//! and every other buyer's position falls by one; for the bare servers a `POST /tick`) to each
//! socket receiving its new frame (target p99 ≤ 300 ms).
//!
//! The gateways are the built `gateway` binary (`CARGO_BIN_EXE_gateway`, built by Cargo beside
//! the bench), configured by environment. Clients run in worker processes (this bench
//! re-executed) of 7,500 sockets each, under the 20,000 open files a process may have, each
//! socket bound to a source address 127.0.0.x (4,000 per address, so ephemeral ports never run
//! out). Run with `cargo bench -p gateway --bench sockets`; needs PostgreSQL and Redis (see
//! `support`). `FLOODGATE_BENCH_QUICK=1` runs the same steps with 1,000 sockets per server.

mod support;

use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use axum::Router;
use axum::extract::State;
use axum::extract::ws::{Message as ServerMessage, WebSocket, WebSocketUpgrade};
use axum::response::Response;
use axum::routing::{get, post};
use futures::{StreamExt, TryFutureExt};
use serde_json::{Value, json};
use tokio::net::{TcpSocket, TcpStream};
use tokio::sync::{Semaphore, mpsc, watch};
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;

use support::stats::{kib, ms, quantile, verdict};
use support::worker::{self, Worker, say};
use support::{Backends, FreshPostgres, GatewayProcess, Organizer};

const PER_SERVER: usize = 15_000;
/// `FLOODGATE_BENCH_QUICK=1`: a smoke run of the same steps with few sockets.
const QUICK_PER_SERVER: usize = 1_000;
const PER_WORKER: usize = 7_500;
const PER_ADDRESS: usize = 4_000;
/// Connects (TCP + upgrade + first frame) in flight per worker: a storm, within the backlog.
const CONNECTS_IN_FLIGHT: usize = 256;
const TARGET_BYTES_PER_SOCKET: f64 = 8.0 * 1024.0;
const TARGET_P99: Duration = Duration::from_millis(300);
/// How long the sockets idle before the resident set and CPU are read.
const IDLE: Duration = Duration::from_secs(5);

fn main() {
    let role = worker::role();
    let runtime = match role.as_deref() {
        // One thread per client worker: there are several of them on two cores.
        Some("ws-client") => tokio::runtime::Builder::new_current_thread(),
        _ => tokio::runtime::Builder::new_multi_thread(),
    }
    .enable_all()
    .build()
    .expect("build a tokio runtime");
    match role.as_deref() {
        Some("ws-client") => runtime.block_on(client()),
        Some("bare-ws") => runtime.block_on(bare_server()),
        Some(other) => panic!("unknown bench role {other}"),
        None => runtime.block_on(coordinate()),
    }
}

// ---- the coordinator ----------------------------------------------------------------------

/// The servers one fleet of sockets is spread over.
enum Fleet {
    Bare(Vec<(Worker, SocketAddr)>),
    Gateways {
        gateways: Vec<GatewayProcess>,
        event: String,
    },
}

impl Fleet {
    async fn bare(count: usize) -> Self {
        let mut servers = Vec::new();
        for _ in 0..count {
            let port = support::free_port();
            let mut server = Worker::spawn("bare-ws", &[("FB_PORT", port.to_string())]);
            server.expect("listening", Duration::from_secs(10)).await;
            servers.push((server, SocketAddr::from(([127, 0, 0, 1], port))));
        }
        Fleet::Bare(servers)
    }

    /// Gateways on `backends` (the first applies the migrations alone) and an event that is
    /// open but admits nobody, so every socket waits.
    async fn gateways(count: usize, backends: &Backends, name: &str) -> Self {
        let mut gateways = vec![GatewayProcess::start(&format!("{name}-0"), backends, 60).await];
        for i in 1..count {
            gateways.push(GatewayProcess::start(&format!("{name}-{i}"), backends, 60).await);
        }
        let organizer = Organizer::new(&gateways[0].base());
        let admission = json!({ "rate_per_min": 1, "max_active": 1_000_000, "offer_s": 3600 });
        let event = organizer.create_open_event("sockets", admission, 500).await;
        organizer.tune(&event, json!({ "rate_per_min": 0 })).await;
        Fleet::Gateways { gateways, event }
    }

    fn servers(&self) -> Vec<(u32, SocketAddr)> {
        match self {
            Fleet::Bare(servers) => servers.iter().map(|(w, a)| (w.pid, *a)).collect(),
            Fleet::Gateways { gateways, .. } => gateways.iter().map(|g| (g.pid, g.addr)).collect(),
        }
    }

    fn paths(&self) -> (String, Option<String>) {
        let event = match self {
            Fleet::Bare(_) => "bare",
            Fleet::Gateways { event, .. } => event.as_str(),
        };
        let ws = format!("/api/events/{event}/queue/ws");
        let join =
            matches!(self, Fleet::Gateways { .. }).then(|| format!("/api/events/{event}/queue"));
        (ws, join)
    }

    /// Changes every waiting buyer's position once.
    async fn trigger(&self) {
        match self {
            Fleet::Bare(servers) => {
                let client = reqwest::Client::new();
                let ticks = servers.iter().map(|(_, addr)| {
                    client
                        .post(format!("http://{addr}/tick"))
                        .send()
                        .map_ok(|r| assert!(r.status().is_success(), "tick: {}", r.status()))
                });
                futures::future::try_join_all(ticks)
                    .await
                    .expect("tick the bare servers");
            }
            Fleet::Gateways { gateways, event } => {
                // One instance answers; the others hear of the offer through Redis and tick.
                Organizer::new(&gateways[0].base())
                    .tune(event, json!({ "rate_per_min": 1 }))
                    .await;
            }
        }
    }

    async fn stop(self) {
        match self {
            Fleet::Bare(servers) => {
                for (server, _) in servers {
                    server.stop().await;
                }
            }
            Fleet::Gateways { gateways, event } => {
                for gateway in gateways {
                    gateway.stop().await;
                }
                support::forget_redis_event(&event).await;
            }
        }
    }
}

/// What one fleet measured.
struct Outcome {
    name: String,
    servers: usize,
    open: usize,
    failed: usize,
    rss_before: u64,
    bytes_per_socket: f64,
    idle_cpu: f64,
    /// Trigger sent → frame received, per socket, sorted.
    from_trigger: Vec<Duration>,
    /// First frame on that server → this frame, per socket, sorted.
    spread: Vec<Duration>,
    missed: usize,
}

fn now_us() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_micros() as u64)
}

fn per_server() -> usize {
    if std::env::var_os("FLOODGATE_BENCH_QUICK").is_some() {
        QUICK_PER_SERVER
    } else {
        PER_SERVER
    }
}

/// Opens `per_server()` sockets on every server of `fleet` and measures; `next_address` is the
/// last octet of the next unused source address 127.0.0.x.
async fn measure(name: &str, fleet: &Fleet, next_address: &mut u32) -> Outcome {
    let per_server = per_server();
    let workers_per_server = per_server.div_ceil(PER_WORKER);
    let servers = fleet.servers();
    let (ws_path, join_path) = fleet.paths();
    let mut workers: Vec<(usize, Worker)> = Vec::new();
    for (s, (_, addr)) in servers.iter().enumerate() {
        for w in 0..workers_per_server {
            // An even split, the remainder to the first workers.
            let count =
                per_server / workers_per_server + usize::from(w < per_server % workers_per_server);
            let source = Ipv4Addr::new(127, 0, 0, *next_address as u8);
            *next_address += count.div_ceil(PER_ADDRESS) as u32;
            assert!(*next_address < 255, "out of 127.0.0.x source addresses");
            let mut settings = vec![
                ("FB_TARGET", addr.to_string()),
                ("FB_COUNT", count.to_string()),
                ("FB_SOURCE", source.to_string()),
                ("FB_WS_PATH", ws_path.clone()),
            ];
            if let Some(join) = &join_path {
                settings.push(("FB_JOIN_PATH", join.clone()));
            }
            workers.push((s, Worker::spawn("ws-client", &settings)));
        }
    }
    let started = Instant::now();
    for (_, w) in &mut workers {
        w.expect("joined", Duration::from_secs(180)).await;
    }
    if join_path.is_some() {
        println!(
            "  {name}: {} buyers joined in {:.1} s",
            servers.len() * per_server,
            started.elapsed().as_secs_f64()
        );
    }
    tokio::time::sleep(Duration::from_secs(1)).await;
    let rss_before: Vec<u64> = servers
        .iter()
        .map(|(pid, _)| support::rss_bytes(*pid))
        .collect();

    let started = Instant::now();
    for (_, w) in &mut workers {
        w.send("connect").await;
    }
    let (mut open, mut failed) = (0, 0);
    for (_, w) in &mut workers {
        let counts = w.expect("ready", Duration::from_secs(240)).await;
        let mut counts = counts.split(' ').map(|n| n.parse::<usize>().unwrap_or(0));
        open += counts.next().unwrap_or(0);
        failed += counts.next().unwrap_or(0);
    }
    println!(
        "  {name}: {open} sockets open ({failed} failed) in {:.1} s",
        started.elapsed().as_secs_f64()
    );

    let cpu_before: Vec<Duration> = servers
        .iter()
        .map(|(pid, _)| support::cpu_time(*pid))
        .collect();
    tokio::time::sleep(IDLE).await;
    let cpu_used: Duration = servers
        .iter()
        .zip(&cpu_before)
        .map(|((pid, _), before)| support::cpu_time(*pid).saturating_sub(*before))
        .sum();
    let rss_with: Vec<u64> = servers
        .iter()
        .map(|(pid, _)| support::rss_bytes(*pid))
        .collect();
    let grown: u64 = rss_with
        .iter()
        .zip(&rss_before)
        .map(|(with, before)| with.saturating_sub(*before))
        .sum();

    for (_, w) in &mut workers {
        w.send("arm").await;
        w.expect("armed", Duration::from_secs(10)).await;
    }
    let trigger_us = now_us();
    fleet.trigger().await;
    for (_, w) in &mut workers {
        w.send("report").await;
    }
    let mut heard_by_server: Vec<Vec<u64>> = vec![Vec::new(); servers.len()];
    let mut missed = 0;
    for (s, w) in &mut workers {
        let times = w.expect("times", Duration::from_secs(60)).await;
        let times = times.split(',').filter_map(|t| t.parse::<u64>().ok());
        for t in times.filter(|&t| t != u64::MAX) {
            if t == 0 {
                missed += 1;
            } else {
                heard_by_server[*s].push(t);
            }
        }
    }
    for (_, w) in workers {
        w.stop().await;
    }
    let mut from_trigger = Vec::new();
    let mut spread = Vec::new();
    for times in &heard_by_server {
        let first = times.iter().copied().min().unwrap_or(0);
        for &t in times {
            from_trigger.push(Duration::from_micros(t.saturating_sub(trigger_us)));
            spread.push(Duration::from_micros(t - first));
        }
    }
    from_trigger.sort();
    spread.sort();
    Outcome {
        name: name.to_owned(),
        servers: servers.len(),
        open,
        failed,
        rss_before: rss_before.iter().sum::<u64>() / servers.len() as u64,
        bytes_per_socket: grown as f64 / open.max(1) as f64,
        idle_cpu: cpu_used.as_secs_f64() / IDLE.as_secs_f64() / servers.len() as f64 * 100.0,
        from_trigger,
        spread,
        missed,
    }
}

async fn coordinate() {
    let mut next_address = 2;
    let mut outcomes = Vec::new();
    println!(
        "sockets: {} idle waiting sockets per server process",
        per_server()
    );

    let fleet = Fleet::bare(1).await;
    outcomes.push(measure("bare axum WS ×1", &fleet, &mut next_address).await);
    fleet.stop().await;

    let fleet = Fleet::gateways(1, &Backends::embedded("sockets-embedded"), "embedded").await;
    outcomes.push(measure("gateway embedded ×1", &fleet, &mut next_address).await);
    fleet.stop().await;

    let fleet = Fleet::bare(3).await;
    outcomes.push(measure("bare axum WS ×3", &fleet, &mut next_address).await);
    fleet.stop().await;

    let postgres = FreshPostgres::create().await;
    let fleet = Fleet::gateways(3, &Backends::postgres_redis(&postgres), "pg-redis").await;
    outcomes.push(measure("gateway PG+Redis ×3", &fleet, &mut next_address).await);
    fleet.stop().await;
    postgres.drop_now().await;

    report(&outcomes);
}

fn report(outcomes: &[Outcome]) {
    println!();
    println!(
        "{:<22} {:>5} {:>7} {:>6} {:>10} {:>9} {:>6} {:>8} | {:>9} {:>5} {:>5} {:>9} {:>6}",
        "fleet",
        "procs",
        "sockets",
        "failed",
        "RSS0 MiB",
        "KiB/sock",
        "×bare",
        "idle CPU",
        "tick p50",
        "p99",
        "max",
        "spread99",
        "missed"
    );
    for (i, o) in outcomes.iter().enumerate() {
        // The bare fleet of the same size is the row before each gateway fleet.
        let baseline = if i % 2 == 1 { &outcomes[i - 1] } else { o };
        println!(
            "{:<22} {:>5} {:>7} {:>6} {:>10.1} {:>9} {:>5.2}× {:>7.1}% | {:>6} ms {:>5} {:>5} {:>6} ms {:>6}",
            o.name,
            o.servers,
            o.open,
            o.failed,
            o.rss_before as f64 / 1048576.0,
            kib(o.bytes_per_socket),
            o.bytes_per_socket / baseline.bytes_per_socket.max(1.0),
            o.idle_cpu,
            ms(quantile(&o.from_trigger, 0.5)),
            ms(quantile(&o.from_trigger, 0.99)),
            ms(o.from_trigger.last().copied()),
            ms(quantile(&o.spread, 0.99)),
            o.missed,
        );
    }
    println!(
        "(RSS0: resident set per process before the sockets; KiB/sock: growth with them open; idle CPU: \
         per process over {IDLE:?} of idling; tick: trigger sent → frame received on the client; \
         spread99: first frame on that server → the 99th percentile's)"
    );
    for o in outcomes.iter().filter(|o| o.name.starts_with("gateway")) {
        let p99 = quantile(&o.from_trigger, 0.99).unwrap_or(Duration::MAX);
        println!(
            "{}: {} KiB per socket (target ≤ 8): {}; tick p99 {} ms (target ≤ 300): {}; {} of {} sockets heard it",
            o.name,
            kib(o.bytes_per_socket),
            verdict(o.bytes_per_socket <= TARGET_BYTES_PER_SOCKET),
            ms(Some(p99)),
            verdict(p99 <= TARGET_P99 && o.missed == 0 && o.failed == 0),
            o.from_trigger.len(),
            o.open,
        );
    }
}

// ---- the client worker --------------------------------------------------------------------

type Socket = WebSocketStream<TcpStream>;

/// Joins `FB_COUNT` buyers (gateways only), opens a socket for each when told `connect`, and
/// on `report` (after `arm`) prints when each socket heard its position change.
async fn client() {
    let target: SocketAddr = worker::setting("FB_TARGET")
        .parse()
        .expect("FB_TARGET is an address");
    let count = worker::number("FB_COUNT") as usize;
    let source: Ipv4Addr = worker::setting("FB_SOURCE")
        .parse()
        .expect("FB_SOURCE is an IPv4 address");
    let ws_path = worker::setting("FB_WS_PATH");
    let tokens = match std::env::var("FB_JOIN_PATH") {
        Ok(path) => join(target, &path, count, source).await,
        Err(_) => vec![String::new(); count],
    };
    say(&format!("joined {}", tokens.len()));
    let mut commands = worker::commands();
    wait_for(&mut commands, "connect").await;

    let heard = Arc::new(Heard {
        armed: AtomicBool::new(false),
        at_us: (0..count).map(|_| AtomicU64::new(0)).collect(),
        count: AtomicUsize::new(0),
    });
    let limit = Arc::new(Semaphore::new(CONNECTS_IN_FLIGHT));
    let (done, mut outcomes) = mpsc::unbounded_channel::<Result<(), String>>();
    for (i, token) in tokens.into_iter().enumerate() {
        let from = Ipv4Addr::from(u32::from(source) + (i / PER_ADDRESS) as u32);
        let url = format!("ws://{target}{ws_path}?token={token}");
        let (heard, limit, done) = (heard.clone(), limit.clone(), done.clone());
        tokio::spawn(async move {
            let permit = limit.acquire_owned().await;
            match open(from, target, &url).await {
                Ok((socket, first)) => {
                    drop(permit);
                    let _ = done.send(Ok(()));
                    listen(socket, first, i, &heard).await;
                }
                Err(error) => {
                    // Not a missed tick: the coordinator counts failed sockets apart.
                    heard.at_us[i].store(u64::MAX, Ordering::SeqCst);
                    let _ = done.send(Err(error));
                }
            }
        });
    }
    drop(done);
    let (mut open_count, mut failed) = (0, 0);
    while let Some(outcome) = outcomes.recv().await {
        match outcome {
            Ok(()) => open_count += 1,
            Err(error) => {
                if failed == 0 {
                    eprintln!("a socket failed to open: {error}");
                }
                failed += 1;
            }
        }
        if open_count + failed == count {
            break;
        }
    }
    say(&format!("ready {open_count} {failed}"));

    wait_for(&mut commands, "arm").await;
    heard.armed.store(true, Ordering::SeqCst);
    say("armed");
    wait_for(&mut commands, "report").await;
    let deadline = Instant::now() + Duration::from_secs(20);
    while heard.count.load(Ordering::SeqCst) < open_count && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let times: Vec<String> = heard
        .at_us
        .iter()
        .map(|t| t.load(Ordering::SeqCst).to_string())
        .collect();
    say(&format!("times {}", times.join(",")));
    // Hold the sockets until told to go (or killed); exiting closes them all at once.
    while let Ok(Some(_)) = commands.next_line().await {}
    std::process::exit(0);
}

/// When each socket heard its first change after `arm`.
struct Heard {
    armed: AtomicBool,
    at_us: Vec<AtomicU64>,
    count: AtomicUsize,
}

async fn wait_for(
    commands: &mut tokio::io::Lines<tokio::io::BufReader<tokio::io::Stdin>>,
    word: &str,
) {
    loop {
        match commands.next_line().await {
            Ok(Some(line)) if line == word => return,
            Ok(Some(_)) => {}
            // The coordinator went away: so do we.
            _ => std::process::exit(1),
        }
    }
}

/// Joins `count` buyers over HTTP keep-alive, each from its own forwarded address (the join
/// limit is per client address); returns their queue tokens.
async fn join(target: SocketAddr, path: &str, count: usize, source: Ipv4Addr) -> Vec<String> {
    let client = reqwest::Client::new();
    let url = format!("http://{target}{path}");
    let octet = source.octets()[3];
    futures::stream::iter(0..count)
        .map(|i| {
            let request = client.post(&url).header(
                "x-forwarded-for",
                format!("10.{octet}.{}.{}", i / 256, i % 256),
            );
            async move {
                let response = request.send().await.expect("join over HTTP");
                let status = response.status();
                let body: Value = response.json().await.expect("a JSON join answer");
                assert_eq!(status.as_u16(), 201, "join answered {status}: {body}");
                body["queue_token"]
                    .as_str()
                    .expect("a queue token in the join answer")
                    .to_owned()
            }
        })
        .buffered(32)
        .collect()
        .await
}

/// Connects from `from`, upgrades, and waits for the first frame (the current position).
async fn open(from: Ipv4Addr, target: SocketAddr, url: &str) -> Result<(Socket, String), String> {
    let mut last_error = String::new();
    // A connect storm may see a refused or reset connect; a real client retries too.
    for attempt in 0..3u64 {
        if attempt > 0 {
            tokio::time::sleep(Duration::from_millis(200 * attempt)).await;
        }
        match try_open(from, target, url).await {
            Ok(opened) => return Ok(opened),
            Err(error) => last_error = error,
        }
    }
    Err(last_error)
}

async fn try_open(
    from: Ipv4Addr,
    target: SocketAddr,
    url: &str,
) -> Result<(Socket, String), String> {
    let socket = TcpSocket::new_v4().map_err(|e| format!("socket: {e}"))?;
    socket
        .set_reuseaddr(true)
        .map_err(|e| format!("reuseaddr: {e}"))?;
    socket
        .bind(SocketAddr::from((from, 0)))
        .map_err(|e| format!("bind {from}: {e}"))?;
    let stream = socket
        .connect(target)
        .await
        .map_err(|e| format!("connect from {from}: {e}"))?;
    let _ = stream.set_nodelay(true);
    // The client keeps small buffers too, or 7,500 sockets would cost a gigabyte here.
    let config = WebSocketConfig::default().read_buffer_size(4096);
    let (mut socket, _) = tokio_tungstenite::client_async_with_config(url, stream, Some(config))
        .await
        .map_err(|e| format!("upgrade: {e}"))?;
    let first = tokio::time::timeout(Duration::from_secs(60), async {
        while let Some(frame) = socket.next().await {
            match frame {
                Ok(Message::Text(text)) => return Ok(text.as_str().to_owned()),
                Ok(Message::Close(close)) => return Err(format!("closed: {close:?}")),
                Ok(_) => {}
                Err(e) => return Err(format!("read: {e}")),
            }
        }
        Err("closed before the first frame".to_owned())
    })
    .await
    .map_err(|_| "no first frame within 60 s".to_owned())??;
    Ok((socket, first))
}

/// Reads the socket until it closes (answering pings), noting the first change after `arm`.
async fn listen(mut socket: Socket, first: String, i: usize, heard: &Heard) {
    let mut last = first;
    while let Some(frame) = socket.next().await {
        match frame {
            Ok(Message::Text(text)) => {
                if text.as_str() == last {
                    continue;
                }
                if heard.armed.load(Ordering::SeqCst)
                    && heard.at_us[i]
                        .compare_exchange(0, now_us(), Ordering::SeqCst, Ordering::SeqCst)
                        .is_ok()
                {
                    heard.count.fetch_add(1, Ordering::SeqCst);
                }
                last = text.as_str().to_owned();
            }
            Ok(Message::Close(_)) | Err(_) => return,
            Ok(_) => {}
        }
    }
}

// ---- the bare baseline server -------------------------------------------------------------

/// A bare axum WebSocket route with the gateway's buffer settings: each socket gets the
/// current position at once and a new one whenever `POST /tick` bumps the shared `watch`.
async fn bare_server() {
    let port = worker::number("FB_PORT") as u16;
    let listener = gateway::listener::bind(SocketAddr::from(([127, 0, 0, 1], port)))
        .expect("bind the bare server's port");
    let (feed, _) = watch::channel(0u64);
    let app = Router::new()
        .route("/api/events/{event}/queue/ws", get(bare_upgrade))
        .route(
            "/tick",
            post(|State(feed): State<watch::Sender<u64>>| async move {
                feed.send_modify(|n| *n += 1);
            }),
        )
        .with_state(feed);
    say("listening");
    axum::serve(listener, app)
        .await
        .expect("serve the bare WebSocket route");
}

async fn bare_upgrade(State(feed): State<watch::Sender<u64>>, ws: WebSocketUpgrade) -> Response {
    ws.read_buffer_size(4096)
        .write_buffer_size(0)
        .max_frame_size(1024)
        .max_message_size(1024)
        .on_upgrade(move |socket| bare_socket(socket, feed.subscribe()))
}

async fn bare_socket(mut socket: WebSocket, mut feed: watch::Receiver<u64>) {
    let position = |n: u64| {
        let body = json!({"type": "position", "position": 1_000_000 - n, "estimated_wait_s": null});
        ServerMessage::Text(body.to_string().into())
    };
    // The same keepalive timer the gateway keeps per socket.
    let mut ping = tokio::time::interval(Duration::from_secs(25));
    ping.reset();
    let first = *feed.borrow_and_update();
    if socket.send(position(first)).await.is_err() {
        return;
    }
    loop {
        tokio::select! {
            changed = feed.changed() => {
                if changed.is_err() {
                    return;
                }
                let n = *feed.borrow_and_update();
                if socket.send(position(n)).await.is_err() {
                    return;
                }
            }
            _ = ping.tick() => {
                if socket.send(ServerMessage::Ping(Default::default())).await.is_err() {
                    return;
                }
            }
            incoming = socket.recv() => match incoming {
                Some(Ok(ServerMessage::Close(_))) | Some(Err(_)) | None => return,
                Some(Ok(_)) => {}
            },
        }
    }
}
