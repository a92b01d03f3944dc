//! Progress while the run goes: one indicatif line per worker process on a terminal, a plain
//! line every ten seconds otherwise (CI logs).

use std::io::IsTerminal;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use super::stats::Stats;

fn line(stats: &Stats, total: u64) -> String {
    let l = &stats.live;
    let g = |a: &std::sync::atomic::AtomicU64| a.load(Ordering::Relaxed);
    let i = |a: &std::sync::atomic::AtomicI64| a.load(Ordering::Relaxed);
    let errors = stats.errors();
    let top: Vec<String> = {
        let mut e: Vec<_> = errors.into_iter().collect();
        e.sort_by_key(|x| std::cmp::Reverse(x.1));
        e.into_iter()
            .take(4)
            .map(|(k, v)| format!("{k}:{v}"))
            .collect()
    };
    format!(
        "arrived {}/{total} joined {} waiting {} sockets {} offered {} admitted {} holding {} paying {} sold {} sold-out told {} done {} errors {} [{}]",
        g(&l.arrived),
        g(&l.joined),
        i(&l.waiting),
        i(&l.sockets),
        g(&l.offered),
        g(&l.admitted),
        i(&l.holding),
        i(&l.paying),
        g(&l.sold),
        g(&l.sold_out_notices),
        g(&l.done),
        g(&l.errors),
        top.join(" ")
    )
}

/// Shows progress until the returned handle is aborted.
pub fn spawn(
    stats: Arc<Stats>,
    total: u64,
    quiet: bool,
    label: String,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let tty = std::io::stderr().is_terminal() && !quiet;
        let bar = if tty {
            let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr());
            bar.set_style(
                ProgressStyle::with_template("{elapsed_precise} {bar:20} {msg}")
                    .unwrap_or_else(|_| ProgressStyle::default_bar()),
            );
            Some(bar)
        } else {
            None
        };
        let mut tick = tokio::time::interval(if tty {
            Duration::from_millis(250)
        } else {
            Duration::from_secs(10)
        });
        loop {
            tick.tick().await;
            let msg = line(&stats, total);
            match &bar {
                Some(bar) => {
                    bar.set_position(stats.live.done.load(Ordering::Relaxed));
                    bar.set_message(format!("{label}{msg}"));
                }
                None => eprintln!("[soak{label}] {msg}"),
            }
        }
    })
}
