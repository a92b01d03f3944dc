//! What admission did, as the organizer reads it, after a small real sale on both backends:
//! the per-minute timeline adds up to the joins, offers, claims, lapses, holds and seats sold
//! that happened; its forecast agrees with itself and gives no time while the queue is paused;
//! the admission log lists the offer that lapsed unclaimed and the claimed ones with their
//! session. Bad requests are refused and change nothing.

#![allow(clippy::unwrap_used)]

use crate::support;

use std::time::Duration;

use reqwest::Method;
use serde_json::{Value, json};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

use support::buyer::{Held, seat};
use support::http::DEADLINE;
use support::team::World;
use support::{Backends, TestApp, spawn_app};

fn at(text: &Value) -> OffsetDateTime {
    OffsetDateTime::parse(text.as_str().unwrap(), &Rfc3339)
        .unwrap_or_else(|e| panic!("{text} is not RFC 3339: {e}"))
}

async fn timeline(app: &TestApp, event: &str) -> Value {
    app.send(app.admin(Method::GET, &format!("/api/admin/events/{event}/timeline")))
        .await
        .expect(200)
        .body
}

/// Reads the timeline until `done` holds (the join count reaches the database with the
/// meter's next checkpoint, a lapse once its deadline passed); returns that answer.
async fn timeline_until(app: &TestApp, event: &str, done: impl Fn(&Value) -> bool) -> Value {
    let started = tokio::time::Instant::now();
    loop {
        let answer = timeline(app, event).await;
        if done(&answer) {
            return answer;
        }
        assert!(
            started.elapsed() < DEADLINE,
            "the timeline never got there: {answer}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The sum over the minutes of each figure.
fn totals(answer: &Value) -> Value {
    let mut sums =
        json!({"joins": 0, "offers": 0, "claims": 0, "lapsed": 0, "holds": 0, "sales": 0});
    for minute in answer["minutes"].as_array().unwrap() {
        for (name, sum) in sums.as_object_mut().unwrap() {
            *sum = json!(sum.as_i64().unwrap() + minute[name.as_str()].as_i64().unwrap());
        }
    }
    sums
}

/// The rows of a CSV answer, header first.
fn parse(text: &str) -> Vec<Vec<String>> {
    csv::ReaderBuilder::new()
        .has_headers(false)
        .from_reader(text.as_bytes())
        .records()
        .map(|r| r.unwrap().iter().map(str::to_owned).collect())
        .collect()
}

/// The data row whose `column` is `value`, by header name.
fn row_where<'a>(
    rows: &'a [Vec<String>],
    column: &str,
    value: &str,
) -> std::collections::HashMap<&'a str, &'a str> {
    let at = rows[0].iter().position(|h| h == column).unwrap();
    let row = rows[1..]
        .iter()
        .find(|r| r[at] == value)
        .unwrap_or_else(|| panic!("no row with {column} = {value}: {rows:?}"));
    rows[0]
        .iter()
        .map(String::as_str)
        .zip(row.iter().map(String::as_str))
        .collect()
}

async fn the_timeline_and_the_log_tell_what_happened(backends: Backends) {
    let app = spawn_app(backends).await;
    // Offers lapse after a second, so a buyer who never claims shows up quickly.
    let event = app
        .create_event(
            4,
            json!({"rate_per_min": 6000, "max_active": 10, "offer_s": 1}),
        )
        .await;

    // The first buyer is offered a turn and never claims it.
    let absent = app.join_queue(&event).await;
    app.poll_until(&absent, "offer_lapsed").await;
    // The second buys two seats; the third holds one and is still choosing.
    let buyer_queued = app.join_queue(&event).await;
    app.poll_until(&buyer_queued, "offered").await;
    let buyer = app.claim(&buyer_queued).await;
    let held = Held::from(&app.hold(&buyer, &[seat(1), seat(2)]).await.expect(201));
    app.checkout(&buyer, &held.hold_id, "pm_card_visa", "k1")
        .await
        .expect(202);
    app.wait_confirmed(&buyer, &held.hold_id).await;
    let other = app.admit(&event).await;
    app.hold(&other, &[seat(3)]).await.expect(201);

    let expected =
        json!({"joins": 3, "offers": 3, "claims": 2, "lapsed": 1, "holds": 2, "sales": 2});
    let answer = timeline_until(&app, &event, |t| {
        totals(t) == expected && t["forecast"]["seats_left"] == 1
    })
    .await;
    assert_eq!(answer["event"], event.as_str());

    // Every minute, from no later than the opening to the current one, one after another.
    let now = at(&answer["now"]);
    let opens_at = at(&answer["opens_at"]);
    let minutes = answer["minutes"].as_array().unwrap();
    assert!(!minutes.is_empty() && minutes.len() <= 1_440, "{answer}");
    let first = at(&minutes[0]["minute"]);
    assert!(first <= opens_at, "{answer}");
    assert!(opens_at - first < time::Duration::minutes(1), "{answer}");
    for (i, minute) in minutes.iter().enumerate() {
        let start = at(&minute["minute"]);
        assert_eq!(start, first + time::Duration::minutes(i as i64), "{answer}");
        assert_eq!((start.second(), start.nanosecond()), (0, 0));
    }
    let last = at(&minutes[minutes.len() - 1]["minute"]);
    assert!(
        last <= now && now - last < time::Duration::minutes(1),
        "{answer}"
    );

    // The forecast agrees with itself: the time is when a buyer that many places back would
    // be offered. A cap of 10 with two sessions has free places for all of them, so the rate
    // decides: 100 offers a second offer the few places within the first second.
    let forecast = &answer["forecast"];
    assert_eq!(forecast["state"], "open", "{answer}");
    assert!(
        forecast["seats_per_buyer"].as_f64().unwrap() > 0.0,
        "{answer}"
    );
    let places = forecast["places_to_sell_out"].as_u64().unwrap();
    // One seat is left: a few places can expect it at most.
    assert!(places <= 4, "{answer}");
    let in_s = forecast["sold_out_in_s"].as_u64().unwrap();
    assert_eq!(in_s, u64::from(places > 0), "{answer}");
    let range = forecast["sold_out_in_range_s"].as_array().unwrap();
    let (low, high) = (range[0].as_u64().unwrap(), range[1].as_u64().unwrap());
    assert!(low <= in_s && in_s <= high, "{answer}");
    // A time still to come is a range, never a bare point.
    assert!(places == 0 || low < high, "{answer}");
    assert_eq!(
        at(&forecast["sold_out_at"]),
        now + time::Duration::seconds(in_s as i64),
        "{answer}"
    );

    // The admission log: the lapsed offer with no ticket or session, the claimed ones with
    // their session and the time they claimed.
    let response = app
        .send(app.admin(
            Method::GET,
            &format!("/api/admin/events/{event}/exports/admissions.csv"),
        ))
        .await
        .expect(200);
    let rows = parse(&response.text);
    assert_eq!(
        rows[0],
        [
            "ticket",
            "place",
            "lane",
            "offered_at",
            "offer_expires_at",
            "claimed_at",
            "lapsed",
            "session",
            "session_expires_at",
            "ended_at",
            "end_reason"
        ]
    );
    assert_eq!(rows.len(), 4, "{rows:?}");
    let lapsed = row_where(&rows, "place", "1");
    assert_eq!(lapsed["lapsed"], "true", "{rows:?}");
    assert_eq!(lapsed["lane"], "general");
    assert_eq!((lapsed["ticket"], lapsed["session"]), ("", ""), "{rows:?}");
    assert_eq!(lapsed["claimed_at"], "", "{rows:?}");
    let offered = at(&json!(lapsed["offered_at"]));
    assert_eq!(
        at(&json!(lapsed["offer_expires_at"])) - offered,
        time::Duration::seconds(1)
    );
    let claimed = row_where(&rows, "session", &buyer.session_id);
    assert_eq!(claimed["ticket"], buyer_queued.ticket_id, "{rows:?}");
    assert_eq!(claimed["place"], "2");
    assert_eq!(claimed["lane"], "general");
    assert_eq!(claimed["lapsed"], "false");
    assert_eq!(claimed["end_reason"], "confirmed");
    let (offered, claimed_at) = (
        at(&json!(claimed["offered_at"])),
        at(&json!(claimed["claimed_at"])),
    );
    assert!(offered <= claimed_at, "{rows:?}");
    let third = row_where(&rows, "session", &other.session_id);
    assert_eq!((third["place"], third["lapsed"]), ("3", "false"));

    // Paused, nothing flows: the forecast gives no time.
    app.tune(&event, json!({"paused": true})).await.expect(200);
    let paused = timeline_until(&app, &event, |t| t["forecast"]["state"] == "paused").await;
    assert_eq!(paused["forecast"]["sold_out_in_s"], Value::Null, "{paused}");
    assert_eq!(
        paused["forecast"]["sold_out_in_range_s"],
        Value::Null,
        "{paused}"
    );
    assert_eq!(paused["forecast"]["sold_out_at"], Value::Null, "{paused}");
    assert_eq!(totals(&paused), expected, "{paused}");
}

#[tokio::test]
async fn the_timeline_and_the_log_tell_what_happened_sqlite() {
    the_timeline_and_the_log_tell_what_happened(Backends::Embedded).await;
}

#[tokio::test]
async fn the_timeline_and_the_log_tell_what_happened_postgres() {
    the_timeline_and_the_log_tell_what_happened(Backends::Postgres).await;
}

#[tokio::test]
async fn bad_timeline_requests_are_refused_and_change_nothing() {
    let app = spawn_app(Backends::Embedded).await;
    let event = app.create_event(2, json!({})).await;
    let viewer = app.add_key("Viewer", "viewer").await;
    let before = World::of(&app).await;
    for (path, status, code) in [
        ("/api/admin/events/ev-none/timeline", 404, "not_found"),
        ("/api/admin/events/bad%20id/timeline", 400, "bad_request"),
    ] {
        app.send(app.admin(Method::GET, path))
            .await
            .expect_problem(status, code);
    }
    let path = format!("/api/admin/events/{event}/timeline");
    app.send(app.request(Method::GET, &path))
        .await
        .expect_problem(401, "unauthorized");
    app.send(app.admin(Method::POST, &path))
        .await
        .expect_problem(405, "method_not_allowed");
    // A viewer may read it.
    app.send(app.with_key(&viewer.key, Method::GET, &path))
        .await
        .expect(200);
    assert_eq!(World::of(&app).await, before);
}
