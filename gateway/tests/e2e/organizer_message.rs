//! The organizer's message and the settings' version, on two gateways sharing PostgreSQL and
//! Redis (and once on the embedded default): a message set through one gateway reaches every
//! waiting socket and the public snapshot of both, and is cleared the same way; a change made
//! against a version someone else moved past is refused with nothing changed; bad input for
//! each new field is refused with problem+json and changes nothing.
#![allow(clippy::unwrap_used)]

use crate::support;

use serde_json::{Value, json};

use support::{Backends, TestApp, spawn_app};

async fn settings(app: &TestApp, event: &str) -> Value {
    app.stats(event).await["admission"].clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_reaches_every_waiting_page_on_both_gateways_and_is_cleared() {
    let app = spawn_app(Backends::Postgres).await;
    let peer = app.spawn_peer().await;
    // Nobody is offered: everyone waits and listens.
    let event = app
        .create_event(5, json!({"rate_per_min": 600, "max_active": 1}))
        .await;
    app.tune(&event, json!({"max_active": 0})).await.expect(200);
    let here = app.join_queue(&event).await;
    let there = peer.join_queue(&event).await;
    let mut near = app.open_socket(&here).await;
    let mut far = peer.open_socket(&there).await;
    near.next_of("position").await;
    far.next_of("position").await;

    // Written with markup on purpose: it is carried as text, never interpreted.
    let text = "Doors open at <b>19:30</b> — thanks for waiting!";
    let version = settings(&app, &event).await["version"].as_i64().unwrap();
    let set = app
        .tune(
            &event,
            json!({"message": {"text": text, "level": "warning"}, "version": version}),
        )
        .await
        .expect(200);
    assert_eq!(set.body["version"], version + 1, "{set:?}");
    assert_eq!(
        set.body["message"],
        json!({"text": text, "level": "warning"})
    );

    for socket in [&mut near, &mut far] {
        let heard = socket.next_of("message").await;
        assert_eq!(
            heard["message"],
            json!({"text": text, "level": "warning"}),
            "{heard}"
        );
    }
    for gateway in [&*app, &peer] {
        let snap = gateway
            .snapshot_until(&event, |s| s["message"]["text"] == text)
            .await;
        assert_eq!(snap["message"]["level"], "warning", "{snap}");
        assert_eq!(snap["mode"], "normal", "{snap}");
    }

    // A change against the version read before: 409, nothing changed.
    let stale = app
        .tune(&event, json!({"message": null, "version": version}))
        .await;
    stale.expect_problem(409, "stale_version");
    assert_eq!(stale.body["version"], version + 1, "{stale:?}");
    let kept = settings(&app, &event).await;
    assert_eq!(kept["version"], version + 1);
    assert_eq!(kept["message"]["text"], text);

    // Cleared (through the other gateway, without a version: the last writer wins).
    peer.tune(&event, json!({"message": null}))
        .await
        .expect(200);
    for socket in [&mut near, &mut far] {
        let heard = socket.next_of("message").await;
        assert_eq!(heard["message"], Value::Null, "{heard}");
    }
    for gateway in [&*app, &peer] {
        gateway
            .snapshot_until(&event, |s| s["message"].is_null())
            .await;
    }
    assert_eq!(settings(&app, &event).await["message"], Value::Null);
}

/// Bad input for each new field: 4xx problem+json, and the settings keep their version.
#[tokio::test]
async fn bad_emergency_settings_change_nothing() {
    let app = spawn_app(Backends::Embedded).await;
    let event = app.create_event(1, json!({})).await;
    let before = settings(&app, &event).await;
    let long = "é".repeat(281);
    let bad = [
        (json!({"mode": "panic"}), 400, "bad_request"),
        (json!({"mode": null}), 400, "bad_request"),
        (json!({"mode": 1}), 400, "bad_request"),
        (
            json!({"on_backend_down": "fail_sideways"}),
            400,
            "bad_request",
        ),
        (json!({"on_backend_down": null}), 400, "bad_request"),
        (json!({"message": "just a string"}), 400, "bad_request"),
        (json!({"message": {"text": "no level"}}), 400, "bad_request"),
        (
            json!({"message": {"text": "hi", "level": "loud"}}),
            400,
            "bad_request",
        ),
        (
            json!({"message": {"text": "hi", "level": "info", "html": true}}),
            400,
            "bad_request",
        ),
        (
            json!({"message": {"text": long, "level": "info"}}),
            400,
            "out_of_range",
        ),
        (
            json!({"message": {"text": " \t ", "level": "info"}}),
            400,
            "out_of_range",
        ),
        (
            json!({"message": {"text": "a\u{0007}b", "level": "info"}}),
            400,
            "bad_request",
        ),
        (json!({"mode": "normal", "version": 0}), 400, "out_of_range"),
        (
            json!({"mode": "normal", "version": "1"}),
            400,
            "bad_request",
        ),
        (
            json!({"mode": "normal", "version": null}),
            400,
            "bad_request",
        ),
        (json!({"version": 1}), 400, "bad_request"),
        (
            json!({"mode": "maintenance", "version": 999}),
            409,
            "stale_version",
        ),
    ];
    for (body, status, code) in bad {
        let answer = app.tune(&event, body.clone()).await;
        assert_eq!(
            (answer.status, answer.body["code"].as_str()),
            (status, Some(code)),
            "{body} → {answer:?}"
        );
        assert!(answer.content_type.starts_with("application/problem+json"));
    }
    assert_eq!(settings(&app, &event).await, before, "nothing changed");

    // At the bounds: 280 characters, the current version.
    let at_limit = "é".repeat(280);
    let version = before["version"].as_i64().unwrap();
    app.tune(
        &event,
        json!({"message": {"text": at_limit, "level": "info"}, "version": version,
               "mode": "pass_through", "on_backend_down": "fail_open"}),
    )
    .await
    .expect(200);
    let after = settings(&app, &event).await;
    assert_eq!(
        (&after["mode"], &after["on_backend_down"], &after["version"]),
        (
            &json!("pass_through"),
            &json!("fail_open"),
            &json!(version + 1)
        )
    );
}
