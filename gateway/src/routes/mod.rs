//! One file per resource, each with its own `router()`.

pub mod admin;
pub mod events;
pub mod health;
pub mod holds;
pub mod ops;
pub mod orders;
pub mod pages;
pub mod payment_challenge;
pub mod queue;
pub mod session;
pub mod waiting_room;
pub mod webhook;
