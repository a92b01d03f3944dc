//! Logging: `tracing` to stderr, JSON when `FLOODGATE_LOG=json`, filtered by `RUST_LOG`.

use tracing_subscriber::EnvFilter;

pub fn init(format: &str) {
    let filter =
        EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info,sqlx=warn"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    // A second init (tests starting several gateways in one process) is harmless: ignore it.
    let _ = if format == "json" {
        builder.json().try_init()
    } else {
        builder.try_init()
    };
}
