//! One running gateway instance and what it answered.

use std::time::Duration;

use reqwest::{Method, RequestBuilder};
use serde_json::Value;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

/// How long a helper waits for something the gateway does by itself (an offer, a payment).
pub const DEADLINE: Duration = Duration::from_secs(10);

/// What the gateway answered: status, the headers tests look at, the body as JSON
/// (`Value::Null` when empty or not JSON; `text` keeps the raw body).
#[derive(Debug, Clone)]
pub struct Answer {
    pub status: u16,
    pub content_type: String,
    pub retry_after: Option<String>,
    pub body: Value,
    pub text: String,
}

impl Answer {
    pub async fn from(response: reqwest::Response) -> Self {
        let status = response.status().as_u16();
        let header = |name: &str| {
            response
                .headers()
                .get(name)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned)
        };
        let content_type = header("content-type").unwrap_or_default();
        let retry_after = header("retry-after");
        let text = response.text().await.unwrap_or_default();
        let body = serde_json::from_str(&text).unwrap_or(Value::Null);
        Self {
            status,
            content_type,
            retry_after,
            body,
            text,
        }
    }

    /// A string member of the body; panics with the whole answer when it is missing.
    pub fn str(&self, key: &str) -> String {
        self.body[key]
            .as_str()
            .unwrap_or_else(|| panic!("no string `{key}` in {self:?}"))
            .to_owned()
    }

    /// Panics unless the status is `status`.
    pub fn expect(self, status: u16) -> Self {
        assert_eq!(self.status, status, "unexpected answer: {self:?}");
        self
    }

    /// Panics unless this is a problem+json answer with `status` and `code`.
    pub fn expect_problem(&self, status: u16, code: &str) {
        assert_eq!(
            (self.status, self.body["code"].as_str()),
            (status, Some(code)),
            "unexpected answer: {self:?}"
        );
        assert!(
            self.content_type.starts_with("application/problem+json"),
            "a {status} must be problem+json: {self:?}"
        );
        assert_eq!(self.body["status"], status, "body status: {self:?}");
    }
}

/// One gateway started by `spawn_app` or `spawn_peer`; dropping it stops it.
pub struct Gateway {
    pub base_url: String,
    pub http: reqwest::Client,
    organizer_key: String,
    stop: Option<oneshot::Sender<()>>,
    task: Option<JoinHandle<anyhow::Result<()>>>,
}

impl Drop for Gateway {
    fn drop(&mut self) {
        if let Some(task) = &self.task {
            task.abort();
        }
    }
}

impl Gateway {
    /// Reads the public queue snapshot of `event` until `done` holds; returns that body.
    pub async fn snapshot_until(&self, event: &str, done: impl Fn(&Value) -> bool) -> Value {
        let started = tokio::time::Instant::now();
        loop {
            let snap = self
                .get(&format!("/api/events/{event}/queue/snapshot"))
                .await
                .expect(200)
                .body;
            if done(&snap) {
                return snap;
            }
            assert!(
                started.elapsed() < DEADLINE,
                "snapshot never got there: {snap}"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    pub(crate) fn new(
        base_url: String,
        organizer_key: String,
        stop: oneshot::Sender<()>,
        task: JoinHandle<anyhow::Result<()>>,
    ) -> Self {
        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs(15))
            .build()
            .expect("build an HTTP client");
        Self {
            base_url,
            http,
            organizer_key,
            stop: Some(stop),
            task: Some(task),
        }
    }

    /// Polls `/readyz` (no sleeping for a fixed time): the server is up once it answers 200.
    pub(crate) async fn wait_ready(&self) {
        let stopped = || self.task.as_ref().is_some_and(|task| task.is_finished());
        wait_ready_at(&self.http, &self.base_url, DEADLINE, stopped).await;
    }

    /// Graceful shutdown (sockets hear `reconnect`); waits for `run` to return.
    pub async fn stop(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(task) = self.task.take() {
            let done = tokio::time::timeout(DEADLINE, task)
                .await
                .expect("the gateway stops within the deadline");
            done.expect("the gateway task did not panic")
                .expect("the gateway stopped cleanly");
        }
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base_url)
    }

    pub fn ws_url(&self, path: &str) -> String {
        format!("ws{}{path}", self.base_url.trim_start_matches("http"))
    }

    pub fn request(&self, method: Method, path: &str) -> RequestBuilder {
        self.http.request(method, self.url(path))
    }

    pub async fn send(&self, request: RequestBuilder) -> Answer {
        Answer::from(request.send().await.expect("the gateway answers")).await
    }

    pub async fn get(&self, path: &str) -> Answer {
        self.send(self.request(Method::GET, path)).await
    }

    /// A request with the organizer key.
    pub fn admin(&self, method: Method, path: &str) -> RequestBuilder {
        self.request(method, path)
            .bearer_auth(self.organizer_key.clone())
    }
}

/// Polls `base`'s `/readyz` until it answers 200, for at most `within`; `stopped` says the
/// server died while starting.
pub async fn wait_ready_at(
    http: &reqwest::Client,
    base: &str,
    within: Duration,
    stopped: impl Fn() -> bool,
) {
    let started = tokio::time::Instant::now();
    loop {
        assert!(
            !stopped(),
            "the gateway at {base} stopped while starting; run with RUST_LOG=info to see why"
        );
        let ready = http
            .get(format!("{base}/readyz"))
            .timeout(Duration::from_secs(1))
            .send()
            .await;
        if ready.is_ok_and(|r| r.status().is_success()) {
            return;
        }
        assert!(
            started.elapsed() < within,
            "the gateway at {base} was not ready within {within:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
