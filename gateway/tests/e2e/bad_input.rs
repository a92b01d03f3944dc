//! Bad input, as a table: every case gets its documented status and `code` as problem+json,
//! and the database shows nothing changed (DESIGN §5, invariant 6).

use crate::support;

use reqwest::{Method, RequestBuilder};
use serde_json::{Value, json};

use support::buyer::{Admitted, Held, Queued, seat};
use support::rows::Rows;
use support::tokens;
use support::{Backends, TestApp, spawn_app};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_input_on_postgres_and_redis() {
    table(spawn_app(Backends::Postgres).await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_input_on_the_embedded_default() {
    table(spawn_app(Backends::Embedded).await).await;
}

/// The people and things the cases are made of.
struct World {
    event: String,
    a_queue: Queued,
    a: Admitted,
    a_hold: Held,
    b: Admitted,
    lapsed: Queued,
    other_event: String,
    other_admitted: Admitted,
    other_waiting: Queued,
}

async fn world(app: &TestApp) -> World {
    // Offers last 2 s so one can be left to lapse; at most 4 seats a hold.
    let event = app
        .create_event_with(
            8,
            json!({"max_seats_per_hold": 4, "admission": {"rate_per_min": 6000, "max_active": 50, "offer_s": 2}}),
        )
        .await;
    let a_queue = app.join_queue(&event).await;
    app.poll_until(&a_queue, "offered").await;
    let a = app.claim(&a_queue).await;
    let a_hold = Held::from(&app.hold(&a, &[seat(1), seat(2)]).await.expect(201));
    let b = app.admit(&event).await;
    let lapsed = app.join_queue(&event).await;
    app.poll_until(&lapsed, "offered").await;
    app.poll_until(&lapsed, "offer_lapsed").await;
    // One session at a time: the admitted buyer keeps the only slot, the next one waits.
    let other_event = app
        .create_event(
            2,
            json!({"rate_per_min": 6000, "max_active": 1, "offer_s": 60}),
        )
        .await;
    let other_admitted = app.admit(&other_event).await;
    let other_waiting = app.join_queue(&other_event).await;
    World {
        event,
        a_queue,
        a,
        a_hold,
        b,
        lapsed,
        other_event,
        other_admitted,
        other_waiting,
    }
}

struct Case {
    name: &'static str,
    request: RequestBuilder,
    /// Allowed statuses (the first is the documented one) and the code.
    statuses: &'static [u16],
    code: &'static str,
}

fn case(
    name: &'static str,
    request: RequestBuilder,
    status: &'static [u16],
    code: &'static str,
) -> Case {
    Case {
        name,
        request,
        statuses: status,
        code,
    }
}

async fn table(app: TestApp) {
    let w = world(&app).await;
    let secret = app.token_secret.clone();
    let e = &w.event;
    let holds = format!("/api/events/{e}/holds");
    let hold_a = &w.a_hold.hold_id;
    let a_token = &w.a.admission_token;
    let q_token = &w.a_queue.queue_token;
    let body = json!({"seats": [seat(3)]});
    let post_hold = |token: Option<&str>| {
        let request = app.request(Method::POST, &holds).json(&body);
        match token {
            Some(t) => request.bearer_auth(t),
            None => request,
        }
    };
    let as_a = |method: Method, path: &str| app.request(method, path).bearer_auth(a_token);
    let as_b =
        |method: Method, path: &str| app.request(method, path).bearer_auth(&w.b.admission_token);
    let raw = |text: String, content_type: &str| {
        as_b(Method::POST, &holds)
            .header("content-type", content_type)
            .body(text)
    };
    let claim = |event: &str, token: &str| {
        app.request(Method::POST, &format!("/api/events/{event}/queue/claim"))
            .bearer_auth(token)
    };
    let long_id = "x".repeat(65);
    let oversized = json!({"seats": [seat(3)], "pad": "p".repeat(70 * 1024)}).to_string();

    let cases = vec![
        // Tokens.
        case("no token", post_hold(None), &[401], "token_missing"),
        case(
            "garbage token",
            post_hold(Some("not-a-jwt")),
            &[401],
            "token_invalid",
        ),
        case(
            "forged signature",
            post_hold(Some(&tokens::forged(a_token))),
            &[401],
            "token_invalid",
        ),
        case(
            "alg none",
            post_hold(Some(&tokens::alg_none(a_token))),
            &[401],
            "token_invalid",
        ),
        case(
            "unknown kid",
            post_hold(Some(&tokens::unknown_kid(a_token, &secret))),
            &[401],
            "token_invalid",
        ),
        case(
            "expired admission token",
            post_hold(Some(&tokens::expired(a_token, &secret))),
            &[401],
            "token_expired",
        ),
        case(
            "admission token of another event",
            post_hold(Some(&w.other_admitted.admission_token)),
            &[403],
            "wrong_event",
        ),
        case(
            "queue token where an admission token is needed",
            post_hold(Some(q_token)),
            &[403],
            "not_admitted",
        ),
        case(
            "queue token on /api/session",
            app.request(Method::GET, "/api/session")
                .bearer_auth(q_token),
            &[403],
            "not_admitted",
        ),
        case(
            "queue token of another event",
            app.request(Method::GET, &format!("/api/events/{e}/queue/status"))
                .bearer_auth(&w.other_waiting.queue_token),
            &[403],
            "wrong_event",
        ),
        case(
            "expired queue token",
            claim(e, &tokens::expired(q_token, &secret)),
            &[401],
            "token_expired",
        ),
        case(
            "alg none queue token",
            claim(e, &tokens::alg_none(q_token)),
            &[401],
            "token_invalid",
        ),
        case(
            "admission token as a queue token",
            claim(e, a_token),
            &[401],
            "token_invalid",
        ),
        // Claims out of turn.
        case(
            "claim before the turn",
            claim(&w.other_event, &w.other_waiting.queue_token),
            &[409],
            "not_your_turn",
        ),
        case(
            "claim after the offer lapsed",
            claim(e, &w.lapsed.queue_token),
            &[409],
            "offer_lapsed",
        ),
        // Bodies.
        case(
            "malformed JSON",
            raw("{\"seats\": [".into(), "application/json"),
            &[400],
            "bad_request",
        ),
        case(
            "wrong content type",
            raw(json!({"seats": [seat(3)]}).to_string(), "text/plain"),
            &[400],
            "bad_request",
        ),
        case(
            "wrong types",
            raw(json!({"seats": 3}).to_string(), "application/json"),
            &[400],
            "bad_request",
        ),
        case(
            "oversized body",
            raw(oversized, "application/json"),
            &[413, 400],
            "bad_request",
        ),
        case(
            "neither seats nor section",
            raw("{}".into(), "application/json"),
            &[400],
            "bad_request",
        ),
        // Path ids.
        case(
            "bad event id",
            app.request(Method::GET, "/api/events/bad!id"),
            &[400],
            "bad_request",
        ),
        case(
            "event id over 64",
            app.request(Method::GET, &format!("/api/events/{long_id}/seats")),
            &[400],
            "bad_request",
        ),
        case(
            "bad hold id",
            as_a(Method::POST, "/api/holds/h%20x/extend"),
            &[400],
            "bad_request",
        ),
        case(
            "bad order id",
            as_a(Method::GET, &format!("/api/orders/{long_id}")),
            &[400],
            "bad_request",
        ),
        case(
            "unknown event",
            app.request(Method::GET, "/api/events/no-such-event"),
            &[404],
            "not_found",
        ),
        case(
            "unknown hold",
            as_a(Method::GET, "/api/holds/h_0000"),
            &[404],
            "not_found",
        ),
        // Seats.
        case(
            "unknown seats",
            as_b(Method::POST, &holds).json(&json!({"seats": ["Z-Z-99"]})),
            &[404],
            "not_found",
        ),
        case(
            "too many seats",
            as_b(Method::POST, &holds)
                .json(&json!({"seats": (3..=7).map(seat).collect::<Vec<_>>()})),
            &[400],
            "too_many_seats",
        ),
        case(
            "no seats",
            as_b(Method::POST, &holds).json(&json!({"seats": []})),
            &[400],
            "too_many_seats",
        ),
        case(
            "a seat twice",
            as_b(Method::POST, &holds).json(&json!({"seats": [seat(3), seat(3)]})),
            &[400],
            "bad_request",
        ),
        case(
            "seat already held",
            as_b(Method::POST, &holds).json(&json!({"seats": [seat(2), seat(3)]})),
            &[409],
            "seat_unavailable",
        ),
        // Another session's hold.
        case(
            "extend another's hold",
            as_b(Method::POST, &format!("/api/holds/{hold_a}/extend")),
            &[404],
            "not_found",
        ),
        case(
            "release another's hold",
            as_b(Method::DELETE, &format!("/api/holds/{hold_a}")),
            &[404],
            "not_found",
        ),
        case(
            "read another's hold",
            as_b(Method::GET, &format!("/api/holds/{hold_a}")),
            &[404],
            "not_found",
        ),
        case(
            "check out another's hold",
            as_b(Method::POST, &format!("/api/holds/{hold_a}/checkout"))
                .header("idempotency-key", "b-steals")
                .json(&json!({"payment_method": "pm_card_visa"})),
            &[404],
            "not_found",
        ),
        case(
            "receipt key of another hold",
            app.request(Method::GET, "/api/holds/h_0000")
                .header("floodgate-receipt", &w.a_hold.receipt_key),
            &[404],
            "not_found",
        ),
        // Checkout.
        case(
            "checkout without Idempotency-Key",
            as_a(Method::POST, &format!("/api/holds/{hold_a}/checkout"))
                .json(&json!({"payment_method": "pm_card_visa"})),
            &[400],
            "bad_request",
        ),
    ];

    let before = Rows::of(&app.store).await;
    for case in cases {
        let answer = app.send(case.request).await;
        assert!(
            case.statuses.contains(&answer.status),
            "{}: expected {:?} {}, got {answer:?}",
            case.name,
            case.statuses,
            case.code
        );
        answer.expect_problem(answer.status, case.code);
        let after = Rows::of(&app.store).await;
        assert_eq!(
            without_idempotency(&before),
            without_idempotency(&after),
            "{}: the rows changed",
            case.name
        );
    }

    idempotency_conflict(&app, &w).await;
    bad_socket_token(&app, &w).await;
}

/// A refusal under an `Idempotency-Key` is stored on purpose (a retry hears the same refusal);
/// everything else must stay as it was.
fn without_idempotency(rows: &Rows) -> Value {
    let mut map = rows.0.clone();
    map.remove("idempotency_keys");
    json!(map)
}

/// The same key with another body: 422, and not even a key row is added.
async fn idempotency_conflict(app: &TestApp, w: &World) {
    let d = app.admit(&w.event).await;
    let path = format!("/api/events/{}/holds", w.event);
    let keyed = |seats: Value| {
        app.request(Method::POST, &path)
            .bearer_auth(&d.admission_token)
            .header("idempotency-key", "same-key")
            .json(&json!({ "seats": seats }))
    };
    app.send(keyed(json!([seat(5)]))).await.expect(201);
    let before = Rows::of(&app.store).await;
    let answer = app.send(keyed(json!([seat(6)]))).await;
    answer.expect_problem(422, "idempotency_conflict");
    assert_eq!(
        before,
        Rows::of(&app.store).await,
        "one key, two bodies: the rows changed"
    );
}

/// A socket opened with a forged token hears `error` with the code, then is closed.
async fn bad_socket_token(app: &TestApp, w: &World) {
    let forged = tokens::forged(&w.a_queue.queue_token);
    let mut socket = app.open_socket_with_token(&w.event, &forged).await;
    let first = socket
        .next()
        .await
        .expect("an error message before the close");
    assert_eq!(first, json!({"type": "error", "code": "token_invalid"}));
    assert!(
        socket.next().await.is_none(),
        "then the socket closes: {:?}",
        socket.heard
    );
}
