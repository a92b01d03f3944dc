//! The route book: every route of the gateway declared once, with who may call it, its shed
//! group, its body limit and its OpenAPI description. The router, the edge layer (caller check,
//! body read, shedding, the request span), `GET /api/openapi.json` and the contract test all
//! read this one table; a route cannot be declared without a caller kind and a group.

use axum::Router;
use axum::handler::Handler;
use axum::routing::{MethodFilter, MethodRouter};
use tower::Layer;
use tower_http::services::ServeDir;

use reservation::organizer_keys::Role;

use crate::auth::Caller;
use crate::body::{JOIN_BODY, MAX_BODY, SEAT_LIST_BODY};
use crate::openapi;
use crate::overload::Group;
use crate::routes::{
    access, admin, codes, event_list, event_look, events, exports, health, holds, keys, ops,
    orders, organizer_webhooks, pages, payment_challenge, queue, session, timeline, waiting_room,
    webhook,
};
use crate::state::AppState;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Verb {
    Get,
    Post,
    Patch,
    Delete,
}

impl Verb {
    /// The lower-case name OpenAPI keys operations by.
    pub fn name(self) -> &'static str {
        match self {
            Verb::Get => "get",
            Verb::Post => "post",
            Verb::Patch => "patch",
            Verb::Delete => "delete",
        }
    }

    fn filter(self) -> MethodFilter {
        match self {
            Verb::Get => MethodFilter::GET,
            Verb::Post => MethodFilter::POST,
            Verb::Patch => MethodFilter::PATCH,
            Verb::Delete => MethodFilter::DELETE,
        }
    }
}

/// What the edge layer of a route knows of it: all it needs per request, copied.
#[derive(Clone, Copy, Debug)]
pub struct Entry {
    pub verb: Verb,
    pub path: &'static str,
    pub caller: Caller,
    pub group: Group,
    /// The largest body read, or `None`: the route takes no body and none is read.
    pub body_limit: Option<usize>,
}

/// The OpenAPI description of a route. Schemas are named components of `openapi.rs`.
#[derive(Clone, Debug)]
pub struct Doc {
    pub summary: &'static str,
    pub success: u16,
    /// Whether the document lists the route (pages beyond `/` and `/admin`, static files and
    /// the simulator's challenge page are not part of the API).
    pub listed: bool,
    pub request: Option<&'static str>,
    /// The body may be left out (an empty body reads as `{}`).
    pub body_optional: bool,
    pub response: Option<&'static str>,
    /// The success answer is a CSV file (`text/csv`), not JSON.
    pub csv: bool,
    /// Query parameters, each optional.
    pub query: &'static [Param],
    /// Header parameters, each required.
    pub headers: &'static [Param],
}

/// A documented parameter: its name, its JSON schema (written in `openapi.rs`, where the
/// bounds it states are taken from the ones the server enforces) and what it is.
pub type Param = (&'static str, fn() -> serde_json::Value, &'static str);

enum Mount {
    Handler(MethodRouter<AppState>),
    Files(ServeDir),
}

pub struct Route {
    entry: Entry,
    doc: Doc,
    mount: Mount,
}

impl Route {
    /// A route served by `handler`. Its caller kind and group are required: there is no
    /// default to forget.
    pub fn new<H, T>(
        verb: Verb,
        path: &'static str,
        caller: Caller,
        group: Group,
        summary: &'static str,
        success: u16,
        handler: H,
    ) -> Self
    where
        H: Handler<T, AppState>,
        T: 'static,
    {
        Self::mounted(
            verb,
            path,
            caller,
            group,
            summary,
            success,
            Mount::Handler(axum::routing::on(verb.filter(), handler)),
        )
    }

    fn mounted(
        verb: Verb,
        path: &'static str,
        caller: Caller,
        group: Group,
        summary: &'static str,
        success: u16,
        mount: Mount,
    ) -> Self {
        Self {
            entry: Entry {
                verb,
                path,
                caller,
                group,
                body_limit: None,
            },
            doc: Doc {
                summary,
                success,
                listed: true,
                request: None,
                body_optional: false,
                response: None,
                csv: false,
                query: &[],
                headers: &[],
            },
            mount,
        }
    }

    /// The route takes a JSON body of the named schema, up to `MAX_BODY`.
    fn body(self, schema: &'static str) -> Self {
        self.body_up_to(schema, MAX_BODY)
    }

    /// The route takes a JSON body of the named schema, up to `limit` bytes.
    fn body_up_to(mut self, schema: &'static str, limit: usize) -> Self {
        self.entry.body_limit = Some(limit);
        self.doc.request = Some(schema);
        self
    }

    /// The route takes an optional JSON body of the named schema, up to `limit` bytes.
    fn optional_body(mut self, schema: &'static str, limit: usize) -> Self {
        self.doc.body_optional = true;
        self.body_up_to(schema, limit)
    }

    /// The success answer's schema.
    fn answers(mut self, schema: &'static str) -> Self {
        self.doc.response = Some(schema);
        self
    }

    /// The success answer is a streamed CSV file.
    fn csv(mut self) -> Self {
        self.doc.csv = true;
        self
    }

    fn query(mut self, params: &'static [Param]) -> Self {
        self.doc.query = params;
        self
    }

    fn headers(mut self, params: &'static [Param]) -> Self {
        self.doc.headers = params;
        self
    }

    /// Served, but not part of the documented API.
    fn unlisted(mut self) -> Self {
        self.doc.listed = false;
        self
    }

    pub fn entry(&self) -> &Entry {
        &self.entry
    }

    pub fn doc(&self) -> &Doc {
        &self.doc
    }
}

use Caller::{AdmissionOrReceipt, AdmissionToken, Anyone, QueueToken, WebhookSignature};
/// The organizer's roles, each route naming the least it needs.
const VIEWER: Caller = Caller::Organizer(Role::Viewer);
const OPERATOR: Caller = Caller::Organizer(Role::Operator);
const ADMIN: Caller = Caller::Organizer(Role::Admin);
use Verb::{Delete, Get, Patch, Post};

/// Every route of the gateway.
pub fn book() -> Vec<Route> {
    vec![
        // The waiting room.
        Route::new(
            Post,
            "/api/events/{event}/queue",
            Anyone,
            Group::Joins,
            "Join the queue",
            201,
            queue::join,
        )
        // A code and an identity token at most: a small body, read only when sent.
        .optional_body("JoinRequest", JOIN_BODY)
        .answers("Joined"),
        Route::new(
            Get,
            "/api/events/{event}/queue/status",
            QueueToken,
            Group::Polls,
            "Queue status (polling)",
            200,
            queue::status,
        ),
        // The same for every buyer and cacheable: cheap reads, not per-token polls.
        Route::new(
            Get,
            "/api/events/{event}/queue/snapshot",
            Anyone,
            Group::Polls,
            "Public queue snapshot (frontiers, outflow, seats; ETag)",
            200,
            queue::snapshot,
        ),
        Route::new(
            Post,
            "/api/events/{event}/queue/claim",
            QueueToken,
            Group::Reservations,
            "Claim an offer",
            200,
            queue::claim,
        ),
        // The queue token travels in the query (browsers cannot set headers on a socket) and
        // is checked over the socket, which is told why it is closed.
        Route::new(
            Get,
            "/api/events/{event}/queue/ws",
            Anyone,
            Group::Sockets,
            "Waiting-room WebSocket (token in query)",
            101,
            waiting_room::upgrade,
        )
        .query(&[("token", openapi::any_string, "the queue token")])
        .headers(openapi::WEBSOCKET_HANDSHAKE),
        // Public reads.
        Route::new(
            Get,
            "/api/events/{event}",
            Anyone,
            Group::Reads,
            "Event summary",
            200,
            events::event,
        ),
        Route::new(
            Get,
            "/api/events/{event}/seats",
            Anyone,
            Group::Reads,
            "Seat map: whole (ETag), one section, or the changes since a version",
            200,
            events::seats,
        )
        .query(&[
            (
                "section",
                openapi::section_name,
                "only this section's seats, with the version they were read at",
            ),
            (
                "since",
                openapi::seat_version,
                "only `{version, changes}` since this version (410 `seats_reload` when too many)",
            ),
        ]),
        Route::new(
            Get,
            "/api/events/{event}/fairness",
            Anyone,
            Group::Reads,
            "Pre-queue seed commitment and reveal",
            200,
            events::fairness,
        ),
        // The money path.
        Route::new(
            Get,
            "/api/session",
            AdmissionToken,
            Group::Reservations,
            "The admission session and its live hold",
            200,
            session::read,
        ),
        Route::new(
            Post,
            "/api/events/{event}/holds",
            AdmissionToken,
            Group::Reservations,
            "Hold seats (all or nothing)",
            201,
            holds::create,
        )
        .body("HoldRequest"),
        Route::new(
            Post,
            "/api/holds/{hold}/extend",
            AdmissionToken,
            Group::Reservations,
            "Extend a hold when the payment form opens",
            200,
            holds::extend,
        ),
        Route::new(
            Post,
            "/api/holds/{hold}/checkout",
            AdmissionToken,
            Group::Reservations,
            "Begin payment",
            202,
            holds::checkout,
        )
        .body("Checkout"),
        Route::new(
            Delete,
            "/api/holds/{hold}",
            AdmissionToken,
            Group::Reservations,
            "Release a hold",
            204,
            holds::release,
        ),
        Route::new(
            Get,
            "/api/holds/{hold}",
            AdmissionOrReceipt,
            Group::Reservations,
            "Read a hold",
            200,
            holds::read,
        )
        .answers("Hold"),
        Route::new(
            Get,
            "/api/orders/{order}",
            AdmissionOrReceipt,
            Group::Reservations,
            "Read an order",
            200,
            orders::read,
        ),
        Route::new(
            Post,
            "/api/payments/webhook",
            WebhookSignature,
            Group::Webhooks,
            "Payment provider webhook (Stripe-Signature)",
            200,
            webhook::receive,
        )
        .body("WebhookEvent"),
        // The organizer.
        Route::new(
            Post,
            "/api/admin/events",
            ADMIN,
            Group::Organizer,
            "Create an event",
            201,
            admin::create,
        )
        .body("CreateEvent"),
        Route::new(
            Post,
            "/api/admin/events/{event}/seats",
            ADMIN,
            Group::Organizer,
            "Add seats",
            200,
            admin::seats,
        )
        // A list of up to 10,000 seats is larger than any other body.
        .body_up_to("AddSeats", SEAT_LIST_BODY),
        Route::new(
            Patch,
            "/api/admin/events/{event}/admission",
            OPERATOR,
            Group::Organizer,
            "Tune admission live",
            200,
            admin::tune,
        )
        .body("AdmissionSettings"),
        Route::new(
            Get,
            "/api/admin/events/{event}",
            VIEWER,
            Group::Organizer,
            "The event as the organizer set it: name, opening, hold and payment timings, look",
            200,
            event_look::read,
        )
        .answers("EventSettings"),
        Route::new(
            Patch,
            "/api/admin/events/{event}",
            ADMIN,
            Group::Organizer,
            "Brand the event's pages, name the sites that may frame them, rename the event and, before it opens, move its opening and timings",
            200,
            event_look::patch,
        )
        .body("EventLook")
        .answers("EventSettings"),
        Route::new(
            Get,
            "/api/admin/events/{event}/stats",
            VIEWER,
            Group::Organizer,
            "Queue, seat, hold and payment counts",
            200,
            admin::stats,
        ),
        Route::new(
            Get,
            "/api/admin/events/{event}/stuck",
            VIEWER,
            Group::Organizer,
            "Holds and payments stuck in paying",
            200,
            admin::stuck,
        )
        .query(&[(
            "older_than_s",
            openapi::stuck_age,
            "seconds in `paying` (default 60)",
        )]),
        Route::new(
            Post,
            "/api/admin/events/{event}/codes",
            ADMIN,
            Group::Organizer,
            "Generate or upload presale and access codes",
            201,
            codes::add,
        )
        .body_up_to("AddCodes", codes::CODES_BODY)
        .answers("CodesAdded"),
        Route::new(
            Get,
            "/api/admin/events/{event}/codes",
            VIEWER,
            Group::Organizer,
            "List access codes with their uses left (paged)",
            200,
            codes::list,
        )
        .query(&[
            (
                "after",
                openapi::code_after,
                "the last code of the previous page",
            ),
            ("limit", openapi::code_page, "codes per page (default 100)"),
        ])
        .answers("CodeList"),
        Route::new(
            Get,
            "/api/admin/events/{event}/access",
            VIEWER,
            Group::Organizer,
            "Who may join, and the identity check (secrets never shown)",
            200,
            access::read,
        )
        .answers("Access"),
        Route::new(
            Patch,
            "/api/admin/events/{event}/access",
            ADMIN,
            Group::Organizer,
            "Change who may join and the identity check",
            200,
            access::change,
        )
        .body("AccessSettings")
        .answers("Access"),
        Route::new(
            Post,
            "/api/admin/events/{event}/close",
            OPERATOR,
            Group::Organizer,
            "Close the queue",
            200,
            admin::close,
        ),
        // Webhooks to the organizer's own systems.
        Route::new(
            Post,
            "/api/admin/events/{event}/webhooks",
            ADMIN,
            Group::Organizer,
            "Subscribe a URL to the event's facts (the secret is shown once)",
            201,
            organizer_webhooks::create,
        )
        .body("CreateWebhook")
        .answers("Webhook"),
        Route::new(
            Get,
            "/api/admin/events/{event}/webhooks",
            VIEWER,
            Group::Organizer,
            "The event's webhook subscriptions",
            200,
            organizer_webhooks::list,
        )
        .answers("WebhookList"),
        Route::new(
            Delete,
            "/api/admin/events/{event}/webhooks/{webhook}",
            ADMIN,
            Group::Organizer,
            "Delete a webhook subscription and its deliveries",
            204,
            organizer_webhooks::delete,
        ),
        Route::new(
            Get,
            "/api/admin/events/{event}/webhooks/{webhook}/deliveries",
            VIEWER,
            Group::Organizer,
            "A webhook's latest deliveries and each attempt",
            200,
            organizer_webhooks::deliveries,
        )
        .answers("WebhookDeliveries"),
        Route::new(
            Post,
            "/api/admin/events/{event}/webhooks/{webhook}/test",
            ADMIN,
            Group::Organizer,
            "Send a test event (`ping`) to a webhook",
            202,
            organizer_webhooks::test,
        ),
        Route::new(
            Get,
            "/api/admin/events",
            VIEWER,
            Group::Organizer,
            "List events with their state and seat counts (paged)",
            200,
            event_list::list,
        )
        .answers("EventList")
        .query(&[
            (
                "limit",
                openapi::event_page_limit,
                "events per page (default 50)",
            ),
            ("after", openapi::event_id, "the `next` of the page before"),
        ]),
        Route::new(
            Post,
            "/api/admin/keys",
            ADMIN,
            Group::Organizer,
            "Add a team key (shown once)",
            201,
            keys::create,
        )
        .body("CreateKey")
        .answers("NewTeamKey"),
        Route::new(
            Get,
            "/api/admin/keys",
            ADMIN,
            Group::Organizer,
            "List the team's keys (never the keys themselves)",
            200,
            keys::list,
        )
        .answers("TeamKeys"),
        Route::new(
            Delete,
            "/api/admin/keys/{key}",
            ADMIN,
            Group::Organizer,
            "Revoke a team key (every instance refuses it within a second)",
            204,
            keys::revoke,
        ),
        Route::new(
            Get,
            "/api/admin/events/{event}/exports/orders.csv",
            VIEWER,
            Group::Organizer,
            "Export the orders (streamed CSV)",
            200,
            exports::orders,
        )
        .csv(),
        Route::new(
            Get,
            "/api/admin/events/{event}/exports/sales.csv",
            VIEWER,
            Group::Organizer,
            "Export the seats sold (streamed CSV)",
            200,
            exports::sales,
        )
        .csv(),
        Route::new(
            Get,
            "/api/admin/events/{event}/exports/holds.csv",
            VIEWER,
            Group::Organizer,
            "Export the holds (streamed CSV)",
            200,
            exports::holds,
        )
        .csv(),
        Route::new(
            Get,
            "/api/admin/events/{event}/exports/admissions.csv",
            VIEWER,
            Group::Organizer,
            "Export the admission sessions (streamed CSV)",
            200,
            exports::admissions,
        )
        .csv(),
        Route::new(
            Get,
            "/api/admin/events/{event}/exports/audit.csv",
            VIEWER,
            Group::Organizer,
            "Export the event's audit log (streamed CSV)",
            200,
            exports::audit,
        )
        .csv(),
        Route::new(
            Get,
            "/api/admin/events/{event}/timeline",
            VIEWER,
            Group::Organizer,
            "Joins, offers, claims, lapses, holds and sales per minute, and when the seats run out",
            200,
            timeline::timeline,
        )
        .answers("Timeline"),
        // Operations: never shed, so operators see the overload.
        Route::new(
            Get,
            "/healthz",
            Anyone,
            Group::Unlimited,
            "Process up",
            200,
            health::alive,
        ),
        Route::new(
            Get,
            "/readyz",
            Anyone,
            Group::Unlimited,
            "Database and queue backend reachable",
            200,
            health::ready,
        ),
        Route::new(
            Get,
            "/metrics",
            Anyone,
            Group::Unlimited,
            "Prometheus metrics",
            200,
            ops::metrics,
        ),
        Route::new(
            Get,
            "/api/openapi.json",
            Anyone,
            Group::Reads,
            "This document",
            200,
            ops::openapi,
        ),
        // Pages.
        page("/", "Waiting-room page (HTML)", pages::index()),
        page("/admin", "Organizer dashboard (HTML)", pages::admin()),
        // Framed only by the sites the event's organizer named (its embed mode).
        Route::new(
            Get,
            "/events/{event}",
            Anyone,
            Group::Reads,
            "Waiting-room page of one event (HTML)",
            200,
            event_look::page,
        )
        .unlisted(),
        Route::mounted(
            Get,
            "/static",
            Anyone,
            Group::Reads,
            "Static files",
            200,
            Mount::Files(pages::files()),
        )
        .unlisted(),
        // The in-process simulator's 3-D Secure challenge (404 with a real provider).
        Route::new(
            Get,
            "/_sim/authenticate/{payment}",
            Anyone,
            Group::Reads,
            "Simulated 3-D Secure challenge",
            200,
            payment_challenge::page,
        )
        .unlisted(),
        Route::new(
            Post,
            "/_sim/authenticate/{payment}/{choice}",
            Anyone,
            Group::Reads,
            "Simulated 3-D Secure answer",
            303,
            payment_challenge::choose,
        )
        .unlisted(),
    ]
}

fn page(path: &'static str, summary: &'static str, file: MethodRouter<AppState>) -> Route {
    Route::mounted(
        Get,
        path,
        Anyone,
        Group::Reads,
        summary,
        200,
        Mount::Handler(file),
    )
}

/// The state of a route's edge layer: the shared state and the route's entry.
#[derive(Clone)]
pub struct Edge {
    pub app: AppState,
    pub entry: Entry,
}

/// The router of every route in the book, each behind its own edge layer.
pub fn router(state: AppState) -> Router {
    let book = book();
    let ceiling = book
        .iter()
        .filter_map(|route| route.entry.body_limit)
        .max()
        .unwrap_or(MAX_BODY);
    let mut router = Router::new();
    for route in book {
        let edge = axum::middleware::from_fn_with_state(
            Edge {
                app: state.clone(),
                entry: route.entry,
            },
            crate::request_span::trace,
        );
        router = match route.mount {
            Mount::Handler(handler) => router.route(route.entry.path, handler.route_layer(edge)),
            Mount::Files(files) => router.nest_service(route.entry.path, edge.layer(files)),
        };
    }
    router
        // Bodies are read at the edge within each route's limit; this is the ceiling for
        // anything that would read one again.
        .layer(axum::extract::DefaultBodyLimit::max(ceiling))
        .fallback(crate::errors::no_such_route)
        .method_not_allowed_fallback(crate::errors::method_not_allowed)
        .with_state(state)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_method_and_path_is_declared_once() {
        let mut seen = std::collections::HashSet::new();
        for route in book() {
            let Entry { verb, path, .. } = route.entry;
            assert!(seen.insert((verb, path)), "{verb:?} {path} declared twice");
        }
    }

    /// Only routes whose handler reads a body get one read for them, and every body has a
    /// documented schema.
    #[test]
    fn bodies_are_declared_with_their_schema() {
        for route in book() {
            assert_eq!(
                route.entry.body_limit.is_some(),
                route.doc.request.is_some(),
                "{}",
                route.entry.path
            );
            if route.entry.body_limit.is_some() {
                assert_ne!(route.entry.verb, Verb::Get, "{}", route.entry.path);
            }
        }
    }
}
