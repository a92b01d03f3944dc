//! `FLOODGATE_TLS_CA_FILE`: one private CA trusted, beside the platform's roots, by every
//! outbound hop (payment provider, PostgreSQL, Redis), so a deployment behind its own CA sets
//! it once rather than per connection.

use std::path::{Path, PathBuf};

/// The extra CA, read once at start.
#[derive(Clone)]
pub struct ExtraRoots {
    pub path: PathBuf,
    pub pem: Vec<u8>,
}

impl ExtraRoots {
    pub fn load(path: &Path) -> anyhow::Result<Self> {
        let pem = std::fs::read(path)
            .map_err(|e| anyhow::anyhow!("FLOODGATE_TLS_CA_FILE {}: {e}", path.display()))?;
        Ok(Self {
            path: path.to_owned(),
            pem,
        })
    }
}

/// A PostgreSQL URL that trusts `ca` too. A URL naming its own `sslrootcert` keeps it: the
/// operator chose that CA for that database.
pub fn database_url(url: &str, ca: Option<&Path>) -> String {
    let Some(ca) = ca else {
        return url.to_owned();
    };
    let postgres = url.starts_with("postgres://") || url.starts_with("postgresql://");
    if !postgres || url.contains("sslrootcert=") {
        return url.to_owned();
    }
    let glue = if url.contains('?') { '&' } else { '?' };
    format!("{url}{glue}sslrootcert={}", encode(&ca.to_string_lossy()))
}

/// Percent-encodes a path for a URL query value.
fn encode(value: &str) -> String {
    value
        .bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' | b'/' => {
                char::from(b).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn postgres_urls_gain_the_ca_unless_they_name_one() {
        let ca = Some(Path::new("/etc/fg/ca file.pem"));
        assert_eq!(
            database_url("postgres://u@db/fg", ca),
            "postgres://u@db/fg?sslrootcert=/etc/fg/ca%20file.pem"
        );
        assert_eq!(
            database_url("postgresql://u@db/fg?sslmode=verify-full", ca),
            "postgresql://u@db/fg?sslmode=verify-full&sslrootcert=/etc/fg/ca%20file.pem"
        );
        let own = "postgres://db/fg?sslrootcert=/own.pem";
        assert_eq!(database_url(own, ca), own);
        assert_eq!(database_url("sqlite:fg.db", ca), "sqlite:fg.db");
        assert_eq!(database_url("postgres://db/fg", None), "postgres://db/fg");
    }
}
