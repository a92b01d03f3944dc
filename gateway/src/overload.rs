//! Load shedding per route group: each group gets a bounded number of requests in flight, and
//! the next one is answered 503 `overloaded` with `Retry-After` at once instead of queueing
//! forever. Separate groups keep a join storm at opening from starving holds and checkouts.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use tokio::sync::Semaphore;

use crate::problem::Problem;

#[derive(Clone)]
pub struct Limit {
    name: &'static str,
    permits: Arc<Semaphore>,
}

impl Limit {
    pub fn new(name: &'static str, in_flight: usize) -> Self {
        Self {
            name,
            permits: Arc::new(Semaphore::new(in_flight)),
        }
    }
}

pub async fn shed(State(limit): State<Limit>, request: Request, next: Next) -> Response {
    match limit.permits.clone().try_acquire_owned() {
        Ok(_permit) => next.run(request).await,
        Err(_) => {
            metrics::counter!("floodgate_rejections_total", "status" => "503", "reason" => limit.name).increment(1);
            Problem::overloaded(format!(
                "too many {} requests in flight; retry shortly",
                limit.name
            ))
            .into_response()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::Router;
    use axum::body::Body;
    use axum::http::StatusCode;
    use axum::routing::get;
    use tower::ServiceExt;

    #[tokio::test]
    async fn sheds_beyond_the_limit_and_recovers() {
        let started = Arc::new(tokio::sync::Notify::new());
        let gate = Arc::new(tokio::sync::Notify::new());
        let (s, g) = (started.clone(), gate.clone());
        let app = Router::new()
            .route(
                "/",
                get(move || {
                    let (s, g) = (s.clone(), g.clone());
                    async move {
                        s.notify_one();
                        g.notified().await;
                    }
                }),
            )
            .layer(axum::middleware::from_fn_with_state(
                Limit::new("test", 1),
                shed,
            ));
        let request = || axum::http::Request::new(Body::empty());
        let first = tokio::spawn(app.clone().oneshot(request()));
        // The first request now holds the only permit until the gate opens.
        started.notified().await;
        let second = app.clone().oneshot(request()).await.unwrap();
        assert_eq!(second.status(), StatusCode::SERVICE_UNAVAILABLE);
        assert!(second.headers().contains_key("retry-after"));
        gate.notify_one();
        assert_eq!(first.await.unwrap().unwrap().status(), StatusCode::OK);
    }
}
