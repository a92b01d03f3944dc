//! The soak tool's network side reaches `https://` gateways: requests, and the waiting-room
//! socket as `wss://`, trusting the CA given by `--ca-file`; a gateway whose certificate that
//! CA did not sign is a transport failure, not an answer.
#![allow(clippy::unwrap_used)]

use std::net::Ipv4Addr;

use axum::Router;
use axum::extract::ws::{Message, WebSocketUpgrade};
use axum::routing::get;
use floodgate_tests::soak::client::{Call, Net};
use floodgate_tests::soak::trust::Trust;
use floodgate_tests::tls::{Pki, serve_https};
use futures::StreamExt;
use reqwest::Method;

fn app() -> Router {
    Router::new()
        .route(
            "/api/ping",
            get(|| async { axum::Json(serde_json::json!({"ok": true})) }),
        )
        .route(
            "/ws",
            get(|ws: WebSocketUpgrade| async move {
                ws.on_upgrade(|mut socket| async move {
                    let _ = socket.send(Message::Text("hello".into())).await;
                })
            }),
        )
}

fn ping() -> Call<'static> {
    Call {
        method: Method::GET,
        gateway: 0,
        path: "/api/ping",
        bearer: None,
        idempotency_key: None,
        forwarded_for: Ipv4Addr::new(10, 0, 0, 1),
        json: None,
        receipt: None,
        if_none_match: None,
        raw: false,
        near_front: false,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_soak_client_speaks_https_and_wss_with_its_ca_file() {
    let pki = Pki::new();
    let server = serve_https(app(), &pki).await;
    let gateways = [server.base_url.clone()];

    let trusted = Net::new(
        &gateways,
        Vec::new(),
        4,
        4,
        &Trust::load(Some(&pki.ca_file)).unwrap(),
    )
    .unwrap();
    let answer = trusted.send(ping()).await.unwrap();
    assert_eq!(answer.status.as_u16(), 200);
    assert_eq!(answer.body["ok"], true);
    let mut socket = trusted.websocket(0, "/ws").await.unwrap();
    let first = socket.next().await.unwrap().unwrap();
    assert_eq!(first.into_text().unwrap().as_str(), "hello");
    let _ = socket.close(None).await;

    let stranger = Net::new(
        &gateways,
        Vec::new(),
        4,
        4,
        &Trust::load(Some(&pki.wrong_ca_file)).unwrap(),
    )
    .unwrap();
    assert!(
        stranger.send(ping()).await.is_err(),
        "another CA's client is refused"
    );
    assert!(stranger.websocket(0, "/ws").await.is_err());
}
