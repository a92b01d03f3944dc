//! Floodgate end-to-end support.
//!
//! # Layout
//! - `simulator.rs`: the payment simulator served over HTTP (`spawn` on port 0, `router`).
//! - `sim_control.rs`: a client for the simulator's `/_sim/*` control routes.
//! - `bin/simulator.rs`: the same server as a standalone process.

pub mod sim_control;
pub mod simulator;
