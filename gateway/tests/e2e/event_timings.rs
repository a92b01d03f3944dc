//! The organizer renames an event and, before its queue opens, moves its opening and changes
//! its hold and payment timings (`PATCH /api/admin/events/{event}`): every gateway's public
//! event and queue snapshot show the change; once the queue has opened a change of timings is
//! refused `409 event_opened` and nothing changes; bad values are refused 400 and change
//! nothing; a key below `admin` is refused 403, yet reads the event as it was set.
#![allow(clippy::unwrap_used)]

use crate::support;

use std::time::Duration;

use reqwest::Method;
use serde_json::{Value, json};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

use support::http::{Answer, DEADLINE};
use support::team::World;
use support::{Backends, Gateway, TestApp, spawn_app};

async fn edit(app: &Gateway, event: &str, body: &Value) -> Answer {
    app.send(
        app.admin(Method::PATCH, &format!("/api/admin/events/{event}"))
            .json(body),
    )
    .await
}

/// `seconds` from now, whole seconds, as RFC 3339.
fn in_s(seconds: i64) -> String {
    let at = OffsetDateTime::now_utc().unix_timestamp() + seconds;
    OffsetDateTime::from_unix_timestamp(at)
        .unwrap()
        .format(&Rfc3339)
        .unwrap()
}

/// An RFC 3339 time in the body as Unix seconds (the answers may add fractions or offsets).
fn unix(v: &Value) -> i64 {
    OffsetDateTime::parse(v.as_str().unwrap_or_default(), &Rfc3339)
        .unwrap_or_else(|_| panic!("not an RFC 3339 time: {v}"))
        .unix_timestamp()
}

/// Reads the public event on `gateway` until `done` holds for it; returns it.
async fn event_until(gateway: &Gateway, event: &str, done: impl Fn(&Value) -> bool) -> Value {
    let started = tokio::time::Instant::now();
    loop {
        let shown = gateway
            .get(&format!("/api/events/{event}"))
            .await
            .expect(200)
            .body;
        if done(&shown) {
            return shown;
        }
        assert!(
            started.elapsed() < DEADLINE,
            "the event never showed it: {shown}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// An event opening in an hour, with the default timings.
async fn scheduled(app: &TestApp) -> String {
    app.create_event_with(
        3,
        json!({"opens_at": in_s(3600), "admission": {"rate_per_min": 600, "max_active": 10}}),
    )
    .await
}

// Before the opening: moved later, then earlier, on every gateway.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn timings_move_before_the_opening_and_every_gateway_shows_them_on_postgres() {
    moved(spawn_app(Backends::Postgres).await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn timings_move_before_the_opening_and_every_gateway_shows_them_on_sqlite() {
    moved(spawn_app(Backends::Embedded).await).await;
}

async fn moved(app: TestApp) {
    let peer = app.spawn_peer().await;
    let event = scheduled(&app).await;
    for gateway in [&app.gateway, &peer] {
        gateway
            .snapshot_until(&event, |s| s["state"] == "pre_queue")
            .await;
    }

    // Later by an hour, and renamed.
    let later = in_s(7200);
    let answer = edit(
        &app,
        &event,
        &json!({"opens_at": later, "name": "  Final night  "}),
    )
    .await
    .expect(200);
    assert_eq!(unix(&answer.body["opens_at"]), unix(&json!(later)));
    assert_eq!(answer.body["name"], "Final night", "stored trimmed");
    assert_eq!(answer.body["event"], json!(event));
    assert_eq!(answer.body["hold_ttl_s"], 300, "{answer:?}");
    assert_eq!(answer.body["frame_ancestors"], json!([]), "{answer:?}");
    for gateway in [&app.gateway, &peer] {
        event_until(gateway, &event, |e| {
            e["opens_at"].is_string() && unix(&e["opens_at"]) == unix(&json!(later))
        })
        .await;
        let shown = event_until(gateway, &event, |e| e["name"] == "Final night").await;
        assert_eq!(shown["max_seats_per_hold"], 6, "{shown}");
        gateway
            .snapshot_until(&event, |s| {
                s["opens_at"].is_string() && unix(&s["opens_at"]) == unix(&json!(later))
            })
            .await;
    }

    // Earlier, yet still ahead, with every timing at once.
    let earlier = in_s(1800);
    let timings = json!({"opens_at": earlier, "hold_ttl_s": 120, "max_hold_s": 600,
                         "max_seats_per_hold": 2, "resolve_s": 30, "abandon_s": 900});
    let answer = edit(&peer, &event, &timings).await.expect(200);
    for field in [
        "hold_ttl_s",
        "max_hold_s",
        "max_seats_per_hold",
        "resolve_s",
        "abandon_s",
    ] {
        assert_eq!(answer.body[field], timings[field], "{field}: {answer:?}");
    }
    assert_eq!(answer.body["name"], "Final night", "left as it was");
    // Read back on the other gateway, the event is what the change answered.
    let read = app
        .send(app.admin(Method::GET, &format!("/api/admin/events/{event}")))
        .await
        .expect(200);
    assert_eq!(read.body, answer.body, "read back as changed");
    for gateway in [&app.gateway, &peer] {
        event_until(gateway, &event, |e| {
            unix(&e["opens_at"]) == unix(&json!(earlier)) && e["max_seats_per_hold"] == 2
        })
        .await;
        // Before any buyer the snapshot's seats per buyer is the per-buyer limit.
        gateway
            .snapshot_until(&event, |s| {
                unix(&s["opens_at"]) == unix(&json!(earlier)) && s["seats_per_buyer"] == 2.0
            })
            .await;
    }
    let hold_life: (i64, i64, i64, i64, i64) = sqlx::query_as(app.store.dialect().sql(
        "select cast(hold_ttl_s as bigint), cast(max_hold_s as bigint), \
         cast(max_seats_per_hold as bigint), cast(resolve_s as bigint), \
         cast(abandon_s as bigint) from events where event_id = $1",
    ))
    .bind(&event)
    .fetch_one(app.store.pool())
    .await
    .unwrap();
    assert_eq!(hold_life, (120, 600, 2, 30, 900));

    // Each change is in the audit log with what it asked.
    let audit = app.store.audit_log(100).await.unwrap();
    let edits: Vec<_> = audit
        .iter()
        .filter(|a| a.action == "edit_event" && a.event_id.as_deref() == Some(event.as_str()))
        .collect();
    assert_eq!(edits.len(), 2, "{audit:?}");
    assert!(
        edits
            .iter()
            .any(|a| a.detail.contains("\"max_hold_s\":600")),
        "{edits:?}"
    );
    peer.stop().await;
}

// After the opening: the timings stay; the name may still change.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_the_opening_timings_are_refused_and_nothing_changes_on_postgres() {
    opened(spawn_app(Backends::Postgres).await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_the_opening_timings_are_refused_and_nothing_changes_on_sqlite() {
    opened(spawn_app(Backends::Embedded).await).await;
}

async fn opened(app: TestApp) {
    // Opens a few seconds from now: a change is taken until then, refused after.
    let event = app
        .create_event_with(
            2,
            json!({"opens_at": in_s(3), "admission": {"rate_per_min": 600, "max_active": 10}}),
        )
        .await;
    edit(&app, &event, &json!({"hold_ttl_s": 200}))
        .await
        .expect(200);
    app.snapshot_until(&event, |s| s["opened"] == true).await;

    let before = World::of(&app).await;
    for body in [
        json!({"opens_at": in_s(3600)}),
        json!({"hold_ttl_s": 60}),
        json!({"max_hold_s": 1200}),
        json!({"max_seats_per_hold": 1}),
        json!({"resolve_s": 10}),
        json!({"abandon_s": 60}),
        // A rename with a timing: all of it or nothing.
        json!({"name": "Renamed", "abandon_s": 60}),
        json!({"frame_ancestors": ["https://club.example"], "hold_ttl_s": 60}),
    ] {
        edit(&app, &event, &body)
            .await
            .expect_problem(409, "event_opened");
    }
    assert_eq!(World::of(&app).await, before, "nothing changed");
    let shown = app.get(&format!("/api/events/{event}")).await.expect(200);
    assert_eq!(shown.body["name"], "End-to-end night", "{shown:?}");

    // The name only labels the event: it may change at any time.
    let renamed = edit(&app, &event, &json!({"name": "Encore"}))
        .await
        .expect(200);
    assert_eq!(renamed.body["name"], "Encore");
    assert_eq!(renamed.body["hold_ttl_s"], 200, "{renamed:?}");
    event_until(&app, &event, |e| e["name"] == "Encore").await;
}

// Bad values: 400 problem+json, nothing changed.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_timings_are_refused_and_nothing_changes_on_postgres() {
    bad_values(spawn_app(Backends::Postgres).await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_timings_are_refused_and_nothing_changes_on_sqlite() {
    bad_values(spawn_app(Backends::Embedded).await).await;
}

async fn bad_values(app: TestApp) {
    let event = scheduled(&app).await;
    let before = World::of(&app).await;
    // A rule between fields or with the stored event or the clock names its field.
    for (body, field) in [
        (json!({"opens_at": in_s(-60)}), "opens_at"),
        (json!({"opens_at": "tomorrow at eight"}), "opens_at"),
        (json!({"hold_ttl_s": 1000}), "hold_ttl_s"),
        (json!({"max_hold_s": 100}), "max_hold_s"),
        (json!({"hold_ttl_s": 500, "max_hold_s": 400}), "hold_ttl_s"),
        // The default session (1800 s) must outlive max_hold_s + abandon_s.
        (json!({"max_hold_s": 1500}), "max_hold_s"),
        (json!({"abandon_s": 1000}), "abandon_s"),
        (json!({"name": "   "}), "name"),
        (json!({"name": "x".repeat(201)}), "name"),
    ] {
        let answer = edit(&app, &event, &body).await;
        answer.expect_problem(400, "bad_request");
        assert_eq!(answer.body["field"], field, "{body}: {answer:?}");
    }
    // Each number within its bound.
    for (body, field) in [
        (json!({"hold_ttl_s": 0}), "hold_ttl_s"),
        (json!({"max_hold_s": -5}), "max_hold_s"),
        (json!({"max_seats_per_hold": 0}), "max_seats_per_hold"),
        (json!({"max_seats_per_hold": 101}), "max_seats_per_hold"),
        (json!({"resolve_s": 0}), "resolve_s"),
        (json!({"resolve_s": 86_401}), "resolve_s"),
        (json!({"abandon_s": 0}), "abandon_s"),
    ] {
        let answer = edit(&app, &event, &body).await;
        answer.expect_problem(400, "out_of_range");
        assert_eq!(answer.body["field"], field, "{body}: {answer:?}");
    }
    // Unknown fields, wrong types, `null`, nothing at all.
    for body in [
        json!({}),
        json!({"opens_at_ms": 1}),
        json!({"session_s": 4000}),
        json!({"hold_ttl_s": "60"}),
        json!({"hold_ttl_s": 1.5}),
        json!({"opens_at": 1_900_000_000}),
        json!({"name": 5}),
        json!({"name": null}),
        json!({"opens_at": null}),
        json!([]),
    ] {
        edit(&app, &event, &body)
            .await
            .expect_problem(400, "bad_request");
    }
    // A good timing with a bad look: the whole change is refused.
    edit(
        &app,
        &event,
        &json!({"hold_ttl_s": 60, "frame_ancestors": ["*"]}),
    )
    .await
    .expect_problem(400, "bad_request");
    assert_eq!(World::of(&app).await, before, "nothing changed");

    edit(&app, "no-such-event", &json!({"hold_ttl_s": 60}))
        .await
        .expect_problem(404, "not_found");
    app.send(app.admin(Method::GET, "/api/admin/events/no-such-event"))
        .await
        .expect_problem(404, "not_found");
    app.send(app.request(Method::GET, &format!("/api/admin/events/{event}")))
        .await
        .expect_problem(401, "unauthorized");
    app.send(
        app.request(Method::PATCH, &format!("/api/admin/events/{event}"))
            .json(&json!({"hold_ttl_s": 60})),
    )
    .await
    .expect_problem(401, "unauthorized");
    assert_eq!(World::of(&app).await, before, "nothing changed");
}

// Roles: only an admin key edits an event; every key may read it.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn viewer_and_operator_keys_may_not_edit_an_event() {
    let app = spawn_app(Backends::Embedded).await;
    let event = scheduled(&app).await;
    let viewer = app.add_key("night desk", "viewer").await;
    let operator = app.add_key("queue desk", "operator").await;
    let before = World::of(&app).await;
    for key in [&viewer, &operator] {
        for body in [
            json!({"opens_at": in_s(7200)}),
            json!({"name": "Renamed"}),
            json!({"hold_ttl_s": 60}),
        ] {
            app.send(
                app.with_key(
                    &key.key,
                    Method::PATCH,
                    &format!("/api/admin/events/{event}"),
                )
                .json(&body),
            )
            .await
            .expect_problem(403, "role_forbidden");
        }
        let read = app
            .send(app.with_key(&key.key, Method::GET, &format!("/api/admin/events/{event}")))
            .await
            .expect(200);
        assert_eq!(read.body["hold_ttl_s"], 300, "{read:?}");
        assert_eq!(read.body["event"], json!(event), "{read:?}");
    }
    assert_eq!(World::of(&app).await, before, "nothing changed");
}
