//! Floodgate reservation core: the database decides who owns a seat (DESIGN §4).
//!
//! # Layout
//! - `store` — [`Store`]: one pool over PostgreSQL or SQLite, migrations, guards, retries.
//! - `dialect` — the few SQL tokens that differ between the two databases.
//! - `ids` — validated id newtypes and generated ids.
//! - `error` — [`Error`]: what callers act on, plus an opaque storage variant.
//! - `event` — events (with the fairness seed commitment) and their seats.
//! - `look` — the organizer's branding and embedding sites of an event's pages.
//! - `event_list` — the organizer's list of events with their seat counts, in pages.
//! - `session` — admission sessions, one per ticket.
//! - `audit` — the organizer's audit log, each change with the key that made it.
//! - `organizer_keys` — named organizer keys with a role (kept hashed).
//! - `export` — an event's orders, sales, holds, admissions and audit log in pages, for CSV.
//! - `access` — who may join (open, presale, invitation) and the identity key.
//! - `codes` — presale and access codes, a use taken by one conditional update.
//! - `queue_log` — the offers the meter made and the joins per minute: the admission log and
//!   the organizer's per-minute timeline.
//! - `admission_state` — live admission controls, session counts, queue checkpoints, settings.
//! - `availability` — the per-event count of seat availability changes (the map's `since`).
//! - `hold` — taking seats: named (`hold`) and general admission (`hold_ga`).
//! - `hold_pg` — the same in one round trip on PostgreSQL (functions of migration 0005).
//! - `hold_life` — `extend`, `release`, `sweep`.
//! - `payment` — `begin_payment`, `finalize`, `decline`, `abandon`.
//! - `payment_pg` — begin payment in one round trip on PostgreSQL (migration 0005).
//! - `payments` — the Stripe-shaped provider client, webhook signatures, the simulator.
//! - `outbox` — the worker (`run_outbox`): claims rows with a lease, calls the provider with
//!   no transaction open, records the answer conditionally; capture, void, refund, session ends.
//! - `hooks` — webhooks to the organizer's systems: subscriptions, the delivery outbox and
//!   its worker (`run_hooks`).
//! - `reconcile` — `run_reconciler`: attempts past `resolve_by` / `abandon_at`.
//! - `webhook_intake` — `intake_webhook`: verified, re-fetched, deduplicated provider events.
//! - `failpoint` — named pause/crash points, compiled in with the `failpoints` feature.
//! - `journal` — the event log and outbox rows written inside each transaction.
//! - `reads`, `views` — holds, orders, attempts, seat map, counts, "stuck".
//! - `ops_figures` — what the gateway samples for `/metrics`.
//! - `idempotency` — stored answers for repeated POSTs, reclaimable after a lease.
//! - `limits` — the bounds of every number an organizer sets.
//! - `testing` (feature) — fresh databases for tests.

mod access;
mod admission_modes;
mod admission_state;
mod audit;
mod availability;
pub mod codes;
mod dialect;
mod error;
mod event;
pub mod event_list;
mod event_timings;
mod export;
pub mod failpoint;
mod hold;
mod hold_life;
mod hold_pg;
pub mod hooks;
mod idempotency;
mod ids;
mod journal;
pub mod limits;
mod look;
mod ops_figures;
pub mod organizer_keys;
pub mod outbox;
mod payment;
mod payment_pg;
pub mod payments;
mod queue_log;
mod reads;
mod receipt;
pub mod reconcile;
mod session;
mod session_cap;
mod store;
#[cfg(feature = "testing")]
pub mod testing;
mod views;
pub mod webhook_intake;

pub use access::{AccessPatch, EventAccess, IdentityKey, IdentityPatch};
pub use admission_modes::{AdmissionMode, BackendDown, MESSAGE_CHARS, MessageLevel, QueueMessage};
pub use admission_state::{
    AdmissionControl, AdmissionPatch, EndedHolds, QueueCheckpoint, SeatAvailability,
};
pub use audit::{Actor, AuditEntry};
pub use dialect::Dialect;
pub use error::Error;
pub use event::{Event, NewEvent, NewSeat};
pub use event_list::EventListing;
pub use event_timings::TimingsPatch;
pub use export::{Cell, EXPORT_PAGE, Export, ExportRow};
pub use hold_life::Swept;
pub use idempotency::{Idempotency, IdempotencyTiming};
pub use ids::{
    AttemptId, EventId, HoldId, InvalidId, KeyId, OrderId, SeatId, SessionId, TicketId, WebhookId,
};
pub use look::LookPatch;
pub use ops_figures::{AttemptCount, LiveEventLimits, PoolFigures, ResolvedAttempt};
pub use payment::Finalized;
pub use queue_log::{MinuteCounts, Timeline};
pub use reads::{Counts, SeatView};
pub use receipt::ReceiptKeys;
pub use session::Session;
pub use store::{Store, StoreOptions};
pub use views::{AttemptState, Hold, HoldState, Order, PaymentAttempt};
