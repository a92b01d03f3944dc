//! The stadium map over HTTP: the sections overview, one section's seats, and the changes
//! since a version, which name exactly the seats a hold, a release or a general-admission hold
//! changed; bad queries are refused and change nothing. Run on both databases (PostgreSQL takes
//! seats in its one-round-trip function, SQLite statement by statement).
#![allow(clippy::unwrap_used)]

use crate::support;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use reqwest::Method;
use serde_json::{Value, json};

use support::{Backends, TestApp, spawn_app};

#[tokio::test]
async fn stadium_map_on_postgres() {
    stadium_map(spawn_app(Backends::Postgres).await).await;
}

#[tokio::test]
async fn stadium_map_on_sqlite() {
    stadium_map(spawn_app(Backends::Embedded).await).await;
}

/// A venue of three sections: A (4 seats in a row), B (3 rows of 4), GA (3 seats, no rows).
async fn venue(app: &TestApp) -> String {
    let event = app
        .create_event(4, json!({ "rate_per_min": 6000, "max_active": 100 }))
        .await;
    let add = |body: Value| {
        app.send(
            app.admin(Method::POST, &format!("/api/admin/events/{event}/seats"))
                .json(&body),
        )
    };
    add(json!({"generate": {"section": "B", "rows": 3, "per_row": 4, "price_cents": 4000}}))
        .await
        .expect(200);
    let standing: Vec<Value> = (1..=3)
        .map(|n| json!({"seat_id": format!("GA-{n}"), "section": "GA", "price_cents": 1500}))
        .collect();
    add(json!({ "seats": standing })).await.expect(200);
    event
}

fn sections(answer: &Value) -> Vec<(String, u64, u64, bool)> {
    answer["sections"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["section"].as_str().unwrap().to_owned(),
                s["seats"].as_u64().unwrap(),
                s["seats_left"].as_u64().unwrap(),
                s["general_admission"].as_bool().unwrap(),
            )
        })
        .collect()
}

/// A page's copy of the seat states, kept up to date by `?since=` alone. A version says only
/// that every change at or below it is in the map read with it; versions may advance with no
/// change of this event, and a change may be sent twice (the page applies it again).
struct Page {
    version: i64,
    seats: BTreeMap<String, String>,
}

impl Page {
    async fn open(app: &TestApp, event: &str) -> Page {
        let whole = app
            .get(&format!("/api/events/{event}/seats"))
            .await
            .expect(200);
        let seats = whole.body["seats"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| {
                (
                    s["seat_id"].as_str().unwrap().to_owned(),
                    s["state"].as_str().unwrap().to_owned(),
                )
            })
            .collect();
        Page {
            version: whole.body["version"].as_i64().unwrap(),
            seats,
        }
    }

    /// Follows `?since=` until `turns` seats have changed state in the copy (the cached map is
    /// refreshed every second); answers them, sorted. More turning is a failure.
    async fn follow(&mut self, app: &TestApp, event: &str, turns: usize) -> Vec<(String, String)> {
        let deadline = Instant::now() + Duration::from_secs(10);
        let mut turned = BTreeMap::new();
        loop {
            let answer = app
                .get(&format!("/api/events/{event}/seats?since={}", self.version))
                .await
                .expect(200);
            let version = answer.body["version"].as_i64().unwrap();
            assert!(version >= self.version, "versions never go back");
            self.version = version;
            for c in answer.body["changes"].as_array().unwrap() {
                let id = c["seat_id"].as_str().unwrap().to_owned();
                let state = c["state"].as_str().unwrap().to_owned();
                let was = self.seats.insert(id.clone(), state.clone());
                assert!(was.is_some(), "a change names a seat of the map: {id}");
                if was.as_ref() != Some(&state) {
                    turned.insert(id, state);
                }
            }
            assert!(
                turned.len() <= turns,
                "more seats turned than expected: {turned:?}"
            );
            if turned.len() == turns {
                return turned.into_iter().collect();
            }
            assert!(
                Instant::now() < deadline,
                "only {turned:?} turned after version {}",
                self.version
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

async fn stadium_map(app: TestApp) {
    let event = venue(&app).await;
    let summary = app.get(&format!("/api/events/{event}")).await.expect(200);
    assert_eq!(
        sections(&summary.body),
        vec![
            ("A".to_owned(), 4, 4, false),
            ("B".to_owned(), 12, 12, false),
            ("GA".to_owned(), 3, 3, true),
        ]
    );
    assert_eq!(summary.body["branding"], Value::Null);

    // One section: only its seats, with the version they were read at.
    let b = app
        .get(&format!("/api/events/{event}/seats?section=B"))
        .await
        .expect(200);
    let seats = b.body["seats"].as_array().unwrap();
    assert_eq!(seats.len(), 12);
    assert!(
        seats
            .iter()
            .all(|s| s["section"] == "B" && s["state"] == "available")
    );
    let start = b.body["version"].as_i64().unwrap();
    let quiet = app
        .get(&format!("/api/events/{event}/seats?since={start}"))
        .await
        .expect(200);
    assert!(quiet.body["version"].as_i64().unwrap() >= start);
    assert_eq!(quiet.body["changes"], json!([]));
    let mut page = Page::open(&app, &event).await;

    // A hold: exactly its two seats turn taken.
    let buyer = app.admit(&event).await;
    let held = app
        .hold(&buyer, &["B-A-1".to_owned(), "B-C-4".to_owned()])
        .await
        .expect(201);
    assert_eq!(
        page.follow(&app, &event, 2).await,
        vec![
            ("B-A-1".to_owned(), "taken".to_owned()),
            ("B-C-4".to_owned(), "taken".to_owned())
        ]
    );

    // Its release: exactly those two turn available again.
    app.release(&buyer, &held.str("hold_id")).await.expect(204);
    assert_eq!(
        page.follow(&app, &event, 2).await,
        vec![
            ("B-A-1".to_owned(), "available".to_owned()),
            ("B-C-4".to_owned(), "available".to_owned())
        ]
    );

    // General admission: two of the three standing places, whichever they are.
    let standing = app.admit(&event).await;
    app.hold_raw(
        &event,
        &standing.admission_token,
        &json!({"section": "GA", "quantity": 2}),
    )
    .await
    .expect(201);
    let changes = page.follow(&app, &event, 2).await;
    let latest = page.version;
    assert!(
        changes
            .iter()
            .all(|(id, state)| id.starts_with("GA-") && state == "taken")
    );
    let summary = app.get(&format!("/api/events/{event}")).await.expect(200);
    assert_eq!(sections(&summary.body)[2], ("GA".to_owned(), 3, 1, true));

    // A version from a fresher gateway: nothing newer here, answered as it came.
    let ahead = latest + 1_000_000_000_000;
    let answer = app
        .get(&format!("/api/events/{event}/seats?since={ahead}"))
        .await
        .expect(200);
    assert_eq!(answer.body, json!({"version": ahead, "changes": []}));

    // Bad queries: refused with problem+json.
    for query in [
        "since=-1",
        "since=abc",
        "since=1.5",
        "since=99999999999999999999",
        "section=B&since=0",
        "section=",
    ] {
        app.get(&format!("/api/events/{event}/seats?{query}"))
            .await
            .expect_problem(400, "bad_request");
    }
    let long = "S".repeat(65);
    app.get(&format!("/api/events/{event}/seats?section={long}"))
        .await
        .expect_problem(400, "bad_request");
    app.get(&format!("/api/events/{event}/seats?section=Nope"))
        .await
        .expect_problem(404, "not_found");
    app.get("/api/events/no-such-event/seats?since=0")
        .await
        .expect_problem(404, "not_found");
    app.get("/api/events/no-such-event/seats?section=A")
        .await
        .expect_problem(404, "not_found");
    // The whole map still answers, with its version.
    let whole = app
        .get(&format!("/api/events/{event}/seats"))
        .await
        .expect(200);
    assert_eq!(whole.body["seats"].as_array().unwrap().len(), 19);
    assert!(whole.body["version"].as_i64().unwrap() >= latest);
}
