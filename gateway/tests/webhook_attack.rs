//! Hostile webhook deliveries against a real gateway: a `Stripe-Signature` header stuffed with
//! tens of thousands of candidates is refused as problem+json, without hashing the body per
//! candidate. The CPU the refusal cost is printed (run with `--nocapture` to read it).

mod support;

use std::time::{Duration, Instant};

use reservation::payments::webhook::{self, SignatureError};
use support::http::Answer;
use support::{Backends, spawn_app};

/// The attack as first seen: one request whose header carries 60,000 empty `v1=` entries.
const ENTRIES: usize = 60_000;

fn now() -> i64 {
    time::OffsetDateTime::now_utc().unix_timestamp()
}

fn flood_header(t: i64) -> String {
    format!("t={t}{}", ",v1=".repeat(ENTRIES))
}

/// A plausible event body of about 4 KiB: what the attacker would have every candidate hash.
fn body() -> Vec<u8> {
    let padding = "x".repeat(4 * 1024);
    format!(
        r#"{{"id":"evt_flood","type":"payment_intent.succeeded","data":{{"object":{{"id":"pi_flood","object":"payment_intent","metadata":{{"note":"{padding}"}}}}}}}}"#
    )
    .into_bytes()
}

/// This process's CPU time (user + system, every thread), from `/proc/self/stat`.
fn process_cpu() -> Duration {
    let stat = std::fs::read_to_string("/proc/self/stat").expect("read /proc/self/stat");
    // Fields after the command name (which is in parentheses and may hold spaces).
    let rest = stat.rsplit_once(')').expect("a stat line").1;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| fields[i].parse::<u64>().expect("a tick count");
    // utime and stime are fields 14 and 15 of the line, 12 and 13 after the name; the kernel
    // reports them in USER_HZ, which is 100 on Linux.
    Duration::from_millis((ticks(11) + ticks(12)) * 10)
}

/// This thread's time on a CPU, in nanoseconds, from `/proc/thread-self/schedstat`.
fn thread_cpu() -> Duration {
    let stat = std::fs::read_to_string("/proc/thread-self/schedstat")
        .expect("read /proc/thread-self/schedstat");
    let ns = stat
        .split_whitespace()
        .next()
        .and_then(|n| n.parse::<u64>().ok())
        .expect("a run time in nanoseconds");
    Duration::from_nanos(ns)
}

async fn deliver(app: &support::TestApp, header: &str, body: Vec<u8>) -> Answer {
    let request = app
        .request(reqwest::Method::POST, "/api/payments/webhook")
        .header("content-type", "application/json")
        .header("stripe-signature", header)
        .body(body);
    app.send(request).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_header_stuffed_with_candidates_is_refused_as_a_problem() {
    let app = spawn_app(Backends::Embedded).await;

    let header = flood_header(now());
    let (cpu, wall) = (process_cpu(), Instant::now());
    let answer = deliver(&app, &header, body()).await;
    let (cpu, wall) = (process_cpu() - cpu, wall.elapsed());
    eprintln!(
        "webhook with {ENTRIES} entries ({} bytes of header): answered {} in {wall:?}, \
         process CPU {:.3} s",
        header.len(),
        answer.status,
        cpu.as_secs_f64()
    );
    assert!(
        (400..500).contains(&answer.status),
        "a flooded header is the sender's fault: {answer:?}"
    );
    assert!(
        answer.content_type.starts_with("application/problem+json"),
        "refused as problem+json: {answer:?}"
    );
    assert_eq!(answer.body["status"], answer.status, "{answer:?}");

    // The most candidates allowed, all wrong, at a current time: refused as a bad signature,
    // and the gateway still takes the next delivery.
    let mut most = format!("t={}", now());
    for _ in 1..webhook::MAX_ENTRIES {
        most.push_str(&format!(",v1={}", "ab".repeat(32)));
    }
    let answer = deliver(&app, &most, body()).await;
    assert_eq!(answer.status, 400, "{answer:?}");
    assert!(
        answer.content_type.starts_with("application/problem+json"),
        "{answer:?}"
    );
    assert!(
        answer
            .text
            .contains(&SignatureError::BadSignature.to_string()),
        "told that no signature matched: {answer:?}"
    );
    // A stale timestamp is refused as stale even when the header is otherwise wrong.
    let stale = format!("t={},v1={}", now() - 3_600, "ab".repeat(32));
    let answer = deliver(&app, &stale, body()).await;
    assert_eq!(answer.status, 400, "{answer:?}");
    assert!(
        answer.text.contains("timestamp"),
        "told that the timestamp is stale: {answer:?}"
    );
    app.gateway.stop().await;
}

/// `verify` alone on the flooded header: the refusal and its CPU time on this thread.
#[test]
fn verify_refuses_the_flooded_header_before_hashing() {
    let now = now();
    let header = flood_header(now);
    let body = body();
    let (cpu, wall) = (thread_cpu(), Instant::now());
    let got = webhook::verify(b"whsec_attack", Some(&header), &body, now);
    let (cpu, wall) = (thread_cpu() - cpu, wall.elapsed());
    eprintln!(
        "verify of the {ENTRIES}-entry header: {got:?} in {wall:?}, thread CPU {:.6} s",
        cpu.as_secs_f64()
    );
    assert_eq!(got, Err(SignatureError::TooLarge));
}
