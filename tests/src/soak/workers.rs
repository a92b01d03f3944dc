//! More sockets than one process may open (20,000 files each here): the soak re-executes
//! itself as worker processes, each driving the buyers whose index ≡ its number, and merges
//! their partial reports. The configuration goes to the workers as JSON in the environment.

use std::path::PathBuf;

use super::config::Config;
use super::stats::Partial;

pub const CONFIG_ENV: &str = "SOAK_WORKER_CONFIG";

pub async fn run(config: &Config) -> anyhow::Result<Partial> {
    let exe = std::env::current_exe()?;
    let dir = std::env::temp_dir();
    let mut children = Vec::new();
    for i in 0..config.workers {
        let path: PathBuf = dir.join(format!("{}-worker-{i}.json", config.event));
        let mut c = config.clone();
        c.worker_of = Some(i);
        c.json = Some(path.clone());
        let child = tokio::process::Command::new(&exe)
            .env(CONFIG_ENV, serde_json::to_string(&c)?)
            .kill_on_drop(true)
            .spawn()?;
        children.push((child, path));
    }
    let mut merged = Partial::default();
    let mut failed = Vec::new();
    for (i, (mut child, path)) in children.into_iter().enumerate() {
        let status = child.wait().await?;
        match std::fs::read(&path) {
            Ok(bytes) if status.success() => {
                merged.merge(serde_json::from_slice(&bytes)?);
                let _ = std::fs::remove_file(&path);
            }
            _ => failed.push(format!("worker {i} ended with {status}")),
        }
    }
    anyhow::ensure!(failed.is_empty(), "{}", failed.join("; "));
    Ok(merged)
}

/// The worker side: run the shard and write its partial report.
pub async fn serve(config: Config) -> anyhow::Result<()> {
    let worker = config.worker_of.unwrap_or(0);
    let partial = super::shard::run(&config, worker).await?;
    let path = config
        .json
        .clone()
        .ok_or_else(|| anyhow::anyhow!("a worker needs --json"))?;
    std::fs::write(path, serde_json::to_vec(&partial)?)?;
    Ok(())
}
