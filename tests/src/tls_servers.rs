//! Throwaway PostgreSQL and Redis servers that speak only TLS, with the certificates of a
//! [`Pki`]: each on its own port and temporary folder, stopped when dropped. They stand in
//! for a managed PostgreSQL that requires SSL and a `rediss://` Redis.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::tls::Pki;

/// How long a server may take to start before the test gives up on it.
const START_DEADLINE: Duration = Duration::from_secs(30);

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("find a free loopback port")
        .port()
}

/// Runs `program` as the `postgres` user (initdb refuses root); panics with its output.
fn as_postgres(program: &Path, args: &[&str]) {
    let output = Command::new("runuser")
        .args(["-u", "postgres", "--"])
        .arg(program)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("run {} as postgres: {e}", program.display()));
    assert!(
        output.status.success(),
        "{} {args:?} failed: {}{}",
        program.display(),
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

fn pg_bin() -> PathBuf {
    let mut found: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path().join("bin"))
        .filter(|bin| bin.join("initdb").exists())
        .collect();
    found.sort();
    found.pop().unwrap_or_else(|| {
        panic!(
            "the TLS tests start their own PostgreSQL: install it (apt-get install -y postgresql)"
        )
    })
}

/// PostgreSQL with `ssl=on` that refuses any connection without TLS (`hostssl` only).
pub struct TlsPostgres {
    /// `postgres://postgres@127.0.0.1:PORT/postgres`, with no TLS parameters.
    pub base_url: String,
    bin: PathBuf,
    data: PathBuf,
    _dir: tempfile::TempDir,
}

impl TlsPostgres {
    pub fn start(pki: &Pki) -> TlsPostgres {
        let bin = pg_bin();
        let dir = tempfile::Builder::new()
            .prefix("floodgate-pg-tls-")
            .tempdir()
            .expect("temporary folder for PostgreSQL");
        let root = dir.path();
        let data = root.join("data");
        let (cert, key) = (root.join("server.crt"), root.join("server.key"));
        std::fs::copy(&pki.cert_file, &cert).expect("copy the server certificate");
        std::fs::copy(&pki.key_file, &key).expect("copy the server key");
        let chown = Command::new("chown")
            .args(["-R", "postgres:postgres"])
            .arg(root)
            .status()
            .expect("chown the PostgreSQL folder");
        assert!(chown.success(), "chown the PostgreSQL folder to postgres");
        set_mode(root, 0o755);
        // PostgreSQL refuses a key others can read.
        set_mode(&key, 0o600);
        let data_s = data.to_string_lossy().into_owned();
        as_postgres(
            &bin.join("initdb"),
            &[
                "-D",
                data_s.as_str(),
                "-U",
                "postgres",
                "--auth=trust",
                "--no-sync",
                "-E",
                "UTF8",
            ],
        );
        std::fs::write(
            data.join("pg_hba.conf"),
            "local all all trust\nhostssl all all 127.0.0.1/32 trust\n",
        )
        .expect("write pg_hba.conf");
        let port = free_port();
        let options = format!(
            "-p {port} -k {root} -c listen_addresses=127.0.0.1 -c ssl=on -c ssl_cert_file={cert} \
             -c ssl_key_file={key} -c fsync=off",
            root = root.display(),
            cert = cert.display(),
            key = key.display()
        );
        let log = root.join("postgres.log").to_string_lossy().into_owned();
        as_postgres(
            &bin.join("pg_ctl"),
            &[
                "-D",
                data_s.as_str(),
                "-l",
                log.as_str(),
                "-w",
                "-t",
                "30",
                "-o",
                options.as_str(),
                "start",
            ],
        );
        TlsPostgres {
            base_url: format!("postgres://postgres@127.0.0.1:{port}/postgres"),
            bin,
            data,
            _dir: dir,
        }
    }

    /// The URL a client verifying the server against `ca` (a PEM file) connects with.
    pub fn verify_full_url(&self, ca: &Path) -> String {
        format!(
            "{}?sslmode=verify-full&sslrootcert={}",
            self.base_url,
            ca.display()
        )
    }
}

impl Drop for TlsPostgres {
    fn drop(&mut self) {
        let _ = Command::new("runuser")
            .args(["-u", "postgres", "--"])
            .arg(self.bin.join("pg_ctl"))
            .arg("-D")
            .arg(&self.data)
            .args(["-m", "immediate", "stop"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    }
}

/// Redis listening only on a TLS port (`--port 0` turns the plain one off).
pub struct TlsRedis {
    /// `rediss://127.0.0.1:PORT`.
    pub url: String,
    child: Child,
    _dir: tempfile::TempDir,
}

impl TlsRedis {
    pub fn start(pki: &Pki) -> TlsRedis {
        let dir = tempfile::Builder::new()
            .prefix("floodgate-redis-tls-")
            .tempdir()
            .expect("temporary folder for Redis");
        let port = free_port();
        let child = tls_redis_server(pki, port, dir.path())
            .spawn()
            .unwrap_or_else(|e| {
                panic!("the TLS tests start their own redis-server: install it (apt-get install -y redis-server): {e}")
            });
        let started = Instant::now();
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                started.elapsed() < START_DEADLINE,
                "redis-server with TLS did not listen on {port} (does this build have TLS?)"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        TlsRedis {
            url: format!("rediss://127.0.0.1:{port}"),
            child,
            _dir: dir,
        }
    }
}

impl Drop for TlsRedis {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `redis-server` on `port` over TLS only, with `pki`'s certificate, keeping nothing on disk.
pub(crate) fn tls_redis_server(pki: &Pki, port: u16, dir: &Path) -> Command {
    let mut command = Command::new("redis-server");
    command
        .args(["--port", "0", "--tls-port", &port.to_string()])
        .args(["--bind", "127.0.0.1", "--save", "", "--appendonly", "no"])
        .arg("--tls-cert-file")
        .arg(&pki.cert_file)
        .arg("--tls-key-file")
        .arg(&pki.key_file)
        .arg("--tls-ca-cert-file")
        .arg(&pki.ca_file)
        .args(["--tls-auth-clients", "no"])
        .arg("--dir")
        .arg(dir)
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    command
}

fn set_mode(path: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
        .unwrap_or_else(|e| panic!("chmod {}: {e}", path.display()));
}
