//! The organizer's CSV exports end to end: each file read back with a real CSV parser (RFC
//! 4180 quoting, formula cells defused) after a small sale, on both databases; bad requests
//! refused; and an export of 100,000 orders streamed to a slow reader while the gateway's
//! memory stays flat (the gateway binary in a process of its own, so its resident set is the
//! export's alone).

#![allow(clippy::unwrap_used)]

mod support;

use std::time::Duration;

use reqwest::Method;
use serde_json::{Value, json};

use support::buyer::{Held, seat};
use support::process::{GatewayProcess, status_bytes};
use support::team::World;
use support::{Backends, TestApp, spawn_app};

/// The client's own resident set is read in the large export's last check: the tests of this
/// file run one at a time, so that reading sees only the export it holds.
static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// The rows of a CSV answer, header first, parsed by the `csv` crate.
fn parse(text: &str) -> Vec<Vec<String>> {
    csv::ReaderBuilder::new()
        .has_headers(false)
        .from_reader(text.as_bytes())
        .records()
        .map(|r| {
            r.expect("a well-formed CSV record")
                .iter()
                .map(str::to_owned)
                .collect()
        })
        .collect()
}

async fn export(app: &TestApp, key: &str, event: &str, file: &str) -> Vec<Vec<String>> {
    let response = app
        .with_key(
            key,
            Method::GET,
            &format!("/api/admin/events/{event}/exports/{file}.csv"),
        )
        .send()
        .await
        .expect("the gateway answers");
    assert_eq!(response.status(), 200);
    let header = |name: &str| response.headers()[name].to_str().unwrap().to_owned();
    assert_eq!(header("content-type"), "text/csv; charset=utf-8");
    assert_eq!(
        header("content-disposition"),
        format!("attachment; filename=\"{event}-{file}.csv\"")
    );
    let text = response.text().await.unwrap();
    assert!(text.ends_with("\r\n"), "records end in CRLF: {text:?}");
    parse(&text)
}

/// Column `name` of each data row.
fn column<'a>(rows: &'a [Vec<String>], name: &str) -> Vec<&'a str> {
    let at = rows[0]
        .iter()
        .position(|h| h == name)
        .unwrap_or_else(|| panic!("no {name}"));
    rows[1..].iter().map(|r| r[at].as_str()).collect()
}

async fn every_export_after_a_small_sale(backends: Backends) {
    let _alone = ONE_AT_A_TIME.lock().await;
    let app = spawn_app(backends).await;
    // A key name a spreadsheet would run, and an event name with quotes, a comma and a line
    // break: they reach the audit export.
    let mischief = "=HYPERLINK(\"http://x\",\"y\")";
    let viewer = app.add_key("Viewer", "viewer").await;
    let admin = app.add_key(mischief, "admin").await;
    let event = format!("ev-export-{}", uuid::Uuid::now_v7().simple());
    let odd_name = "The \"Big\", night\nsecond line";
    app.send(
        app.with_key(&admin.key, Method::POST, "/api/admin/events")
            .json(&json!({"event": event, "name": odd_name,
                          "admission": {"rate_per_min": 6000, "max_active": 50}})),
    )
    .await
    .expect(201);
    app.send(
        app.with_key(
            &admin.key,
            Method::POST,
            &format!("/api/admin/events/{event}/seats"),
        )
        .json(&json!({"generate": {"section": "A", "rows": 1, "per_row": 4, "price_cents": 2500}})),
    )
    .await
    .expect(200);
    let buyer = app.admit(&event).await;
    let held = Held::from(&app.hold(&buyer, &[seat(1), seat(2)]).await.expect(201));
    app.checkout(&buyer, &held.hold_id, "pm_card_visa", "k1")
        .await
        .expect(202);
    let order = app.wait_confirmed(&buyer, &held.hold_id).await;
    let other = app.admit(&event).await;
    let released = Held::from(&app.hold(&other, &[seat(3)]).await.expect(201));
    app.release(&other, &released.hold_id).await.expect(204);

    let orders = export(&app, &viewer.key, &event, "orders").await;
    assert_eq!(
        orders[0],
        [
            "order",
            "created_at",
            "seats",
            "seat_count",
            "amount_cents",
            "currency",
            "status",
            "payment_status",
            "hold"
        ]
    );
    assert_eq!(orders.len(), 2, "{orders:?}");
    assert_eq!(column(&orders, "order"), [order.as_str()]);
    assert_eq!(column(&orders, "seats"), ["A-A-1 A-A-2"]);
    assert_eq!(column(&orders, "seat_count"), ["2"]);
    assert_eq!(column(&orders, "amount_cents"), ["5000"]);
    assert_eq!(column(&orders, "currency"), ["usd"]);
    assert_eq!(column(&orders, "hold"), [held.hold_id.as_str()]);
    assert!(["authorized", "captured"].contains(&column(&orders, "payment_status")[0]));
    time::OffsetDateTime::parse(
        column(&orders, "created_at")[0],
        &time::format_description::well_known::Rfc3339,
    )
    .expect("times are RFC 3339");

    let sales = export(&app, &viewer.key, &event, "sales").await;
    assert_eq!(column(&sales, "seat"), ["A-A-1", "A-A-2"]);
    assert_eq!(column(&sales, "order"), [order.as_str(), order.as_str()]);
    assert_eq!(column(&sales, "price_cents"), ["2500", "2500"]);

    let holds = export(&app, &viewer.key, &event, "holds").await;
    assert_eq!(
        column(&holds, "hold"),
        [held.hold_id.as_str(), released.hold_id.as_str()]
    );
    assert_eq!(column(&holds, "state"), ["confirmed", "released"]);
    assert_eq!(column(&holds, "order"), [order.as_str(), ""]);

    let admissions = export(&app, &viewer.key, &event, "admissions").await;
    assert_eq!(admissions.len(), 3, "{admissions:?}");
    assert_eq!(column(&admissions, "lane"), ["general", "general"]);
    assert_eq!(column(&admissions, "place"), ["1", "2"]);
    // Both offers were claimed: none lapsed, each has its offer and its claim.
    assert_eq!(column(&admissions, "lapsed"), ["false", "false"]);
    assert!(
        column(&admissions, "offered_at")
            .iter()
            .all(|t| !t.is_empty())
    );
    assert!(
        column(&admissions, "claimed_at")
            .iter()
            .all(|t| !t.is_empty())
    );
    assert_eq!(
        column(&admissions, "session"),
        [buyer.session_id.as_str(), other.session_id.as_str()]
    );

    let audit = export(&app, &viewer.key, &event, "audit").await;
    assert_eq!(audit[0], ["at", "actor", "key_id", "action", "detail"]);
    assert_eq!(column(&audit, "action"), ["create_event", "add_seats"]);
    // The formula is defused with a leading `'`; everything else comes back as it was.
    let defused = format!("'{mischief}");
    assert_eq!(
        column(&audit, "actor"),
        [defused.as_str(), defused.as_str()]
    );
    assert_eq!(
        column(&audit, "key_id"),
        [admin.id.as_str(), admin.id.as_str()]
    );
    let created: Value = serde_json::from_str(column(&audit, "detail")[0]).unwrap();
    assert_eq!(created["name"], odd_name);
}

#[tokio::test]
async fn every_export_parses_back_after_a_small_sale_sqlite() {
    every_export_after_a_small_sale(Backends::Embedded).await;
}

#[tokio::test]
async fn every_export_parses_back_after_a_small_sale_postgres() {
    every_export_after_a_small_sale(Backends::Postgres).await;
}

#[tokio::test]
async fn bad_export_requests_are_refused_and_change_nothing() {
    let _alone = ONE_AT_A_TIME.lock().await;
    let app = spawn_app(Backends::Embedded).await;
    let event = app.create_event(2, json!({})).await;
    let before = World::of(&app).await;
    for (path, status, code) in [
        (
            "/api/admin/events/ev-none/exports/orders.csv".to_owned(),
            404,
            "not_found",
        ),
        (
            format!("/api/admin/events/{event}/exports/seats.csv"),
            404,
            "not_found",
        ),
        (
            format!("/api/admin/events/{event}/exports/orders"),
            404,
            "not_found",
        ),
        (
            "/api/admin/events/bad%20id/exports/orders.csv".to_owned(),
            400,
            "bad_request",
        ),
    ] {
        app.send(app.admin(Method::GET, &path))
            .await
            .expect_problem(status, code);
    }
    app.send(app.request(
        Method::GET,
        &format!("/api/admin/events/{event}/exports/orders.csv"),
    ))
    .await
    .expect_problem(401, "unauthorized");
    app.send(app.admin(
        Method::POST,
        &format!("/api/admin/events/{event}/exports/orders.csv"),
    ))
    .await
    .expect_problem(405, "method_not_allowed");
    assert_eq!(World::of(&app).await, before);
}

const BULK_ORDERS: i64 = 100_000;
/// Rows per bulk statement: each stays well inside the gateway's statement timeout on a
/// loaded machine.
const BULK_CHUNK: i64 = 10_000;
/// Each bulk order is for six seats with a stadium's long ids (a row of about 240 bytes).
const SIX_SEATS: &str = "'[\"Floor-A-Row-12-Seat-101\",\"Floor-A-Row-12-Seat-102\",\"Floor-A-Row-12-Seat-103\",\"Floor-A-Row-12-Seat-104\",\"Floor-A-Row-12-Seat-105\",\"Floor-A-Row-12-Seat-106\"]'";

/// Orders made in bulk by SQL, each with the session, hold and payment it needs.
async fn bulk_orders(app: &TestApp, event: &str) {
    let dialect = app.store.dialect();
    let series = "with recursive n(i) as (select $3 union all select i + 1 from n where i < $2) ";
    let statements: [&'static str; 4] = [
        "insert into admission_sessions (session_id, event_id, ticket_id, queue_place, expires_at)
         select 's_bulk_' || i, $1, 't_bulk_' || i, i, NOW from n",
        "insert into holds (hold_id, event_id, session_id, receipt_key, state, seats, total_cents,
                            expires_at, max_expires_at, order_id)
         select 'h_bulk_' || i, $1, 's_bulk_' || i, 'r_bulk_' || i, 'confirmed',
                SIX_SEATS, 7500, NOW, NOW, 'o_bulk_' || i from n",
        "insert into payment_attempts (attempt_id, hold_id, event_id, amount_cents, currency,
                                       payment_method, state, resolve_by, abandon_at)
         select 'pa_bulk_' || i, 'h_bulk_' || i, $1, 7500, 'usd', 'pm_card_visa', 'captured',
                NOW, NOW from n",
        "insert into orders (order_id, event_id, hold_id, attempt_id, seats, total_cents, status,
                             payment_status)
         select 'o_bulk_' || i, $1, 'h_bulk_' || i, 'pa_bulk_' || i,
                SIX_SEATS, 7500, 'confirmed', 'captured' from n",
    ];
    for statement in statements {
        let statement = statement.replace("SIX_SEATS", SIX_SEATS);
        let text: &'static str = Box::leak(format!("{series}{statement}").into_boxed_str());
        for first in (1..=BULK_ORDERS).step_by(BULK_CHUNK as usize) {
            let last = (first + BULK_CHUNK - 1).min(BULK_ORDERS);
            sqlx::query(dialect.sql(text))
                .bind(event)
                .bind(last)
                .bind(first)
                .execute(app.store.pool())
                .await
                .unwrap_or_else(|e| panic!("bulk insert failed: {e}\n{text}"));
        }
    }
}

/// What streaming an export to its end showed.
struct Streamed {
    bytes: u64,
    lines: u64,
    /// The gateway's resident set when it started and ended.
    rss_before: u64,
    rss_after: u64,
}

/// Streams `url` from `gateway` to its end, pausing `pause` after each chunk.
async fn stream(gateway: &GatewayProcess, key: &str, url: &str, pause: Duration) -> Streamed {
    let rss_before = gateway.rss();
    let mut response = reqwest::Client::new()
        .get(url)
        .bearer_auth(key)
        .timeout(Duration::from_secs(300))
        .send()
        .await
        .expect("the export starts");
    assert_eq!(response.status(), 200);
    let (mut bytes, mut lines) = (0u64, 0u64);
    let mut ends_whole = false;
    while let Some(chunk) = response
        .chunk()
        .await
        .expect("the export streams to its end")
    {
        bytes += chunk.len() as u64;
        lines += chunk.iter().filter(|b| **b == b'\n').count() as u64;
        ends_whole = chunk.ends_with(b"\r\n");
        if !pause.is_zero() {
            tokio::time::sleep(pause).await;
        }
    }
    assert!(ends_whole, "the body ends with a whole record");
    Streamed {
        bytes,
        lines,
        rss_before,
        rss_after: gateway.rss(),
    }
}

/// The orders are made through an in-process gateway; the export is measured on the gateway
/// binary started on the same database, so its resident set holds nothing but its own work.
async fn a_large_export_streams_in_flat_memory(backends: Backends) {
    let _alone = ONE_AT_A_TIME.lock().await;
    let app = spawn_app(backends).await;
    let event = app.create_event(3, json!({})).await;
    bulk_orders(&app, &event).await;
    let viewer = app.add_key("Accounts", "viewer").await;
    // The allocator returns freed pages at once, so the resident set is the gateway's live
    // memory rather than pages kept for reuse (by default a sawtooth of tens of megabytes).
    let gateway = GatewayProcess::start(
        app.database_url(),
        app.redis_url(),
        &app.organizer_key,
        &[("MIMALLOC_PURGE_DELAY", "0")],
    )
    .await;
    let url = format!(
        "{}/api/admin/events/{event}/exports/orders.csv",
        gateway.base
    );

    // The first pass pays what is paid once, whatever the export's size: the allocator's
    // arenas and the pool's connections. The second shows where that settles.
    let started = gateway.rss();
    for pass in 1..=2 {
        let warm = stream(&gateway, &viewer.key, &url, Duration::ZERO).await;
        println!(
            "{backends:?}: pass {pass} of {} bytes, the gateway's resident set {} → {} bytes \
             (at start {started}, highest so far {})",
            warm.bytes,
            warm.rss_before,
            warm.rss_after,
            gateway.peak_rss()
        );
    }
    // The measured passes, read slowly: the gateway must wait for the reader rather than read
    // ahead into memory. The kernel's high-water mark sees every peak between readings.
    let settled = gateway.peak_rss();
    let (mut bytes, mut streamed) = (0, 0);
    for pass in 1..=2 {
        let slow = stream(&gateway, &viewer.key, &url, Duration::from_millis(2)).await;
        assert_eq!(
            slow.lines,
            BULK_ORDERS as u64 + 1,
            "every order and the header"
        );
        bytes = slow.bytes;
        streamed += slow.bytes;
        println!(
            "{backends:?}: slow pass {pass}, {BULK_ORDERS} orders, {bytes} bytes; the gateway's \
             resident set {} → {} bytes, highest {}",
            slow.rss_before,
            slow.rss_after,
            gateway.peak_rss()
        );
    }
    // Two more whole exports streamed: a gateway that followed its rows would raise its peak
    // by more than the bytes of one (the check below shows the measure sees that, at about
    // twice the bytes); one that streams stays within a couple of megabytes of the peak it
    // had settled at (the pool opens connections as other work needs them).
    let raised = gateway.peak_rss().saturating_sub(settled);
    println!("{backends:?}: two slow passes of {streamed} bytes raised the peak by {raised} bytes");
    assert!(
        raised * 4 < bytes,
        "the gateway's peak memory rose by {raised} bytes over two exports of {bytes} bytes: \
         it follows the rows"
    );

    // The measure can tell: the same export held whole in memory (here, by the test's own
    // client) shows in the resident set read the same way.
    let own = || {
        let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
        status_bytes(&status, "VmRSS:")
    };
    let held = own();
    let whole = reqwest::Client::new()
        .get(&url)
        .bearer_auth(&viewer.key)
        .timeout(Duration::from_secs(300))
        .send()
        .await
        .expect("the export starts")
        .bytes()
        .await
        .expect("the whole export");
    let grown = own().saturating_sub(held);
    println!("{backends:?}: held whole, the resident set grew by {grown} bytes");
    assert_eq!(whole.len() as u64, bytes);
    assert!(
        grown * 2 > bytes,
        "a whole export in memory is visible: {grown}"
    );
}

#[tokio::test]
async fn an_export_of_100000_orders_streams_in_flat_memory_postgres() {
    a_large_export_streams_in_flat_memory(Backends::Postgres).await;
}
