//! Floodgate admission: the waiting room in front of the reservation core (DESIGN §3).
//! No HTTP and no SQL: what it needs from the database it asks through [`AdmissionDb`].
//!
//! # Layout
//! - `admission`: the [`Admission`] facade: join, status, claim, token checks, fairness
//! - `meter`: ticks (offers within rate and cap), the run loop, Redis-loss recovery
//! - `backend/`: the queue state, in memory or in Redis (Lua scripts in `backend/lua/`)
//! - `turn`: status and claim (offer → session)
//! - `token`: queue and admission JWTs, the key ring
//! - `entry`: who may join (access rule, identity tokens) and the two lanes
//! - `fairness`: the seeded pre-queue permutation and its commitment
//! - `status`, `snapshot`: what buyers are told; the per-tick change feed
//! - `public`: the public queue snapshot, serialized once per published tick
//! - `chance`: the chance of a seat for a place in line
//! - `turnover`, `wait`: how long a place under the cap is held, and the wait it gives
//! - `forecast`: when the seats will run out, from the same model
//! - `limit`: the join limit per client address
//! - `modes`: pass-through, maintenance, fail-open and the organizer's message
//! - `fail_open`: admission from the database alone while the queue backend is down
//! - `pressure`: backpressure, the share of the rate the meter uses while the core struggles
//! - `db`: the [`AdmissionDb`] trait the gateway implements
//! - `clock`, `config`, `error`
//! - `testing` (feature): an in-memory `AdmissionDb`

mod admission;
mod backend;
mod chance;
mod clock;
mod config;
mod db;
mod entry;
mod error;
mod fail_open;
mod fairness;
mod forecast;
mod frontier;
mod limit;
mod meter;
mod modes;
mod opening;
mod pressure;
mod public;
mod snapshot;
mod status;
mod token;
mod turn;
mod turnover;
mod wait;

#[cfg(feature = "testing")]
pub mod testing;

pub use admission::{Admission, Admitted, JoinGate, Joined, MeterFigures, PlaceKey};
pub use chance::SeatModel;
pub use clock::{Clock, UnixMs};
pub use config::AdmissionConfig;
pub use db::{AdmissionDb, Availability, Checkpoint, Control, DbError, SessionRecord, TickLog};
pub use entry::{
    Access, IDENTITY_TOKEN_BYTES, IdentityAlg, IdentityRule, Lane, PRIORITY_BASE, Person,
    SUBJECT_BYTES,
};
pub use error::{AdmissionError, InvalidToken, StorageError};
pub use fairness::{Fairness, pre_queue_order, pre_score, rank_key, seed_commitment};
pub use forecast::Forecast;
pub use meter::TickReport;
pub use modes::{MessageLevel, Mode, QueueMessage};
pub use opening::{read_s as pre_queue_read_s, ticket_share as opening_share};
pub use pressure::Pressure;
pub use public::Public;
pub use snapshot::{EventState, Snapshot};
pub use status::{QueueStatus, Status, by_place as read_by_place_s};
pub use token::{AdmissionClaims, KeyRing, KeyRingError, QueueClaims};
pub use wait::{CapModel, soonest_at_rate_s, soonest_offer_s, wait_estimate};
