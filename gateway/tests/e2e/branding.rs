//! The organizer's look of an event's pages: the branding is validated (colours, logo address,
//! texts), stored, and returned by `GET /api/events/{event}`; a refused change changes nothing;
//! the event's page is served with a Content-Security-Policy whose `frame-ancestors` names the
//! origins the organizer allowed (and only on that event's page).
#![allow(clippy::unwrap_used)]

use crate::support;

use reqwest::Method;
use serde_json::{Value, json};

use support::{Backends, TestApp, spawn_app};

async fn set_look(app: &TestApp, event: &str, body: &Value) -> support::http::Answer {
    app.send(
        app.admin(Method::PATCH, &format!("/api/admin/events/{event}"))
            .json(body),
    )
    .await
}

async fn page_policy(app: &TestApp, path: &str) -> String {
    let response = app.request(Method::GET, path).send().await.unwrap();
    assert_eq!(response.status(), 200, "{path}");
    let content_type = response.headers()["content-type"]
        .to_str()
        .unwrap()
        .to_owned();
    assert!(content_type.starts_with("text/html"), "{content_type}");
    response.headers()["content-security-policy"]
        .to_str()
        .unwrap()
        .to_owned()
}

fn brand() -> Value {
    json!({
        "logo_url": "https://cdn.example.com/club/logo.svg?v=3",
        "colors": {"primary": "#7a1f5c", "background": "#fff7ee"},
        "heading": "Welcome to the <b>final</b>",
        "text": "Doors open at 18:00.\nNo bags larger than A4.",
    })
}

#[tokio::test]
async fn branding_and_embedding_are_judged_stored_and_served() {
    let app = spawn_app(Backends::Embedded).await;
    let event = app
        .create_event(4, json!({ "rate_per_min": 600, "max_active": 10 }))
        .await;
    let other = app
        .create_event(4, json!({ "rate_per_min": 600, "max_active": 10 }))
        .await;

    let answer = set_look(
        &app,
        &event,
        &json!({"branding": brand(), "frame_ancestors": ["https://club.example", "http://127.0.0.1:4321"]}),
    )
    .await
    .expect(200);
    assert_eq!(answer.body["branding"], brand());
    // Texts are kept as written: the page shows them as text, so markup is harmless.
    let shown = app.get(&format!("/api/events/{event}")).await.expect(200);
    assert_eq!(shown.body["branding"], brand());
    assert_eq!(
        app.get(&format!("/api/events/{other}")).await.body["branding"],
        Value::Null
    );

    // The event's page: framed by the named origins, its logo's origin an image source.
    let policy = page_policy(&app, &format!("/events/{event}")).await;
    assert!(
        policy.ends_with("frame-ancestors https://club.example http://127.0.0.1:4321"),
        "{policy}"
    );
    assert!(
        policy.contains("img-src 'self' data: https://cdn.example.com;"),
        "{policy}"
    );
    assert!(policy.contains("script-src 'self';"), "{policy}");
    // Every other page and answer keeps the default: nobody frames them.
    for path in [
        "/".to_owned(),
        format!("/events/{other}"),
        "/events/no-such-event".to_owned(),
        "/admin".to_owned(),
    ] {
        let policy = page_policy(&app, &path).await;
        assert!(
            policy.ends_with("frame-ancestors 'none'"),
            "{path}: {policy}"
        );
        assert!(policy.contains("img-src 'self' data:;"), "{path}: {policy}");
    }

    // Refusals: each a 400 problem, nothing changed.
    let long = "x".repeat(121);
    for body in [
        json!({}),
        json!({"branding": {"colors": {"primary": "red", "background": "#ffffff"}}}),
        json!({"branding": {"colors": {"primary": "#ffffff"}}}),
        json!({"branding": {"logo_url": "javascript:alert(1)"}}),
        json!({"branding": {"logo_url": "http://cdn.example.com/logo.png"}}),
        json!({"branding": {"logo_url": "//cdn.example.com/logo.png"}}),
        json!({"branding": {"logo_url": "https://cdn.example.com/x\"onerror=\"alert(1)"}}),
        json!({"branding": {"heading": long}}),
        json!({"branding": {"heading": "   "}}),
        json!({"branding": {"heading": "two\nlines"}}),
        json!({"branding": {"font": "https://fonts.example.com/a.woff2"}}),
        json!({"branding": {"css": "body{background:url(https://x)}"}}),
        json!({"branding": null}),
        json!({"frame_ancestors": ["https://a.example; script-src *"]}),
        json!({"frame_ancestors": ["http://tickets.example.com"]}),
        json!({"frame_ancestors": ["*"]}),
        json!({"frame_ancestors": ["https://club.example/path"]}),
        json!({"frame_ancestors": (0..11).map(|n| format!("https://s{n}.example")).collect::<Vec<_>>()}),
    ] {
        set_look(&app, &event, &body)
            .await
            .expect_problem(400, "bad_request");
    }
    assert_eq!(
        app.get(&format!("/api/events/{event}")).await.body["branding"],
        brand()
    );
    assert!(
        page_policy(&app, &format!("/events/{event}"))
            .await
            .ends_with("frame-ancestors https://club.example http://127.0.0.1:4321")
    );

    // Without the organizer key, or for an unknown event: refused.
    app.send(
        app.request(Method::PATCH, &format!("/api/admin/events/{event}"))
            .json(&json!({"frame_ancestors": []})),
    )
    .await
    .expect_problem(401, "unauthorized");
    set_look(&app, "no-such-event", &json!({"frame_ancestors": []}))
        .await
        .expect_problem(404, "not_found");

    // `{}` removes the branding; `[]` stops all framing.
    let cleared = set_look(
        &app,
        &event,
        &json!({"branding": {}, "frame_ancestors": []}),
    )
    .await
    .expect(200);
    assert_eq!(cleared.body["branding"], Value::Null);
    assert_eq!(cleared.body["frame_ancestors"], json!([]));
    assert_eq!(
        app.get(&format!("/api/events/{event}")).await.body["branding"],
        Value::Null
    );
    let policy = page_policy(&app, &format!("/events/{event}")).await;
    assert!(policy.ends_with("frame-ancestors 'none'"), "{policy}");
}
