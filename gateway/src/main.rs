//! The gateway binary: parse the configuration, start logging, bind, and hand over to
//! `gateway::run`, which the tests call the same way.

use clap::Parser;
use gateway::config::Config;

/// mimalloc instead of glibc's malloc: a join allocates a few dozen short-lived objects, and
/// glibc's malloc and free were 14% of the gateway's time under a join flood (`perf`). Measured
/// in one session: joins on the memory backend 0.49× → 0.56× a bare axum route (`--bench
/// joins`), an idle waiting socket 7.23 → 6.65 KiB (`--bench sockets`: less fragmentation
/// after the connect storm); the price is ≈23 MiB more resident at start.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let config = Config::parse();
    gateway::telemetry::init(&config.log);
    let listener = gateway::listener::bind(config.listen)?;
    gateway::run(config, listener, gateway::shutdown::signal()).await
}
