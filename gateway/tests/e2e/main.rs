//! The gateway end to end: each module is one story told against real gateways (in this process,
//! on `127.0.0.1:0`) and real backends, through the helpers in `support`.
//!
//! One test binary rather than one per story: each binary links the whole gateway, so the suite
//! builds in a fraction of the time. The stories that read what is shared by a whole process (the
//! metrics recorder, armed failure points, the process's own CPU time or memory) stay binaries of
//! their own beside this directory, where no other story's gateway can move their figures.

#[path = "../support/mod.rs"]
mod support;

mod admission_timeline;
mod axum_rejections;
mod backend_down;
mod bad_input;
mod branding;
mod buyer_journey;
mod documented_bounds;
mod emergency_modes;
mod event_timings;
mod headers;
mod openapi;
mod organizer;
mod organizer_message;
mod organizer_webhooks;
mod payments_overdue;
mod prequeue_socket;
mod presale;
mod queue_backends;
mod queue_snapshot;
mod slow_clients;
mod sockets;
mod stadium;
mod start_refusals;
mod team_keys;
mod three_d_secure;
mod tls_every_hop;
mod trickle;
mod two_gateways;
mod unknown_ids;
mod waitlist;
mod webhooks_budget;
