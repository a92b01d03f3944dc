//! What axum itself refuses (an unknown route, a method a route does not take, a query string
//! that does not parse, a plain GET on the socket route, a body over the limit) answers in the
//! same problem+json shape as every other refusal, so a client needs one error parser.

use crate::support;

use reqwest::Method;
use serde_json::json;

use support::{Backends, spawn_app};

#[tokio::test]
async fn axum_rejections_are_problems() {
    let app = spawn_app(Backends::Embedded).await;
    let event = app.create_event(2, json!({})).await;

    app.send(app.request(Method::GET, "/api/no-such-thing"))
        .await
        .expect_problem(404, "not_found");

    // The event summary is a GET; a DELETE on it is a known path with the wrong method.
    app.send(app.request(Method::DELETE, &format!("/api/events/{event}")))
        .await
        .expect_problem(405, "method_not_allowed");

    let stuck = format!("/api/admin/events/{event}/stuck?older_than_s=soon");
    app.send(app.admin(Method::GET, &stuck))
        .await
        .expect_problem(400, "bad_request");

    // A plain GET on the socket route: no upgrade headers.
    app.send(app.request(Method::GET, &format!("/api/events/{event}/queue/ws")))
        .await
        .expect_problem(400, "bad_request");

    let huge = format!(r#"{{"event": "x", "name": "{}"}}"#, "n".repeat(200 * 1024));
    app.send(
        app.admin(Method::POST, "/api/admin/events")
            .header("content-type", "application/json")
            .body(huge),
    )
    .await
    .expect_problem(413, "bad_request");
}
