//! Every answer carries the headers a browser needs (pages, API answers, problem answers,
//! 404s of unknown routes), framing follows `FLOODGATE_FRAME_ANCESTORS`, and a receipt key in
//! a URL is refused.
#![allow(clippy::unwrap_used)]

use crate::support;

use reqwest::Method;
use serde_json::json;

use support::http::Gateway;
use support::{Backends, spawn_app, spawn_app_with};

/// The three headers on one answer; the CSP is returned for further checks.
async fn protected(gateway: &Gateway, method: Method, path: &str) -> (u16, String) {
    let response = gateway.request(method, path).send().await.unwrap();
    let status = response.status().as_u16();
    let headers = response.headers();
    let header = |name: &str| {
        headers
            .get(name)
            .unwrap_or_else(|| panic!("{path} ({status}) has no {name}"))
            .to_str()
            .unwrap()
            .to_owned()
    };
    assert_eq!(header("x-content-type-options"), "nosniff", "{path}");
    assert_eq!(header("referrer-policy"), "no-referrer", "{path}");
    let csp = header("content-security-policy");
    assert!(csp.contains("script-src 'self';"), "{path}: {csp}");
    assert!(!csp.contains("unsafe-inline"), "{path}: {csp}");
    (status, csp)
}

#[tokio::test]
async fn pages_api_answers_errors_and_404s_carry_them() {
    let app = spawn_app(Backends::Embedded).await;
    let event = app
        .create_event(5, json!({ "rate_per_min": 600, "max_active": 5 }))
        .await;
    let event_path = format!("/api/events/{event}");
    let cases: Vec<(Method, String, u16)> = vec![
        (Method::GET, "/".into(), 200),
        (Method::GET, format!("/events/{event}"), 200),
        (Method::GET, "/admin".into(), 200),
        (Method::GET, "/static/waiting-room.js".into(), 200),
        (Method::GET, "/static/style.css".into(), 200),
        (Method::GET, event_path.clone(), 200),
        (Method::POST, format!("{event_path}/queue"), 201),
        (Method::GET, "/readyz".into(), 200),
        (Method::GET, "/api/openapi.json".into(), 200),
        // Problem answers: an unknown event, a missing token, an unknown route, a wrong method.
        (Method::GET, "/api/events/no-such-event".into(), 404),
        (Method::GET, format!("{event_path}/queue/status"), 401),
        (Method::GET, "/no/such/route".into(), 404),
        (Method::GET, "/static/no-such-file.js".into(), 404),
        (Method::DELETE, event_path.clone(), 405),
    ];
    for (method, path, status) in cases {
        let (answered, csp) = protected(&app, method, &path).await;
        assert_eq!(answered, status, "{path}");
        assert!(csp.ends_with("frame-ancestors 'none'"), "{path}: {csp}");
    }
    app.gateway.stop().await;
}

#[tokio::test]
async fn the_pages_load_nothing_inline() {
    // The policy allows scripts and styles from this origin only: a page with an inline
    // script, style or handler would break in the browser.
    let app = spawn_app(Backends::Embedded).await;
    for page in ["/", "/admin"] {
        let html = app.get(page).await.text;
        for inline in [
            "<script>",
            "<style",
            " style=",
            " onclick=",
            " onload=",
            "javascript:",
        ] {
            assert!(!html.contains(inline), "{page} has `{inline}`");
        }
        assert!(
            html.contains(r#"<script type="module" src="/static/"#),
            "{page}"
        );
    }
    app.gateway.stop().await;
}

#[tokio::test]
async fn framing_follows_the_setting() {
    let app = spawn_app_with(Backends::Embedded, |config| {
        config.frame_ancestors = "'self' https://tickets.example.com".into();
    })
    .await;
    let (_, csp) = protected(&app, Method::GET, "/").await;
    assert!(
        csp.ends_with("frame-ancestors 'self' https://tickets.example.com"),
        "{csp}"
    );
    app.gateway.stop().await;
}

#[tokio::test]
async fn a_receipt_key_in_a_url_is_refused() {
    let app = spawn_app(Backends::Embedded).await;
    for path in [
        "/api/orders/ord_x?receipt=secret",
        "/api/holds/h1?receipt_key=secret",
        "/events/demo?hold=h1&receipt=secret",
    ] {
        let answer = app.get(path).await;
        answer.expect_problem(400, "bad_request");
        assert!(!answer.text.contains("secret"), "{path}: {}", answer.text);
        protected(&app, Method::GET, path).await;
    }
    app.gateway.stop().await;
}
