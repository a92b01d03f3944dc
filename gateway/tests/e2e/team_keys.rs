//! Team keys end to end: each organizer route refuses a key below its role with 403
//! `role_forbidden` and changes nothing; a revoked key is refused by another instance within a
//! second; the bound on keys holds under concurrent adds; bad input is refused; every change
//! is audited with the key that made it; a listing never shows a key or its hash.

#![allow(clippy::unwrap_used)]

use crate::support;

use std::time::Duration;

use reqwest::Method;
use serde_json::{Value, json};
use tokio::time::Instant;

use support::team::World;
use support::{Backends, TestApp, spawn_app};

const ROLES: [&str; 3] = ["viewer", "operator", "admin"];

fn rank(role: &str) -> usize {
    ROLES.iter().position(|r| *r == role).expect("a role")
}

/// Every organizer route, the least role it needs, a body and the success status, in an
/// order that works.
fn calls(event: &str) -> Vec<(Method, String, Option<Value>, &'static str, u16)> {
    let e = |tail: &str| format!("/api/admin/events/{event}{tail}");
    let mut calls = vec![
        (
            Method::POST,
            "/api/admin/events".to_owned(),
            Some(json!({"event": event, "name": "Team night"})),
            "admin",
            201,
        ),
        (
            Method::POST,
            e("/seats"),
            Some(
                json!({"generate": {"section": "A", "rows": 1, "per_row": 3, "price_cents": 100}}),
            ),
            "admin",
            200,
        ),
        (
            Method::PATCH,
            e("/admission"),
            Some(json!({"rate_per_min": 60})),
            "operator",
            200,
        ),
        (Method::GET, e("/stats"), None, "viewer", 200),
        (Method::GET, e("/stuck?older_than_s=0"), None, "viewer", 200),
        (
            Method::GET,
            "/api/admin/events".to_owned(),
            None,
            "viewer",
            200,
        ),
    ];
    for file in ["orders", "sales", "holds", "admissions", "audit"] {
        calls.push((
            Method::GET,
            e(&format!("/exports/{file}.csv")),
            None,
            "viewer",
            200,
        ));
    }
    calls.extend([
        (
            Method::POST,
            "/api/admin/keys".to_owned(),
            Some(json!({"name": "Late hire", "role": "viewer"})),
            "admin",
            201,
        ),
        (
            Method::GET,
            "/api/admin/keys".to_owned(),
            None,
            "admin",
            200,
        ),
        (Method::POST, e("/close"), None, "operator", 200),
    ]);
    calls
}

async fn role_matrix(backends: Backends) {
    let app = spawn_app(backends).await;
    let mut keys = Vec::new();
    for role in ROLES {
        keys.push(app.add_key(&format!("The {role}"), role).await);
    }
    let event = format!("ev-roles-{}", uuid::Uuid::now_v7().simple());
    for (method, path, body, least, ok) in calls(&event) {
        for key in &keys {
            let mut request = app.with_key(&key.key, method.clone(), &path);
            if let Some(body) = &body {
                request = request.json(body);
            }
            if rank(&key.role) < rank(least) {
                let before = World::of(&app).await;
                let answer = app.send(request).await;
                answer.expect_problem(403, "role_forbidden");
                assert_eq!(answer.body["required_role"], least, "{answer:?}");
                assert_eq!(
                    World::of(&app).await,
                    before,
                    "{method} {path} by a {}",
                    key.role
                );
            } else if rank(&key.role) == rank(least) || method == Method::GET {
                // A change is made once, by the least role that may; every role above reads.
                let answer = app.send(request).await;
                assert_eq!(
                    answer.status, ok,
                    "{method} {path} by a {}: {answer:?}",
                    key.role
                );
            }
        }
    }
    // Revoking is an admin's too: an operator cannot, the admin can (its own key included).
    let viewer = &keys[0];
    let revoke = format!("/api/admin/keys/{}", viewer.id);
    let before = World::of(&app).await;
    app.send(app.with_key(&keys[1].key, Method::DELETE, &revoke))
        .await
        .expect_problem(403, "role_forbidden");
    assert_eq!(World::of(&app).await, before);
    app.send(app.with_key(&keys[2].key, Method::DELETE, &revoke))
        .await
        .expect(204);
    app.send(app.with_key(&viewer.key, Method::GET, "/api/admin/events"))
        .await
        .expect_problem(401, "unauthorized");
}

#[tokio::test]
async fn each_route_refuses_a_key_below_its_role_and_changes_nothing_sqlite() {
    role_matrix(Backends::Embedded).await;
}

#[tokio::test]
async fn each_route_refuses_a_key_below_its_role_and_changes_nothing_postgres() {
    role_matrix(Backends::Postgres).await;
}

#[tokio::test]
async fn a_team_admin_does_everything_and_the_audit_names_each_key() {
    let app = spawn_app(Backends::Embedded).await;
    let admin = app.add_key("Ops lead", "admin").await;
    let operator = app.add_key("Door", "operator").await;
    let event = format!("ev-team-{}", uuid::Uuid::now_v7().simple());
    for (method, path, body, _, ok) in calls(&event) {
        let mut request = app.with_key(&admin.key, method.clone(), &path);
        if let Some(body) = &body {
            request = request.json(body);
        }
        let answer = app.send(request).await;
        assert_eq!(answer.status, ok, "{method} {path}: {answer:?}");
    }
    // The close above was the admin's; the operator pauses (a change of admission).
    app.send(
        app.with_key(
            &operator.key,
            Method::PATCH,
            &format!("/api/admin/events/{event}/admission"),
        )
        .json(&json!({"paused": true})),
    )
    .await
    .expect(200);

    let mut log = app.store.audit_log(100).await.unwrap();
    log.reverse();
    let by: Vec<(&str, Option<&str>, &str)> = log
        .iter()
        .map(|e| (e.actor.as_str(), e.key_id.as_deref(), e.action.as_str()))
        .collect();
    let configured = ("organizer", Some("configured"));
    let ops = ("Ops lead", Some(admin.id.as_str()));
    let door = ("Door", Some(operator.id.as_str()));
    assert_eq!(
        by,
        [
            (configured.0, configured.1, "create_key"),
            (configured.0, configured.1, "create_key"),
            (ops.0, ops.1, "create_event"),
            (ops.0, ops.1, "add_seats"),
            (ops.0, ops.1, "tune_admission"),
            (ops.0, ops.1, "create_key"),
            (ops.0, ops.1, "close"),
            (door.0, door.1, "tune_admission"),
        ],
        "{log:?}"
    );
    // Key changes belong to no event; the rest to this one.
    for entry in &log {
        let keyed = entry.action.ends_with("_key");
        assert_eq!(entry.event_id.is_none(), keyed, "{entry:?}");
    }
}

#[tokio::test]
async fn keys_are_shown_once_and_listed_without_secrets() {
    let app = spawn_app(Backends::Embedded).await;
    let made = app
        .add_key_raw(&json!({"name": "  Box office  ", "role": "viewer"}))
        .await
        .expect(201);
    let key = made.str("key");
    assert_eq!(made.body["name"], "Box office", "stored trimmed: {made:?}");
    assert_eq!(made.body["last4"], key[key.len() - 4..]);
    let hash = hex::encode(<sha2::Sha256 as sha2::Digest>::digest(key.as_bytes()));

    let listed = app
        .send(app.admin(Method::GET, "/api/admin/keys"))
        .await
        .expect(200);
    assert!(!listed.text.contains(&key), "{listed:?}");
    assert!(!listed.text.contains(&hash), "{listed:?}");
    let keys = listed.body["keys"].as_array().unwrap();
    assert_eq!(
        keys.len(),
        2,
        "the configured key and the new one: {listed:?}"
    );
    assert_eq!(keys[0]["id"], "configured");
    assert_eq!(keys[0]["role"], "admin");
    assert_eq!(keys[0]["configured"], true);
    assert_eq!(keys[1]["id"], made.body["id"]);
    assert_eq!(keys[1]["name"], "Box office");
    assert_eq!(keys[1]["role"], "viewer");
    assert_eq!(keys[1]["last4"], key[key.len() - 4..]);
    assert!(keys[1]["created_at"].is_string());
    assert!(keys[1].get("key").is_none());
}

#[tokio::test]
async fn bad_key_requests_are_refused_and_change_nothing() {
    let app = spawn_app(Backends::Embedded).await;
    let kept = app.add_key("Kept", "viewer").await;
    let before = World::of(&app).await;
    for body in [
        json!({"name": "x"}),
        json!({"role": "viewer"}),
        json!({"name": "x", "role": "root"}),
        json!({"name": "x", "role": "Admin"}),
        json!({"name": "", "role": "viewer"}),
        json!({"name": "   ", "role": "viewer"}),
        json!({"name": "n".repeat(65), "role": "viewer"}),
        json!({"name": "tab\there", "role": "viewer"}),
        json!({"name": null, "role": "viewer"}),
        json!({"name": 7, "role": "viewer"}),
        json!({"name": "x", "role": "viewer", "key": "mine"}),
        json!(["x", "viewer"]),
    ] {
        app.add_key_raw(&body)
            .await
            .expect_problem(400, "bad_request");
    }
    app.send(
        app.admin(Method::POST, "/api/admin/keys")
            .header("content-type", "text/plain")
            .body("name=x&role=viewer"),
    )
    .await
    .expect_problem(400, "bad_request");
    for (id, status, code) in [
        ("key_nope", 404, "not_found"),
        ("configured", 409, "key_configured"),
        ("bad%20id", 400, "bad_request"),
    ] {
        app.send(app.admin(Method::DELETE, &format!("/api/admin/keys/{id}")))
            .await
            .expect_problem(status, code);
    }
    let long = "k".repeat(65);
    app.send(app.admin(Method::DELETE, &format!("/api/admin/keys/{long}")))
        .await
        .expect_problem(400, "bad_request");
    for query in ["limit=0", "limit=201", "limit=x", "after=a%20b", "nope=1"] {
        let answer = app
            .send(app.admin(Method::GET, &format!("/api/admin/events?{query}")))
            .await;
        assert_eq!(answer.status, 400, "{query}: {answer:?}");
        assert!(answer.content_type.starts_with("application/problem+json"));
    }
    // A wrong key is unauthorized, not forbidden.
    app.send(app.with_key("fgk_guess", Method::GET, "/api/admin/keys"))
        .await
        .expect_problem(401, "unauthorized");
    assert_eq!(World::of(&app).await, before);
    assert_eq!(app.store.organizer_keys().await.unwrap()[0].name, kept.name);
}

/// At 95 keys, twelve admins add one each at once: exactly five get one, the rest 409
/// `key_limit`, and the database holds 100.
async fn the_bound_holds_under_concurrent_adds(backends: Backends) {
    let app = spawn_app(backends).await;
    for i in 0..95 {
        app.add_key(&format!("k{i}"), "viewer").await;
    }
    let answers = futures::future::join_all((0..12).map(|i| {
        let app = &app;
        async move {
            app.add_key_raw(&json!({"name": format!("rush {i}"), "role": "viewer"}))
                .await
        }
    }))
    .await;
    let made = answers.iter().filter(|a| a.status == 201).count();
    for refused in answers.iter().filter(|a| a.status != 201) {
        refused.expect_problem(409, "key_limit");
    }
    assert_eq!(made, 5, "{answers:?}");
    assert_eq!(app.store.organizer_keys().await.unwrap().len(), 100);
    // A revoked key frees its slot.
    let first = app.store.organizer_keys().await.unwrap()[0].key_id.clone();
    app.send(app.admin(Method::DELETE, &format!("/api/admin/keys/{first}")))
        .await
        .expect(204);
    app.add_key("after a revoke", "viewer").await;
    app.add_key_raw(&json!({"name": "one too many", "role": "viewer"}))
        .await
        .expect_problem(409, "key_limit");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_bound_on_keys_holds_under_concurrent_adds_postgres() {
    the_bound_holds_under_concurrent_adds(Backends::Postgres).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_bound_on_keys_holds_under_concurrent_adds_sqlite() {
    the_bound_holds_under_concurrent_adds(Backends::Embedded).await;
}

/// Two instances on one database: a key revoked through one is refused by the other within a
/// second (API.md), however recently the other used it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_revoked_key_is_refused_by_another_instance_within_a_second() {
    let app: TestApp = spawn_app(Backends::Postgres).await;
    let peer = app.spawn_peer().await;
    let door = app.add_key("Door", "operator").await;
    let stats = "/api/admin/events";
    // The peer reads the key book now, so a stale read is what it would keep.
    peer.send(peer.with_key(&door.key, Method::GET, stats))
        .await
        .expect(200);
    app.send(app.admin(Method::DELETE, &format!("/api/admin/keys/{}", door.id)))
        .await
        .expect(204);
    let revoked = Instant::now();
    // The instance that revoked it refuses it at once.
    app.send(app.with_key(&door.key, Method::GET, stats))
        .await
        .expect_problem(401, "unauthorized");
    let refused_after = loop {
        let answer = peer
            .send(peer.with_key(&door.key, Method::GET, stats))
            .await;
        if answer.status == 401 {
            answer.expect_problem(401, "unauthorized");
            break revoked.elapsed();
        }
        assert_eq!(answer.status, 200, "{answer:?}");
        assert!(revoked.elapsed() < Duration::from_secs(5), "still accepted");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    println!("revoked through one instance: refused by the other after {refused_after:?}");
    assert!(refused_after < Duration::from_secs(1), "{refused_after:?}");
    // And stays refused.
    peer.send(peer.with_key(&door.key, Method::GET, stats))
        .await
        .expect_problem(401, "unauthorized");
}
