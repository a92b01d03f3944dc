//! The organizer's presale night through the real gateway, on PostgreSQL with Redis and on the
//! embedded SQLite with the in-memory queue: access codes (one use, one place, however many
//! tabs race for it), each refusal with its own code and nothing changed, one place per person
//! from any device, the priority lane named by a code or by the identity token, and the
//! organizer routes refusing bad input.
#![allow(clippy::unwrap_used)]

use crate::support;

use jsonwebtoken::{Algorithm, EncodingKey, Header};
use reqwest::Method;
use serde_json::{Value, json};

use support::http::Answer;
use support::{Backends, TestApp, spawn_app};

const SECRET: &str = "the-organizer-site-shares-this-secret-0123456789";

/// A throwaway P-256 key pair: the organizer's site signs with the private half.
const EC_PRIVATE: &str = "-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQg6uKDm7ruNhLJL4xx
akfr4xytKtTVw0uAba4MQNmCE9OhRANCAATmUfvj1vpFJuyLWghjvl8eosLOFZbN
Dj9cfg5gmTPG2op9I7fRUM0GhTd/vKXPCiYL4KUG38OEv+R5W8DiP7yX
-----END PRIVATE KEY-----
";
const EC_PUBLIC: &str = "-----BEGIN PUBLIC KEY-----
MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE5lH749b6RSbsi1oIY75fHqLCzhWW
zQ4/XH4OYJkzxtqKfSO30VDNBoU3f7ylzwomC+ClBt/DhL/keVvA4j+8lw==
-----END PUBLIC KEY-----
";

fn now_s() -> i64 {
    time::OffsetDateTime::now_utc().unix_timestamp()
}

fn rfc3339(offset_s: i64) -> String {
    (time::OffsetDateTime::now_utc() + time::Duration::seconds(offset_s))
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap()
}

/// An identity token as the organizer's site signs it.
fn identity(claims: &Value) -> String {
    let key = EncodingKey::from_secret(SECRET.as_bytes()).unwrap();
    jsonwebtoken::encode(&Header::new(Algorithm::HS256), claims, &key).unwrap()
}

fn person(sub: &str) -> String {
    identity(&json!({"sub": sub, "exp": now_s() + 300}))
}

async fn join_with(app: &TestApp, event: &str, body: &Value) -> Answer {
    app.send(
        app.request(Method::POST, &format!("/api/events/{event}/queue"))
            .json(body),
    )
    .await
}

async fn add_codes(app: &TestApp, event: &str, body: &Value) -> Answer {
    app.send(
        app.admin(Method::POST, &format!("/api/admin/events/{event}/codes"))
            .json(body),
    )
    .await
}

async fn codes(app: &TestApp, event: &str) -> Value {
    app.send(app.admin(
        Method::GET,
        &format!("/api/admin/events/{event}/codes?limit=1000"),
    ))
    .await
    .expect(200)
    .body
}

async fn set_access(app: &TestApp, event: &str, body: &Value) -> Answer {
    app.send(
        app.admin(Method::PATCH, &format!("/api/admin/events/{event}/access"))
            .json(body),
    )
    .await
}

/// Places waiting in line. The events of these tests are paused (a pause keeps the line and
/// makes no offers), and a change of the controls ticks this gateway before it answers, so the
/// count is the backend's as of now.
async fn waiting(app: &TestApp, event: &str) -> i64 {
    app.tune(event, json!({"paused": true})).await.expect(200);
    app.stats(event).await["queue"]["waiting"]
        .as_i64()
        .unwrap_or(-1)
}

/// Fifty tabs race with one one-use code on an invitation-only event: one place, 49 refusals
/// `code_used_up`, and the code is spent once.
async fn fifty_tabs_one_code(backends: Backends) {
    let app = spawn_app(backends).await;
    let event = app.create_event(5, json!({"paused": true})).await;
    set_access(&app, &event, &json!({"access": "invite_only"}))
        .await
        .expect(200);
    add_codes(&app, &event, &json!({"codes": ["RACE-0001"], "uses": 1}))
        .await
        .expect(201);
    let tabs: Vec<_> = (0..50)
        .map(|_| {
            let request = app
                .request(Method::POST, &format!("/api/events/{event}/queue"))
                .json(&json!({"code": "RACE-0001"}));
            tokio::spawn(async move { Answer::from(request.send().await.unwrap()).await })
        })
        .collect();
    let mut placed = 0;
    for tab in tabs {
        let answer = tab.await.unwrap();
        if answer.status == 201 {
            placed += 1;
        } else {
            answer.expect_problem(403, "code_used_up");
        }
    }
    assert_eq!(placed, 1, "one use, one place");
    let listed = codes(&app, &event).await;
    assert_eq!(listed["codes"][0]["uses_left"], 0, "{listed}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fifty_tabs_with_one_code_get_one_place_on_postgres() {
    fifty_tabs_one_code(Backends::Postgres).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fifty_tabs_with_one_code_get_one_place_embedded() {
    fifty_tabs_one_code(Backends::Embedded).await;
}

/// One person from twenty devices at once: the same place on every answer; another person
/// gets another place; a bad, expired, foreign or missing identity is `identity_invalid` and
/// places nobody.
async fn twenty_devices_one_person(backends: Backends) {
    let app = spawn_app(backends).await;
    let event = app.create_event(5, json!({"paused": true})).await;
    set_access(
        &app,
        &event,
        &json!({"identity": {"alg": "HS256", "secret": SECRET, "required": true}}),
    )
    .await
    .expect(200);
    let token = person("fan-7");
    let devices: Vec<_> = (0..20)
        .map(|_| {
            let request = app
                .request(Method::POST, &format!("/api/events/{event}/queue"))
                .json(&json!({ "identity": token }));
            tokio::spawn(async move { Answer::from(request.send().await.unwrap()).await })
        })
        .collect();
    let mut tickets = std::collections::HashSet::new();
    for device in devices {
        tickets.insert(device.await.unwrap().expect(201).str("ticket_id"));
    }
    assert_eq!(tickets.len(), 1, "one place for one person");
    // A fresh token for the same person (a new device, later) finds the same place.
    let again = join_with(&app, &event, &json!({"identity": person("fan-7")}))
        .await
        .expect(201);
    assert!(tickets.contains(&again.str("ticket_id")));
    let other = join_with(&app, &event, &json!({"identity": person("fan-8")}))
        .await
        .expect(201);
    assert!(!tickets.contains(&other.str("ticket_id")));

    let before = waiting(&app, &event).await;
    let forged = {
        let key = EncodingKey::from_secret(b"not-the-organizer-secret-at-all-0123").unwrap();
        jsonwebtoken::encode(
            &Header::new(Algorithm::HS256),
            &json!({"sub": "fan-9", "exp": now_s() + 300}),
            &key,
        )
        .unwrap()
    };
    for body in [
        json!({}),
        json!({"identity": "garbage"}),
        json!({"identity": identity(&json!({"sub": "fan-9", "exp": now_s() - 5}))}),
        json!({"identity": identity(&json!({"exp": now_s() + 300}))}),
        json!({ "identity": forged }),
    ] {
        join_with(&app, &event, &body)
            .await
            .expect_problem(403, "identity_invalid");
    }
    assert_eq!(waiting(&app, &event).await, before, "nobody placed");
    let shown = app
        .send(app.admin(Method::GET, &format!("/api/admin/events/{event}/access")))
        .await
        .expect(200);
    assert!(!shown.text.contains(SECRET), "the secret is never shown");
    assert_eq!(shown.body["identity"]["alg"], "HS256");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn twenty_devices_of_one_person_get_one_place_on_postgres() {
    twenty_devices_one_person(Backends::Postgres).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn twenty_devices_of_one_person_get_one_place_embedded() {
    twenty_devices_one_person(Backends::Embedded).await;
}

/// A presale: before the general opening a code is required; each refusal has its code and
/// spends nothing; a priority code puts the buyer in the priority lane (named in the answer
/// and the signed token); after the general opening anyone joins.
async fn presale_refusals(backends: Backends) {
    let app = spawn_app(backends).await;
    let event = app.create_event(5, json!({"paused": true})).await;
    set_access(
        &app,
        &event,
        &json!({"access": "presale", "general_opens_at": rfc3339(3600)}),
    )
    .await
    .expect(200);
    add_codes(&app, &event, &json!({"codes": ["SPENT-01"], "uses": 1}))
        .await
        .expect(201);
    add_codes(
        &app,
        &event,
        &json!({"codes": ["LATER-01"], "uses": 3, "starts_at": rfc3339(600)}),
    )
    .await
    .expect(201);
    add_codes(
        &app,
        &event,
        &json!({"codes": ["GONE-001"], "starts_at": rfc3339(-600), "ends_at": rfc3339(-60)}),
    )
    .await
    .expect(201);
    let vip = add_codes(
        &app,
        &event,
        &json!({"generate": 2, "uses": 2, "lane": "priority"}),
    )
    .await
    .expect(201);
    let vip_code = vip.body["codes"][0].as_str().unwrap().to_owned();
    join_with(&app, &event, &json!({"code": "SPENT-01"}))
        .await
        .expect(201);
    let before = (codes(&app, &event).await, waiting(&app, &event).await);
    for (body, code) in [
        (json!({}), "code_required"),
        (json!({"code": "NO-SUCH-CODE"}), "code_invalid"),
        (json!({"code": "ab"}), "code_invalid"),
        (json!({"code": "SPENT-01"}), "code_used_up"),
        (json!({"code": "LATER-01"}), "code_outside_window"),
        (json!({"code": "GONE-001"}), "code_outside_window"),
    ] {
        join_with(&app, &event, &body)
            .await
            .expect_problem(403, code);
    }
    // No body at all is a join without a code.
    app.join_queue_raw(&event)
        .await
        .expect_problem(403, "code_required");
    let after = (codes(&app, &event).await, waiting(&app, &event).await);
    assert_eq!(before, after, "refusals change nothing");

    let priority = join_with(&app, &event, &json!({ "code": vip_code }))
        .await
        .expect(201);
    assert_eq!(priority.body["lane"], "priority", "{priority:?}");
    let claims = support::tokens::claims(&priority.str("queue_token"));
    assert_eq!(claims["ln"], "priority");
    let status = app
        .send(
            app.request(Method::GET, &format!("/api/events/{event}/queue/status"))
                .bearer_auth(priority.str("queue_token")),
        )
        .await
        .expect(200);
    assert_eq!(status.body["status"], "paused", "{status:?}");
    assert_eq!(status.body["position"], 0, "first in its lane: {status:?}");

    set_access(&app, &event, &json!({"general_opens_at": rfc3339(-1)}))
        .await
        .expect(200);
    let plain = app.join_queue_raw(&event).await.expect(201);
    assert!(plain.body.get("lane").is_none(), "{plain:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn presale_refusals_each_have_their_code_on_postgres() {
    presale_refusals(Backends::Postgres).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn presale_refusals_each_have_their_code_embedded() {
    presale_refusals(Backends::Embedded).await;
}

/// An ES256 key from the organizer: its signed `lane: priority` claim puts the person in the
/// priority lane; an HS256 token against that public key is refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_es256_identity_names_the_lane() {
    let app = spawn_app(Backends::Embedded).await;
    let event = app.create_event(5, json!({"paused": true})).await;
    set_access(
        &app,
        &event,
        &json!({"identity": {"alg": "ES256", "public_key_pem": EC_PUBLIC}}),
    )
    .await
    .expect(200);
    let key = EncodingKey::from_ec_pem(EC_PRIVATE.as_bytes()).unwrap();
    let token = jsonwebtoken::encode(
        &Header::new(Algorithm::ES256),
        &json!({"sub": "vip-1", "exp": now_s() + 60, "lane": "priority"}),
        &key,
    )
    .unwrap();
    let joined = join_with(&app, &event, &json!({ "identity": token }))
        .await
        .expect(201);
    assert_eq!(joined.body["lane"], "priority");
    // The identity is optional here: a plain join still gets a general place.
    app.join_queue_raw(&event).await.expect(201);
    let key = EncodingKey::from_secret(EC_PUBLIC.as_bytes()).unwrap();
    let confused = jsonwebtoken::encode(
        &Header::new(Algorithm::HS256),
        &json!({"sub": "vip-2", "exp": now_s() + 60}),
        &key,
    )
    .unwrap();
    join_with(&app, &event, &json!({ "identity": confused }))
        .await
        .expect_problem(403, "identity_invalid");
}

/// Bad input to the new routes and to the join body: 4xx problem+json, and nothing changes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_input_to_codes_access_and_join_changes_nothing() {
    let app = spawn_app(Backends::Embedded).await;
    let event = app.create_event(5, json!({"paused": true})).await;
    let long = "A".repeat(65);
    let too_many: Vec<String> = (0..10_001).map(|n| format!("CODE-{n:05}")).collect();
    for body in [
        json!({}),
        json!({"generate": 0}),
        json!({"generate": 100_001}),
        json!({"generate": 2, "codes": ["ABCD-1"]}),
        json!({"codes": []}),
        json!({"codes": ["has space"]}),
        json!({"codes": [long]}),
        json!({ "codes": too_many }),
        json!({"generate": 1, "uses": 0}),
        json!({"generate": 1, "uses": 1_000_001}),
        json!({"generate": 1, "lane": "vip"}),
        json!({"generate": 1, "starts_at": "tomorrow"}),
        json!({"generate": 1, "starts_at": rfc3339(60), "ends_at": rfc3339(30)}),
        json!({"generate": null}),
        json!({"generate": 1, "colour": "red"}),
    ] {
        let answer = add_codes(&app, &event, &body).await;
        assert_eq!(answer.status, 400, "{body}: {answer:?}");
        assert!(answer.content_type.starts_with("application/problem+json"));
    }
    add_codes(&app, "no-such-event", &json!({"generate": 1}))
        .await
        .expect_problem(404, "not_found");
    assert_eq!(
        codes(&app, &event).await["codes"],
        json!([]),
        "no code added"
    );
    for query in [
        "limit=0",
        "limit=1001",
        &format!("after={}", "A".repeat(65)),
    ] {
        let answer = app
            .send(app.admin(
                Method::GET,
                &format!("/api/admin/events/{event}/codes?{query}"),
            ))
            .await;
        assert_eq!(answer.status, 400, "{query}: {answer:?}");
    }

    for body in [
        json!({}),
        json!({"access": "vip"}),
        json!({"access": "presale"}),
        json!({"general_opens_at": "soon"}),
        json!({"identity": {"alg": "none", "secret": SECRET}}),
        json!({"identity": {"alg": "HS256", "secret": "short"}}),
        json!({"identity": {"alg": "HS256", "public_key_pem": EC_PUBLIC}}),
        json!({"identity": {"alg": "ES256", "public_key_pem": "not a key"}}),
        json!({"identity": {"alg": "RS256", "public_key_pem": EC_PUBLIC}}),
        json!({"access": null}),
    ] {
        set_access(&app, &event, &body)
            .await
            .expect_problem(400, "bad_request");
    }
    let shown = app
        .send(app.admin(Method::GET, &format!("/api/admin/events/{event}/access")))
        .await
        .expect(200);
    assert_eq!(
        shown.body,
        json!({"access": "open", "general_opens_at": null, "identity": null})
    );

    let admission = format!("/api/admin/events/{event}/admission");
    for share in [json!(-0.1), json!(1.5)] {
        app.send(
            app.admin(Method::PATCH, &admission)
                .json(&json!({ "priority_share": share })),
        )
        .await
        .expect_problem(400, "out_of_range");
    }
    let tuned = app
        .send(
            app.admin(Method::PATCH, &admission)
                .json(&json!({"priority_share": 0.3})),
        )
        .await
        .expect(200);
    assert_eq!(tuned.body["priority_share"], 0.3);

    let before = waiting(&app, &event).await;
    for body in [
        json!({"code": "A".repeat(65)}),
        json!({"identity": "x".repeat(4097)}),
        json!({"code": 7}),
        json!({"ticket": "mine"}),
        json!({"code": null}),
    ] {
        join_with(&app, &event, &body)
            .await
            .expect_problem(400, "bad_request");
    }
    let not_json = app
        .send(
            app.request(Method::POST, &format!("/api/events/{event}/queue"))
                .header("content-type", "text/plain")
                .body("code=ABCD"),
        )
        .await;
    not_json.expect_problem(400, "bad_request");
    let array = app
        .send(
            app.request(Method::POST, &format!("/api/events/{event}/queue"))
                .header("content-type", "application/json")
                .body("[\"ABCD\"]"),
        )
        .await;
    array.expect_problem(400, "bad_request");
    assert_eq!(waiting(&app, &event).await, before, "nobody placed");
}

/// The code list pages in code order with the uses left.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn codes_are_listed_a_page_at_a_time() {
    let app = spawn_app(Backends::Embedded).await;
    let event = app.create_event(5, json!({"paused": true})).await;
    let added = add_codes(&app, &event, &json!({"generate": 250, "uses": 2}))
        .await
        .expect(201);
    assert_eq!(added.body["added"], 250);
    let mut seen = Vec::new();
    let mut after = String::new();
    loop {
        let page = app
            .send(app.admin(
                Method::GET,
                &format!("/api/admin/events/{event}/codes?limit=100&after={after}"),
            ))
            .await
            .expect(200);
        for c in page.body["codes"].as_array().unwrap() {
            assert_eq!(c["uses_left"], 2);
            seen.push(c["code"].as_str().unwrap().to_owned());
        }
        match page.body["next_after"].as_str() {
            Some(next) => after = next.to_owned(),
            None => break,
        }
    }
    let mut generated: Vec<String> = added.body["codes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_str().unwrap().to_owned())
        .collect();
    generated.sort();
    assert_eq!(seen, generated);
}
