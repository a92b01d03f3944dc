//! The payment simulator as a process: `cargo run -p floodgate-tests --bin simulator --
//! --listen 127.0.0.1:0 --webhook-url http://127.0.0.1:8080/api/payments/webhook
//! --webhook-secret whsec_…`. Prints the bound URL on stdout.

use std::net::SocketAddr;

use clap::Parser;
use floodgate_tests::simulator::{SimServerConfig, spawn};
use reservation::payments::simulator::{Knobs, SimulatorConfig};

#[derive(Parser)]
#[command(about = "Stripe-shaped payment provider simulator")]
struct Args {
    #[arg(long, env = "SIM_LISTEN", default_value = "127.0.0.1:0")]
    listen: SocketAddr,
    #[arg(long, env = "SIM_WEBHOOK_URL")]
    webhook_url: Option<String>,
    #[arg(long, env = "SIM_WEBHOOK_SECRET", default_value = "")]
    webhook_secret: String,
    /// Require this bearer key on provider routes.
    #[arg(long, env = "SIM_API_KEY")]
    api_key: Option<String>,
    #[arg(long, env = "SIM_SEED", default_value_t = 0)]
    seed: u64,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .init();
    let args = Args::parse();
    let handle = spawn(SimServerConfig {
        listen: args.listen,
        api_key: args.api_key,
        simulator: SimulatorConfig {
            seed: args.seed,
            webhook_secret: args.webhook_secret,
            knobs: Knobs {
                webhook_url: args.webhook_url,
                ..Knobs::default()
            },
        },
    })
    .await?;
    println!("simulator listening on {}", handle.base_url);
    tokio::signal::ctrl_c().await?;
    Ok(())
}
