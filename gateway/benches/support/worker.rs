//! The bench binary re-executed in a role: load generators and bare servers run in their own
//! processes (their own file limit, their own resident set), and the coordinator speaks to them
//! by lines on stdin and stdout.

use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

/// The environment variable naming a worker's role; unset in the coordinator.
pub const ROLE: &str = "FLOODGATE_BENCH_ROLE";

/// This process's role, when it is a worker.
pub fn role() -> Option<String> {
    std::env::var(ROLE).ok()
}

/// A setting the coordinator passed to this worker.
pub fn setting(name: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| panic!("worker started without {name}"))
}

pub fn number(name: &str) -> u64 {
    setting(name)
        .parse()
        .unwrap_or_else(|e| panic!("{name} is not a number: {e}"))
}

/// A worker process, killed when dropped.
pub struct Worker {
    pub pid: u32,
    child: Child,
    stdin: ChildStdin,
    lines: Lines<BufReader<ChildStdout>>,
}

impl Worker {
    pub fn spawn(role: &str, settings: &[(&str, String)]) -> Self {
        let exe = std::env::current_exe().expect("the bench's own executable");
        let mut command = Command::new(exe);
        command
            .env(ROLE, role)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true);
        for (name, value) in settings {
            command.env(name, value);
        }
        let mut child = command
            .spawn()
            .unwrap_or_else(|e| panic!("re-execute the bench as {role}: {e}"));
        let pid = child.id().expect("a running worker has a pid");
        let stdin = child.stdin.take().expect("piped stdin");
        let stdout = child.stdout.take().expect("piped stdout");
        Self {
            pid,
            child,
            stdin,
            lines: BufReader::new(stdout).lines(),
        }
    }

    pub async fn send(&mut self, line: &str) {
        self.stdin
            .write_all(format!("{line}\n").as_bytes())
            .await
            .expect("write to a worker");
        self.stdin.flush().await.expect("flush to a worker");
    }

    /// The worker's next line, which must start with `word`; returns the rest.
    pub async fn expect(&mut self, word: &str, within: Duration) -> String {
        let line = tokio::time::timeout(within, self.lines.next_line())
            .await
            .unwrap_or_else(|_| panic!("worker {} said nothing for {within:?}", self.pid))
            .expect("read from a worker")
            .unwrap_or_else(|| panic!("worker {} exited before saying {word}", self.pid));
        match line.split_once(' ') {
            Some((w, rest)) if w == word => rest.to_owned(),
            None if line == word => String::new(),
            _ => panic!("worker {} said {line:?}, expected {word}", self.pid),
        }
    }

    pub async fn stop(mut self) {
        let _ = self.child.kill().await;
    }
}

/// Lines from the coordinator, for a worker.
pub fn commands() -> Lines<BufReader<tokio::io::Stdin>> {
    BufReader::new(tokio::io::stdin()).lines()
}

/// Says one line to the coordinator (stdout is line-buffered, so it goes at once).
pub fn say(line: &str) {
    println!("{line}");
}
