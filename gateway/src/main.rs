//! The gateway binary: parse the configuration, start logging, bind, and hand over to
//! `gateway::run`, which the tests call the same way.

use clap::Parser;
use gateway::config::Config;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let config = Config::parse();
    gateway::telemetry::init(&config.log);
    let listener = gateway::listener::bind(config.listen)?;
    gateway::run(config, listener, gateway::shutdown::signal()).await
}
