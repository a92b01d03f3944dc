//! Load shedding per route group: each group gets a bounded number of requests in flight, and
//! the next one is answered 503 `overloaded` with `Retry-After` at once instead of queueing
//! forever. Separate groups keep a join storm at opening from starving holds and checkouts.
//!
//! The `Retry-After` of a shed request grows with the crowd: it is long enough that the requests
//! shed in the last second, coming back spread over it, fit what the group served in that
//! second (see `Pace`). A fixed few seconds would bring a crowd many times the capacity back
//! before it could be served, and the gateway would spend itself answering 503s.
//!
//! A buyer who queued for their turn is owed a real answer: a request carrying an admission
//! token (holds, checkout, session, their hold and order), and the claim of a place already
//! offered, is never refused at once. It waits in a bounded line for a permit of its group
//! (`FLOODGATE_ADMITTED_QUEUE` long, for at most the request deadline), and a permit given back
//! goes to that line before anyone else; the rest of the group's traffic (claims of places not
//! yet offered, receipt reads without this deployment's tag) may not take the last quarter of
//! the budget, so it is what is shed first. The payment provider's webhooks have a budget of
//! their own. There are only `max_active` admitted buyers and open offers per event,
//! so the line stays short while the crowd is refused at the door.
//!
//! Every request but the WebSocket upgrade also has a deadline: past it the client hears 503
//! `overloaded` rather than hanging. The handler itself is not cancelled mid-write (answered
//! early, or left by its client, it goes on in a task of its own and keeps its permit until it
//! ends), so a checkout that was slow to answer still records its idempotent answer and a retry
//! replays it.

use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use axum::extract::Request;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use tokio::sync::Semaphore;
use tracing::Instrument;

use crate::problem::Problem;

/// The route groups with their own in-flight budget.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Group {
    /// Joining the queue: what a crowd does at opening.
    Joins,
    /// Polling a place in the queue: the public snapshot and the per-token status. Apart from
    /// joins so that a join storm cannot shed the polls of buyers already waiting (an offer
    /// unseen because its poll was shed lapses), and apart from reads so that the seat-map
    /// rush of buyers losing holds at the sell-out cannot shed the reads that tell the crowd.
    Polls,
    /// WebSocket upgrades (the budget covers the handshake, not the socket's life).
    Sockets,
    /// Claims, holds, extend, checkout, release, session, orders: the money path.
    Reservations,
    /// The payment provider's webhooks. Apart from reservations: a signature is checked only
    /// once the body is read, so they cannot join the admitted buyers' line, and shed with the
    /// crowd's requests they would hold up the confirmations the buyers paid for.
    Webhooks,
    /// The organizer API.
    Organizer,
    /// Event summaries, seat maps, fairness, pages, the OpenAPI document.
    Reads,
    /// Health, readiness and metrics: never shed, so operators see the overload.
    Unlimited,
}

impl Group {
    pub const LIMITED: [Group; 7] = [
        Group::Joins,
        Group::Polls,
        Group::Sockets,
        Group::Reservations,
        Group::Webhooks,
        Group::Organizer,
        Group::Reads,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Group::Joins => "joins",
            Group::Polls => "polls",
            Group::Sockets => "sockets",
            Group::Reservations => "reservations",
            Group::Webhooks => "webhooks",
            Group::Organizer => "organizer",
            Group::Reads => "reads",
            Group::Unlimited => "unlimited",
        }
    }

    /// Joins and polls: what a crowd sends, many times over, and what is held before a refusal.
    fn is_crowd(self) -> bool {
        matches!(self, Group::Joins | Group::Polls)
    }
}

/// In-flight budgets and deadlines, from the configuration.
#[derive(Clone, Debug)]
pub struct Budgets {
    pub joins: usize,
    pub polls: usize,
    pub sockets: usize,
    pub reservations: usize,
    pub webhooks: usize,
    /// Admitted buyers' requests that may wait for a permit at once (see the module's doc).
    pub admitted_queue: usize,
    /// Joins that may wait for a permit at once, and for how long (see `Limit::with_line`).
    pub join_queue: usize,
    pub join_patience: Duration,
    pub organizer: usize,
    pub reads: usize,
    /// Deadline of every request but WebSocket upgrades and organizer calls.
    pub request_timeout: Duration,
    /// Organizer calls (bulk seat generation may take a while).
    pub organizer_timeout: Duration,
    /// How long a client may take to send a request's body (read before any permit is taken).
    pub body_timeout: Duration,
}

/// How long a shed join or poll waits before its 503. Answering a flood at once lets each of its
/// connections send again at once, and at five times what the gateway serves, parsing and
/// refusing those requests alone fills the cores and starves holds and checkouts (measured by
/// `cargo bench -p gateway --bench overload`: hold p99 12× unloaded). Held half a second, a
/// connection is refused at most twice a second, and a shed buyer, told to come back seconds
/// later anyway, loses nothing.
const SHED_DELAY: Duration = Duration::from_millis(500);

/// The shortest and longest `Retry-After` a shed request is told (before jitter).
const MIN_RETRY_S: u64 = 2;
const MAX_RETRY_S: u64 = 60;

/// One group's traffic per second: requests let in and requests shed in the current second,
/// and from the last full second the wait that would spread the shed crowd's return over
/// what the group managed to serve. Atomics only: this is on the path of every request.
struct Pace {
    epoch: Instant,
    second: AtomicU64,
    served: AtomicU64,
    shed: AtomicU64,
    wait_s: AtomicU64,
}

impl Pace {
    fn new() -> Self {
        Self {
            epoch: Instant::now(),
            second: AtomicU64::new(0),
            served: AtomicU64::new(0),
            shed: AtomicU64::new(0),
            wait_s: AtomicU64::new(MIN_RETRY_S),
        }
    }

    fn now_s(&self) -> u64 {
        self.epoch.elapsed().as_secs()
    }

    /// Counts one request at second `now` (let in or shed), first closing the previous second
    /// if this is the first request of a new one.
    fn count(&self, now: u64, shed: bool) {
        let current = self.second.load(Ordering::Relaxed);
        if now > current
            && self
                .second
                .compare_exchange(current, now, Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
        {
            let served = self.served.swap(0, Ordering::Relaxed);
            let shed = self.shed.swap(0, Ordering::Relaxed);
            // A quiet second in between means the crowd is gone: start short again.
            let wait = if now == current + 1 {
                shed.div_ceil(served.max(1))
            } else {
                0
            };
            self.wait_s
                .store(wait.clamp(MIN_RETRY_S, MAX_RETRY_S), Ordering::Relaxed);
        }
        let counter = if shed { &self.shed } else { &self.served };
        counter.fetch_add(1, Ordering::Relaxed);
    }

    /// Jittered over [wait, 2 × wait] (2–5 s at the least), so the crowd does not come back
    /// as one wave.
    fn retry_after_s(&self) -> u64 {
        let wait = self.wait_s.load(Ordering::Relaxed);
        let most = (wait * 2).max(wait + 3);
        rand::random_range(wait..=most)
    }
}

#[derive(Clone)]
pub struct Limit {
    name: &'static str,
    size: usize,
    permits: Arc<Semaphore>,
    pace: Arc<Pace>,
    /// Permits only admitted buyers may take: the rest of the group is shed when no more than
    /// these are free.
    reserved: usize,
    /// Requests waiting for a permit now, and how many may.
    waiting: Arc<AtomicUsize>,
    max_waiting: usize,
    /// Set when every request of the group may wait in line (for this long), not only
    /// admitted buyers'.
    line_patience: Option<Duration>,
    /// The longest an admitted buyer's request waited for a permit since backpressure last
    /// looked: a line that long means more buyers are let in than the core serves.
    longest_admitted_wait_ms: Arc<AtomicU64>,
}

/// Webhooks that may wait for a permit at once: a provider delivers a burst of them as a storm's
/// payments settle, and each one shed is a confirmation delayed until the provider retries.
const WEBHOOK_LINE: usize = 1_024;

/// A quarter of the group's budget is kept for admitted buyers.
const RESERVED_SHARE: usize = 4;

/// One admitted request in the waiting line; leaves it however the wait ends (a permit, the
/// deadline, or the client going away).
struct InLine<'a>(&'a AtomicUsize);

impl Drop for InLine<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

impl Limit {
    pub fn new(name: &'static str, in_flight: usize) -> Self {
        Self {
            name,
            size: in_flight,
            permits: Arc::new(Semaphore::new(in_flight)),
            pace: Arc::new(Pace::new()),
            reserved: 0,
            waiting: Arc::new(AtomicUsize::new(0)),
            max_waiting: 0,
            line_patience: None,
            longest_admitted_wait_ms: Arc::new(AtomicU64::new(0)),
        }
    }

    /// Every request of the group may wait for a permit, up to `max_waiting` at once and for
    /// at most `patience`, in arrival order (the semaphore is fair). For joins: a place in the
    /// queue is given in the order joins reach the backend, so a burst answered by waiting
    /// keeps arrival order where shedding it would send the early ones to the back.
    fn with_line(mut self, max_waiting: usize, patience: Duration) -> Self {
        self.max_waiting = max_waiting;
        self.line_patience = Some(patience);
        self
    }

    /// Admitted buyers may wait for a permit (up to `max_waiting` of them at once) and have a
    /// share of the budget the rest of the group may not take.
    fn keeping_for_admitted(mut self, max_waiting: usize) -> Self {
        self.reserved = self.size / RESERVED_SHARE;
        self.max_waiting = max_waiting;
        self
    }

    /// A permit, or `None` (counted as shed) when the group is full, or down to the share
    /// kept for admitted buyers.
    pub(crate) fn admit(&self) -> Option<tokio::sync::OwnedSemaphorePermit> {
        // Permits given back go to waiting admitted requests first (the semaphore is fair), so
        // while any wait, none is free here.
        let permit = (self.permits.available_permits() > self.reserved)
            .then(|| self.permits.clone().try_acquire_owned().ok())
            .flatten();
        self.pace.count(self.pace.now_s(), permit.is_none());
        permit
    }

    /// A permit at once if one is free, else after waiting in line for at most `patience`
    /// (an admitted buyer's, or any request of a group with a line). `None` (counted as shed) only when the line is full or the wait ran out.
    pub(crate) async fn admit_waiting(
        &self,
        patience: Duration,
    ) -> Option<tokio::sync::OwnedSemaphorePermit> {
        if let Ok(permit) = self.permits.clone().try_acquire_owned() {
            self.pace.count(self.pace.now_s(), false);
            return Some(permit);
        }
        if self.waiting.fetch_add(1, Ordering::Relaxed) >= self.max_waiting {
            self.waiting.fetch_sub(1, Ordering::Relaxed);
            self.pace.count(self.pace.now_s(), true);
            return None;
        }
        let in_line = InLine(&self.waiting);
        let started = Instant::now();
        let permit = tokio::time::timeout(patience, self.permits.clone().acquire_owned())
            .await
            .ok()
            .and_then(Result::ok);
        drop(in_line);
        let waited = started.elapsed();
        if self.line_patience.is_some() {
            metrics::histogram!("floodgate_line_wait_seconds", "group" => self.name)
                .record(waited.as_secs_f64());
        } else {
            metrics::histogram!("floodgate_admitted_wait_seconds", "group" => self.name)
                .record(waited.as_secs_f64());
            let ms = u64::try_from(waited.as_millis()).unwrap_or(u64::MAX);
            self.longest_admitted_wait_ms
                .fetch_max(ms, Ordering::Relaxed);
        }
        self.pace.count(self.pace.now_s(), permit.is_none());
        permit
    }

    /// The longest an admitted buyer's request waited for a permit since the last call.
    pub fn take_longest_admitted_wait(&self) -> Duration {
        Duration::from_millis(self.longest_admitted_wait_ms.swap(0, Ordering::Relaxed))
    }

    /// Admitted buyers' requests waiting for a permit now.
    pub fn waiting(&self) -> usize {
        self.waiting.load(Ordering::Relaxed)
    }

    /// Requests of this group in flight now.
    pub fn in_flight(&self) -> usize {
        self.size.saturating_sub(self.permits.available_permits())
    }

    pub fn size(&self) -> usize {
        self.size
    }
}

/// The limits of every group, shared by the whole router.
pub struct Guard {
    joins: Limit,
    polls: Limit,
    sockets: Limit,
    reservations: Limit,
    webhooks: Limit,
    organizer: Limit,
    reads: Limit,
    request_timeout: Duration,
    organizer_timeout: Duration,
    body_timeout: Duration,
}

impl Guard {
    pub fn new(budgets: &Budgets) -> Self {
        Self {
            joins: Limit::new("joins", budgets.joins)
                .with_line(budgets.join_queue, budgets.join_patience),
            polls: Limit::new("polls", budgets.polls),
            sockets: Limit::new("sockets", budgets.sockets),
            reservations: Limit::new("reservations", budgets.reservations)
                .keeping_for_admitted(budgets.admitted_queue),
            webhooks: Limit::new("webhooks", budgets.webhooks)
                .with_line(WEBHOOK_LINE, budgets.request_timeout / 2),
            organizer: Limit::new("organizer", budgets.organizer),
            reads: Limit::new("reads", budgets.reads),
            request_timeout: budgets.request_timeout,
            organizer_timeout: budgets.organizer_timeout,
            body_timeout: budgets.body_timeout,
        }
    }

    /// How long a client may take to send a body.
    pub fn body_timeout(&self) -> Duration {
        self.body_timeout
    }

    pub fn limit(&self, group: Group) -> Option<&Limit> {
        match group {
            Group::Joins => Some(&self.joins),
            Group::Polls => Some(&self.polls),
            Group::Sockets => Some(&self.sockets),
            Group::Reservations => Some(&self.reservations),
            Group::Webhooks => Some(&self.webhooks),
            Group::Organizer => Some(&self.organizer),
            Group::Reads => Some(&self.reads),
            Group::Unlimited => None,
        }
    }

    pub(crate) fn timeout(&self, group: Group) -> Option<Duration> {
        match group {
            // A socket lives for minutes; its upgrade answers at once anyway.
            Group::Sockets => None,
            Group::Organizer => Some(self.organizer_timeout),
            _ => Some(self.request_timeout),
        }
    }
}

/// Takes a permit of the route's group or sheds, then runs the handler under the group's
/// deadline. The group comes from the route's entry in the route book.
pub(crate) async fn guard(guard: &Guard, group: Group, request: Request, next: Next) -> Response {
    let Some(limit) = guard.limit(group) else {
        return next.run(request).await;
    };
    let admitted = crate::auth::carries_admission(request.extensions());
    let patience = match limit.line_patience {
        Some(patience) => Some(patience),
        // Waiting is bounded by the request's deadline; the handler then gets its own.
        None if admitted => Some(guard.timeout(group).unwrap_or(guard.request_timeout)),
        None => None,
    };
    let permit = match patience {
        Some(patience) if limit.max_waiting > 0 => limit.admit_waiting(patience).await,
        _ => limit.admit(),
    };
    let Some(permit) = permit else {
        if group.is_crowd() {
            // An HTTP/1.1 connection reads its next request only once this one is answered:
            // holding the refusal a moment caps what each flooding connection costs, while
            // the sleep itself costs nothing (see `SHED_DELAY`).
            tokio::time::sleep(SHED_DELAY).await;
        }
        return shed_answer(limit);
    };
    let Some(deadline) = guard.timeout(group) else {
        let response = next.run(request).await;
        drop(permit);
        return response;
    };
    // The handler runs to its end (holding the permit), whatever the client is told at the
    // deadline: a half-done write is never abandoned. It runs here rather than in a task of
    // its own (a spawn, a timer and a cross-thread wake-up per request were a measured share
    // of a join's cost); only when answered early does what is left move to a task.
    let mut work = Detached::new(async move {
        let response = next.run(request).await;
        drop(permit);
        response
    });
    match tokio::time::timeout(deadline, &mut work).await {
        Ok(Ok(response)) => response,
        Ok(Err(panic)) => {
            let message = panic
                .downcast_ref::<&str>()
                .copied()
                .or_else(|| panic.downcast_ref::<String>().map(String::as_str))
                .unwrap_or("a non-text panic");
            tracing::error!(error = message, "request handler panicked");
            Problem::internal().into_response()
        }
        Err(_) => {
            metrics::counter!("floodgate_rejections_total", "status" => "503", "reason" => "timeout")
                .increment(1);
            tracing::warn!(
                group = group.name(),
                "request past its deadline; answered 503"
            );
            Problem::overloaded("the request took too long; retry shortly").into_response()
        }
    }
}

type Handler = Pin<Box<dyn Future<Output = Response> + Send>>;

/// A handler run in place that is never cancelled: dropped before it finished (the deadline
/// passed, or the client went away and the connection dropped the request), it goes on in a
/// task of its own. A panic comes out as `Err`, as a task's would.
struct Detached {
    handler: Option<Handler>,
}

impl Detached {
    fn new(handler: impl Future<Output = Response> + Send + 'static) -> Self {
        Self {
            handler: Some(Box::pin(handler)),
        }
    }
}

impl Future for Detached {
    type Output = std::thread::Result<Response>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let Some(handler) = self.handler.as_mut() else {
            return Poll::Pending; // finished already: never polled again by `timeout`
        };
        let polled = std::panic::catch_unwind(AssertUnwindSafe(|| handler.as_mut().poll(cx)));
        match polled {
            Ok(Poll::Pending) => Poll::Pending,
            Ok(Poll::Ready(response)) => {
                self.handler = None;
                Poll::Ready(Ok(response))
            }
            Err(panic) => {
                self.handler = None;
                Poll::Ready(Err(panic))
            }
        }
    }
}

impl Drop for Detached {
    fn drop(&mut self) {
        let Some(handler) = self.handler.take() else {
            return;
        };
        // Dropped inside the request span (`Instrumented` enters it to drop what it wraps):
        // the rest of the handler keeps logging under the request's id.
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => {
                runtime.spawn(handler.in_current_span());
            }
            Err(_) => tracing::warn!("a handler dropped outside the runtime was cancelled"),
        }
    }
}

/// Marks a response as a shed request's, so the request log does not write a warning per
/// refusal: a flood would otherwise spend the gateway on log lines. `floodgate_rejections_total`
/// counts them.
#[derive(Clone, Copy, Debug)]
pub struct Shed;

fn shed_answer(limit: &Limit) -> Response {
    let name = limit.name;
    metrics::counter!("floodgate_rejections_total", "status" => "503", "reason" => name)
        .increment(1);
    let mut response =
        Problem::overloaded(format!("too many {name} requests in flight; retry later"))
            .retry_after(limit.pace.retry_after_s())
            .into_response();
    response.extensions_mut().insert(Shed);
    response
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::Router;
    use axum::body::Body;
    use axum::http::StatusCode;
    use axum::routing::get;
    use tower::ServiceExt;

    /// `handler` shed and timed as a route of `group`.
    fn in_group(
        handler: axum::routing::MethodRouter,
        group: Group,
        guard: Arc<Guard>,
    ) -> axum::routing::MethodRouter {
        handler.route_layer(axum::middleware::from_fn(
            move |request: Request, next: Next| {
                let guard = guard.clone();
                async move { super::guard(&guard, group, request, next).await }
            },
        ))
    }

    /// `app`'s one route as a reservation route, with the test budgets.
    fn guarded_by(path: &str, handler: axum::routing::MethodRouter, guard: Arc<Guard>) -> Router {
        Router::new().route(path, in_group(handler, Group::Reservations, guard))
    }

    /// `guarded_by` with a 10 s deadline.
    fn guarded(path: &str, handler: axum::routing::MethodRouter) -> Router {
        guarded_by(
            path,
            handler,
            Arc::new(Guard::new(&budgets(Duration::from_secs(10)))),
        )
    }

    #[tokio::test]
    async fn sheds_beyond_the_limit_and_recovers() {
        let started = Arc::new(tokio::sync::Notify::new());
        let gate = Arc::new(tokio::sync::Notify::new());
        let (s, g) = (started.clone(), gate.clone());
        let app = guarded(
            "/",
            get(move || {
                let (s, g) = (s.clone(), g.clone());
                async move {
                    s.notify_one();
                    g.notified().await;
                }
            }),
        );
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

    /// A refused join is answered `SHED_DELAY` late, a refused read at once.
    #[tokio::test]
    async fn a_crowd_refusal_is_held_before_it_is_answered() {
        let gate = Arc::new(tokio::sync::Notify::new());
        let g = gate.clone();
        let blocked = move || {
            let g = g.clone();
            async move { g.notified().await }
        };
        let guard = Arc::new(Guard::new(&budgets(Duration::from_secs(10))));
        let app = Router::new()
            .route(
                "/api/events/{event}/queue",
                in_group(
                    axum::routing::post(blocked.clone()),
                    Group::Joins,
                    guard.clone(),
                ),
            )
            .route(
                "/api/events/{event}",
                in_group(get(blocked), Group::Reads, guard),
            );
        let request = |method: &str, path: &str| {
            axum::http::Request::builder()
                .method(method)
                .uri(path)
                .body(Body::empty())
                .unwrap()
        };
        for (method, path, held) in [
            ("POST", "/api/events/e/queue", true),
            ("GET", "/api/events/e", false),
        ] {
            // The first request takes the group's only permit and waits at the gate.
            let first = tokio::spawn(app.clone().oneshot(request(method, path)));
            tokio::task::yield_now().await;
            let t = Instant::now();
            let second = app.clone().oneshot(request(method, path)).await.unwrap();
            assert_eq!(second.status(), StatusCode::SERVICE_UNAVAILABLE, "{path}");
            assert_eq!(t.elapsed() >= SHED_DELAY, held, "{path}: {:?}", t.elapsed());
            gate.notify_one();
            first.await.unwrap().unwrap();
        }
    }

    /// Admitted buyers' requests wait in line and are served first; the rest of the group is
    /// shed, and may not take the share kept for admitted buyers.
    #[tokio::test]
    async fn admitted_requests_wait_for_a_permit_while_others_are_shed() {
        let limit = Limit::new("reservations", 4).keeping_for_admitted(1);
        // Three of four permits go to anyone; the fourth is kept.
        let anyone: Vec<_> = (0..3).map(|_| limit.admit()).collect();
        assert!(anyone.iter().all(Option::is_some));
        assert!(limit.admit().is_none(), "the kept permit is not for anyone");
        let admitted = limit.admit_waiting(Duration::from_secs(5)).await;
        assert!(
            admitted.is_some(),
            "an admitted request takes the kept permit"
        );
        // All four in use: an admitted request waits in line until one is given back.
        let waiter = {
            let limit = limit.clone();
            tokio::spawn(async move { limit.admit_waiting(Duration::from_secs(30)).await })
        };
        while limit.waiting() == 0 {
            tokio::task::yield_now().await;
        }
        // The line is full (one place): the next admitted request is refused at once.
        assert!(limit.admit_waiting(Duration::from_secs(30)).await.is_none());
        drop(anyone);
        let served = waiter.await.unwrap();
        assert!(
            served.is_some(),
            "the first permit given back went to the line"
        );
        assert_eq!(limit.waiting(), 0);
        // A wait that runs out leaves the line too.
        let _rest = (
            limit.admit_waiting(Duration::from_secs(1)).await,
            limit.admit_waiting(Duration::from_secs(1)).await,
        );
        assert!(
            limit
                .admit_waiting(Duration::from_millis(20))
                .await
                .is_none()
        );
        assert_eq!(limit.waiting(), 0);
    }

    /// A burst of joins beyond the budget waits in line and is served in arrival order; a
    /// full line, or one that waited past its patience, is shed.
    #[tokio::test]
    async fn joins_wait_in_arrival_order_when_all_permits_are_out() {
        let limit = Limit::new("joins", 1).with_line(3, Duration::from_secs(30));
        let held = limit.admit_waiting(Duration::from_secs(1)).await;
        assert!(held.is_some());
        let served = Arc::new(std::sync::Mutex::new(Vec::new()));
        let mut waiters = Vec::new();
        for i in 0..3 {
            let (line, served) = (limit.clone(), served.clone());
            waiters.push(tokio::spawn(async move {
                let permit = line.admit_waiting(Duration::from_secs(30)).await;
                served.lock().unwrap().push(i);
                permit.is_some()
            }));
            while limit.waiting() < i + 1 {
                tokio::task::yield_now().await;
            }
        }
        assert!(
            limit.admit_waiting(Duration::from_secs(30)).await.is_none(),
            "the fourth in a line of three is shed"
        );
        drop(held);
        for waiter in waiters {
            assert!(waiter.await.unwrap());
        }
        assert_eq!(*served.lock().unwrap(), vec![0, 1, 2]);
        // One in flight and a patience that runs out: shed, and out of the line.
        let held = limit.admit();
        assert!(held.is_some());
        assert!(
            limit
                .admit_waiting(Duration::from_millis(20))
                .await
                .is_none()
        );
        assert_eq!(limit.waiting(), 0);
    }

    #[test]
    fn retry_after_spreads_the_shed_crowd_over_what_was_served() {
        let pace = Pace::new();
        // Second 1: 100 let in, 1,000 shed: coming back over ten seconds would fit.
        for _ in 0..100 {
            pace.count(1, false);
        }
        for _ in 0..1_000 {
            pace.count(1, true);
        }
        assert!(
            (2..=5).contains(&pace.retry_after_s()),
            "before second 1 closes"
        );
        pace.count(2, true);
        for _ in 0..50 {
            assert!((10..=20).contains(&pace.retry_after_s()));
        }
        // Second 2 shed only one: back to the short wait.
        pace.count(3, false);
        assert!((2..=5).contains(&pace.retry_after_s()));
        // A flood far beyond the capacity is capped.
        for _ in 0..100_000 {
            pace.count(3, true);
        }
        pace.count(4, false);
        assert!((60..=120).contains(&pace.retry_after_s()));
        // A quiet second in between: the crowd has gone.
        pace.count(6, false);
        assert!((2..=5).contains(&pace.retry_after_s()));
    }

    fn budgets(timeout: Duration) -> Budgets {
        Budgets {
            joins: 1,
            polls: 1,
            sockets: 1,
            reservations: 1,
            webhooks: 1,
            admitted_queue: 0,
            join_queue: 0,
            join_patience: timeout,
            organizer: 1,
            reads: 1,
            request_timeout: timeout,
            organizer_timeout: timeout,
            body_timeout: timeout,
        }
    }

    #[tokio::test]
    async fn a_slow_request_hears_503_at_its_deadline_and_still_finishes() {
        let finished = Arc::new(tokio::sync::Notify::new());
        let done = finished.clone();
        let guard = Arc::new(Guard::new(&budgets(Duration::from_millis(50))));
        let app = guarded_by(
            "/api/session",
            get(move || {
                let done = done.clone();
                async move {
                    tokio::time::sleep(Duration::from_millis(200)).await;
                    done.notify_one();
                }
            }),
            guard.clone(),
        );
        let request = axum::http::Request::get("/api/session")
            .body(Body::empty())
            .unwrap();
        let answer = app.oneshot(request).await.unwrap();
        assert_eq!(answer.status(), StatusCode::SERVICE_UNAVAILABLE);
        let retry: u64 = answer.headers()["retry-after"]
            .to_str()
            .unwrap()
            .parse()
            .unwrap();
        assert!(
            (2..=5).contains(&retry),
            "jittered Retry-After, got {retry}"
        );
        // The handler was not cancelled: it ends, and only then gives its permit back.
        finished.notified().await;
        tokio::task::yield_now().await;
        let limit = guard.limit(Group::Reservations).unwrap();
        for _ in 0..100 {
            if limit.in_flight() == 0 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        assert_eq!(limit.in_flight(), 0);
    }

    /// A request whose client goes away mid-handler (hyper drops its future) is not cancelled:
    /// the handler goes on in a task of its own to its end.
    #[tokio::test]
    async fn a_request_left_by_its_client_still_finishes() {
        let started = Arc::new(tokio::sync::Notify::new());
        let finished = Arc::new(tokio::sync::Notify::new());
        let (s, f) = (started.clone(), finished.clone());
        let app = guarded(
            "/api/session",
            get(move || {
                let (s, f) = (s.clone(), f.clone());
                async move {
                    s.notify_one();
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    f.notify_one();
                }
            }),
        );
        let request = axum::http::Request::get("/api/session")
            .body(Body::empty())
            .unwrap();
        let client = tokio::spawn(app.oneshot(request));
        started.notified().await;
        client.abort();
        tokio::time::timeout(Duration::from_secs(5), finished.notified())
            .await
            .expect("the handler ran to its end");
    }

    fn boom() -> &'static str {
        panic!("a handler bug")
    }

    #[tokio::test]
    async fn a_panicking_handler_is_answered_500() {
        let app = guarded("/api/session", get(|| async { boom() }));
        let request = axum::http::Request::get("/api/session")
            .body(Body::empty())
            .unwrap();
        let answer = app.oneshot(request).await.unwrap();
        assert_eq!(answer.status(), StatusCode::INTERNAL_SERVER_ERROR);
    }
}
