//! The soak tool: `soak --gateway http://127.0.0.1:8080 --organizer-key … --database-url …
//! --sim-url … [knobs]`. Prints the report table, writes `--json`, exits 1 on any breach.
//! See tests/soak/README.md.

use clap::Parser;
use floodgate_tests::soak::{self, Config, workers};

// The load generator allocates per request and per frame for hundreds of thousands of buyers;
// glibc's allocator took half of its CPU in a profile (free-list consolidation), which the
// servers it measures on the same two cores then lacked.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_writer(std::io::stderr)
        .init();
    // A worker process gets its configuration from the parent, not from flags.
    if let Ok(json) = std::env::var(workers::CONFIG_ENV) {
        let config: Config = serde_json::from_str(&json)?;
        return workers::serve(config).await;
    }
    let config = Config::parse();
    let report = soak::run(config).await?;
    println!("{}", report.table());
    if !report.verdict.clean {
        eprintln!("soak: the verdict found breaches");
        std::process::exit(1);
    }
    Ok(())
}
