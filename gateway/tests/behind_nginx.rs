//! The gateway behind the nginx configuration the repository ships (`deploy/nginx/`), started
//! on a free loopback port: the waiting room's WebSocket passes through (join, positions, the
//! offer, the claim), the gateway sees each buyer's own address in `X-Forwarded-For` (the
//! per-address join limit counts buyers, not the proxy, and a forged header changes nothing),
//! the public queue snapshot is answered from nginx's cache: two reads within a second reach
//! the gateway once, and every join is logged with the time it reached the door and its key.
#![allow(clippy::unwrap_used)]

mod support;

use std::net::{IpAddr, Ipv4Addr};

use reqwest::Method;
use serde_json::json;

use support::nginx::Nginx;
use support::{Backends, spawn_app_with};

/// The gateways of this file share one process's metrics: a test that counts the snapshot
/// reads reaching the gateway holds this while any other test reads a snapshot.
static SNAPSHOT_READS: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// The gateway believes `X-Forwarded-For` from nginx (on 127.0.0.1) only, as production does
/// from its proxy's address: test buyers connect to nginx from other loopback addresses.
fn trusting_nginx(config: &mut gateway::config::Config) {
    config.trusted_proxies = vec!["127.0.0.1/32".parse().unwrap()];
}

#[tokio::test]
async fn the_waiting_room_socket_passes_through_nginx() {
    let app = spawn_app_with(Backends::Embedded, trusting_nginx).await;
    let nginx = Nginx::start(app.base_url.trim_start_matches("http://"));
    let front = nginx.front(&app.organizer_key);
    let event = front
        .create_event(10, json!({ "rate_per_min": 6000, "max_active": 1 }))
        .await;
    // The first in line takes the only active place; the second waits behind it.
    front.join_queue(&event).await;
    let queued = front.join_queue(&event).await;
    let mut socket = front.open_socket(&queued).await;
    let position = socket.next_of("position").await;
    assert!(position["position"].as_u64().is_some(), "{position}");
    // Room for one more: the offer, then the claim, over the same proxied socket.
    front
        .tune(&event, json!({ "max_active": 2 }))
        .await
        .expect(200);
    socket.wait_for_turn().await;
    let admitted = socket.claim().await;
    assert!(!admitted.admission_token.is_empty());
    socket.close().await;
}

/// A client of nginx connecting from `from` (any 127.x address is this machine's loopback).
fn client_from(from: Ipv4Addr) -> reqwest::Client {
    reqwest::Client::builder()
        .local_address(IpAddr::V4(from))
        .build()
        .unwrap()
}

#[tokio::test]
async fn the_gateway_limits_joins_by_the_address_nginx_forwards() {
    let app = spawn_app_with(Backends::Embedded, |config| {
        trusting_nginx(config);
        config.join_limit_per_min = 2;
    })
    .await;
    let nginx = Nginx::start(app.base_url.trim_start_matches("http://"));
    let event = app.create_event(10, json!({})).await;
    let join_url = format!("http://{}/api/events/{event}/queue", nginx.addr);
    let join = |client: &reqwest::Client, forged: Option<&str>| {
        let mut request = client.post(&join_url);
        if let Some(forged) = forged {
            request = request.header("x-forwarded-for", forged);
        }
        async move { request.send().await.unwrap().status().as_u16() }
    };
    let first = client_from(Ipv4Addr::new(127, 0, 0, 2));
    let second = client_from(Ipv4Addr::new(127, 0, 0, 3));
    assert_eq!(join(&first, None).await, 201);
    assert_eq!(join(&first, None).await, 201);
    // The third join from the same buyer is over its limit, whatever it writes in the header.
    assert_eq!(join(&first, None).await, 429);
    assert_eq!(join(&first, Some("198.51.100.9")).await, 429);
    // Another buyer behind the same proxy has a limit of its own.
    assert_eq!(join(&second, None).await, 201);
}

#[tokio::test]
async fn nginx_logs_when_each_join_reached_the_door() {
    let app = spawn_app_with(Backends::Embedded, trusting_nginx).await;
    let nginx = Nginx::start(app.base_url.trim_start_matches("http://"));
    let event = app.create_event(10, json!({})).await;
    let join_url = format!("http://{}/api/events/{event}/queue", nginx.addr);
    let key = uuid::Uuid::new_v4().to_string();
    let before_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as f64;
    let client = reqwest::Client::new();
    let joined = client
        .post(&join_url)
        .header("idempotency-key", &key)
        .send()
        .await
        .unwrap();
    assert_eq!(joined.status().as_u16(), 201);
    // Other requests are not logged: a snapshot read between two joins.
    let snapshot = format!("{join_url}/snapshot");
    {
        let _counted = SNAPSHOT_READS.lock().await;
        client.get(&snapshot).send().await.unwrap();
    }
    // The log is written at least once a second.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let line = loop {
        let log = std::fs::read_to_string(nginx.join_log()).unwrap_or_default();
        if let Some(line) = log.lines().find(|l| l.ends_with(&key)) {
            assert_eq!(log.lines().count(), 1, "only the join: {log}");
            break line.to_owned();
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no line for {key} in the door log: {log:?}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    };
    let fields: Vec<&str> = line.split(' ').collect();
    assert_eq!(fields.len(), 4, "{line}");
    let at_s: f64 = fields[0].parse().unwrap();
    let took_s: f64 = fields[1].parse().unwrap();
    assert_eq!(fields[2], "201", "{line}");
    let door_ms = (at_s - took_s) * 1000.0;
    // nginx's clock is cached per event loop turn: within a second of the request.
    assert!(
        (door_ms - before_ms).abs() < 1_000.0,
        "door {door_ms} against {before_ms}: {line}"
    );
}

/// The gateway's count of answered snapshot requests, from its `/metrics`.
async fn snapshots_served(app: &support::Gateway) -> f64 {
    let metrics = app.get("/metrics").await.text;
    metrics
        .lines()
        .filter(|l| {
            l.starts_with("floodgate_http_requests_total")
                && l.contains("queue/snapshot")
                && l.contains("class=\"ok\"")
        })
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

#[tokio::test]
async fn nginx_answers_the_snapshot_from_its_cache() {
    let app = spawn_app_with(Backends::Embedded, trusting_nginx).await;
    let nginx = Nginx::start(app.base_url.trim_start_matches("http://"));
    let front = nginx.front(&app.organizer_key);
    let event = app.create_event(10, json!({})).await;
    let path = format!("/api/events/{event}/queue/snapshot");
    let counting = SNAPSHOT_READS.lock().await;
    let before = snapshots_served(&app).await;
    let first = front.request(Method::GET, &path).send().await.unwrap();
    let second = front.request(Method::GET, &path).send().await.unwrap();
    let cache = |r: &reqwest::Response| {
        r.headers()
            .get("x-cache-status")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("none")
            .to_owned()
    };
    assert_eq!(first.status(), 200, "{first:?}");
    assert_eq!(second.status(), 200, "{second:?}");
    assert_eq!(cache(&first), "MISS");
    assert_eq!(
        cache(&second),
        "HIT",
        "the second read within a second is nginx's"
    );
    assert_eq!(
        first.headers().get("etag"),
        second.headers().get("etag"),
        "the cached copy is the gateway's"
    );
    let first_body = first.text().await.unwrap();
    assert_eq!(first_body, second.text().await.unwrap());
    assert_eq!(
        snapshots_served(&app).await - before,
        1.0,
        "two reads within a second reach the gateway once"
    );
    drop(counting);
    // Per-buyer routes are never cached.
    let queued = front.join_queue(&event).await;
    let status = front
        .request(Method::GET, &format!("/api/events/{event}/queue/status"))
        .bearer_auth(&queued.queue_token)
        .send()
        .await
        .unwrap();
    assert_eq!(status.status(), 200);
    assert!(
        status.headers().get("x-cache-status").is_none(),
        "{status:?}"
    );
}

/// Started as root, nginx's workers run as `nobody` and keep the snapshot cache under the
/// prefix: behind a folder they cannot search, every snapshot read would fail, so `start.sh`
/// refuses such a prefix before nginx starts.
#[test]
fn start_refuses_a_prefix_its_workers_cannot_reach() {
    use std::os::unix::fs::PermissionsExt;
    use std::process::{Command, Stdio};
    use std::time::{Duration, Instant};

    let uid = Command::new("id").arg("-u").output().unwrap();
    assert_eq!(
        String::from_utf8_lossy(&uid.stdout).trim(),
        "0",
        "this test runs as root, as CI does: only then do nginx's workers change user"
    );
    let closed = std::env::temp_dir().join(format!(
        "floodgate-closed-{}",
        uuid::Uuid::now_v7().simple()
    ));
    std::fs::create_dir(&closed).unwrap();
    std::fs::set_permissions(&closed, std::fs::Permissions::from_mode(0o700)).unwrap();
    let script =
        std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../deploy/nginx/start.sh");
    let mut child = Command::new("bash")
        .arg(&script)
        .args(["--listen", "127.0.0.1:1", "--upstream", "127.0.0.1:2"])
        .arg("--prefix")
        .arg(closed.join("nginx"))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > Duration::from_secs(20) {
            let _ = child.kill();
            panic!("start.sh ran nginx behind a folder its workers cannot search");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let mut why = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut why).unwrap();
    let _ = std::fs::remove_dir_all(&closed);
    assert!(!status.success(), "{why}");
    assert!(why.contains("cannot reach"), "{why}");
}
