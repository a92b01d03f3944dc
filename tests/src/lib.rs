//! Floodgate end-to-end support.
//!
//! # Layout
//! - `simulator.rs`: the payment simulator served over HTTP (`spawn` on port 0, `router`).
//! - `sim_control.rs`: a client for the simulator's `/_sim/*` control routes.
//! - `invariants.rs`: DESIGN §5 invariants 1–4 from rows, event log and ledger (one checker).
//! - `saga.rs`: the payments-saga rig (fresh database, HTTP simulator, worker, reconciler).
//! - `tls.rs`: a CA and server certificate made at test time; any router served over HTTPS.
//! - `tls_servers.rs`: throwaway PostgreSQL (`ssl=on`, `hostssl` only) and TLS-only Redis.
//! - `tls_cluster.rs`: a throwaway three-master Redis Cluster speaking only TLS.
//! - `soak/`: the soak tool's library (see its module docs); `bin/soak.rs` its binary.
//! - `bin/simulator.rs`: the same server as a standalone process.

pub mod invariants;
pub mod saga;
pub mod sim_control;
pub mod simulator;
pub mod soak;
pub mod tls;
pub mod tls_cluster;
pub mod tls_servers;
