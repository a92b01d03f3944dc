//! CPU time from `/proc`: this process (and its waited-for workers), and the servers under
//! test, found by name or given with `--watch-pid` (with their children: a proxy's workers), so
//! the report shows who burned the cores.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// Linux reports `/proc/*/stat` times in clock ticks of 1/100 s on every common platform.
const TICKS_PER_S: f64 = 100.0;
const NAMES: [&str; 5] = ["gateway", "postgres", "redis-server", "simulator", "nginx"];

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct CpuSplit {
    pub soak_s: f64,
    /// Process name (or `pid N`) → CPU seconds used during the run.
    pub servers: BTreeMap<String, f64>,
}

/// (name, parent, utime + stime, cutime + cstime) in seconds.
fn times(pid: &str) -> Option<(String, u32, f64, f64)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let open = stat.find('(')?;
    let close = stat.rfind(')')?;
    let name = stat[open + 1..close].to_owned();
    let fields: Vec<&str> = stat[close + 2..].split(' ').collect();
    // After the name: state is field 3; utime 14, stime 15, cutime 16, cstime 17.
    let f = |i: usize| fields.get(i - 3).and_then(|v| v.parse::<f64>().ok());
    let parent = fields.get(4 - 3).and_then(|v| v.parse::<u32>().ok())?;
    Some((
        name,
        parent,
        (f(14)? + f(15)?) / TICKS_PER_S,
        (f(16)? + f(17)?) / TICKS_PER_S,
    ))
}

/// A reading of every watched process.
#[derive(Debug, Clone, Default)]
pub struct Sample {
    soak: f64,
    servers: BTreeMap<u32, (String, f64)>,
}

pub fn sample(watch: &[u32]) -> Sample {
    let soak = times("self")
        .map(|(_, _, own, children)| own + children)
        .unwrap_or(0.0);
    let mut servers = BTreeMap::new();
    if let Ok(dir) = std::fs::read_dir("/proc") {
        for entry in dir.flatten() {
            let Some(pid) = entry
                .file_name()
                .to_str()
                .and_then(|s| s.parse::<u32>().ok())
            else {
                continue;
            };
            if let Some((name, parent, own, _)) = times(&pid.to_string()) {
                // Given pids, only the shared servers are also found by name (other people's
                // gateways on the same machine are not ours).
                let named = if watch.is_empty() {
                    NAMES.iter().any(|n| name.starts_with(n))
                } else {
                    name.starts_with("postgres") || name.starts_with("redis-server")
                };
                if named || watch.contains(&pid) || watch.contains(&parent) {
                    servers.insert(pid, (name, own));
                }
            }
        }
    }
    Sample { soak, servers }
}

/// CPU used between two samples, summed per process name.
pub fn split(before: &Sample, after: &Sample) -> CpuSplit {
    let mut servers: BTreeMap<String, f64> = BTreeMap::new();
    for (pid, (name, end)) in &after.servers {
        let start = before.servers.get(pid).map(|(_, t)| *t).unwrap_or(0.0);
        let key = NAMES
            .iter()
            .find(|n| name.starts_with(*n))
            .map(|n| (*n).to_owned())
            .unwrap_or_else(|| name.clone());
        *servers.entry(key).or_default() += (end - start).max(0.0);
    }
    CpuSplit {
        soak_s: after.soak - before.soak,
        servers,
    }
}
