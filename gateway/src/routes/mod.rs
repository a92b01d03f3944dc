//! One file per resource of API.md; the routes themselves are declared in `route_book.rs`.

pub mod access;
pub mod admin;
pub mod codes;
pub mod event_list;
pub mod event_look;
pub mod events;
pub mod exports;
pub mod health;
pub mod holds;
pub mod keys;
pub mod ops;
pub mod orders;
pub mod organizer_webhooks;
pub mod pages;
pub mod payment_challenge;
pub mod queue;
pub mod session;
pub mod timeline;
pub mod waiting_room;
pub mod webhook;
