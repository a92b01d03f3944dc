//! Secrets the gateway needs: from the configuration when given, otherwise generated once and
//! kept in the database, so a restart (or a second instance) logs no one out.

use rand::RngCore;
use reservation::Store;
use sha2::{Digest, Sha256};

use admission::KeyRing;

use crate::config::Config;

/// The shortest token or webhook secret accepted: an HMAC-SHA256 key shorter than its 32-byte
/// output is easier to guess than the signature is to forge, and one guessed secret forges
/// every queue place, admission and payment notification.
pub const MIN_SECRET_BYTES: usize = 32;

#[derive(Debug, thiserror::Error)]
pub enum SecretError {
    #[error(
        "{setting} is {len} bytes; a signing secret needs at least {MIN_SECRET_BYTES} \
         (for example 32 random bytes as 64 hex digits: `openssl rand -hex 32`)"
    )]
    TooShort { setting: String, len: usize },
}

/// Refuses configured signing secrets too short to be safe, before anything starts.
/// Generated ones are long enough by construction.
pub fn refuse_short(config: &Config) -> Result<(), SecretError> {
    let check = |setting: String, secret: &str| {
        if secret.len() < MIN_SECRET_BYTES {
            return Err(SecretError::TooShort {
                setting,
                len: secret.len(),
            });
        }
        Ok(())
    };
    if let Some(secret) = &config.token_secret {
        check("FLOODGATE_TOKEN_SECRET".into(), secret.expose())?;
    }
    if let Some(spec) = &config.token_secrets {
        // `kid:secret,…`; a malformed list is the key ring's to refuse.
        for entry in spec.expose().split(',') {
            if let Some((kid, secret)) = entry.trim().split_once(':') {
                check(format!("FLOODGATE_TOKEN_SECRETS key {kid:?}"), secret)?;
            }
        }
    }
    if let Some(secret) = &config.webhook_secret {
        check("FLOODGATE_WEBHOOK_SECRET".into(), secret.expose())?;
    }
    Ok(())
}

pub struct Secrets {
    pub keys: KeyRing,
    pub organizer_key_hashes: Vec<[u8; 32]>,
    pub webhook_secret: String,
    /// Tags receipt keys (`reservation::ReceiptKeys`): generated once and kept in the database,
    /// so every instance and every restart tells issued keys alike.
    pub receipt_secret: String,
    /// The organizer key this start generated, to be shown once on the terminal.
    pub generated_organizer_key: Option<String>,
}

fn random_hex(bytes: usize) -> String {
    let mut buf = vec![0u8; bytes];
    rand::rng().fill_bytes(&mut buf);
    hex::encode(buf)
}

pub fn hash_key(key: &str) -> [u8; 32] {
    Sha256::digest(key.as_bytes()).into()
}

pub async fn load(config: &Config, store: &Store) -> anyhow::Result<Secrets> {
    let keys = if let Some(spec) = &config.token_secrets {
        KeyRing::parse(spec.expose())?
    } else if let Some(secret) = &config.token_secret {
        KeyRing::new([("k1", secret.expose().as_bytes())])?
    } else {
        let secret = store
            .setting_or_insert("token_secret", &random_hex(32))
            .await?;
        KeyRing::new([("k0", secret.as_bytes())])?
    };

    let (organizer_key_hashes, generated_organizer_key) = match &config.organizer_key {
        // Several keys may be configured, comma-separated.
        Some(keys) => (
            keys.expose()
                .split(',')
                .map(str::trim)
                .filter(|k| !k.is_empty())
                .map(hash_key)
                .collect(),
            None,
        ),
        None => {
            // Only the hash is kept; the key itself exists on the terminal of the start that made it.
            let candidate = random_hex(24);
            let candidate_hash = hex::encode(hash_key(&candidate));
            let stored = store
                .setting_or_insert("organizer_key_sha256", &candidate_hash)
                .await?;
            let mut hash = [0u8; 32];
            hex::decode_to_slice(&stored, &mut hash)?;
            (vec![hash], (stored == candidate_hash).then_some(candidate))
        }
    };

    let webhook_secret = match &config.webhook_secret {
        Some(secret) => secret.expose().to_owned(),
        None => {
            store
                .setting_or_insert("webhook_secret", &format!("whsec_{}", random_hex(24)))
                .await?
        }
    };

    let receipt_secret = store
        .setting_or_insert("receipt_secret", &random_hex(32))
        .await?;

    Ok(Secrets {
        keys,
        organizer_key_hashes,
        webhook_secret,
        receipt_secret,
        generated_organizer_key,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Secret;

    fn config() -> Config {
        Config::embedded("127.0.0.1:0".parse().unwrap(), "sqlite:x.db")
    }

    #[test]
    fn secrets_of_32_bytes_and_more_are_accepted() {
        let mut config = config();
        assert!(
            refuse_short(&config).is_ok(),
            "generated secrets need nothing"
        );
        config.token_secret = Some(Secret::new("t".repeat(32)));
        config.webhook_secret = Some(Secret::new(format!("whsec_{}", "w".repeat(26))));
        config.token_secrets = Some(Secret::new(format!(
            "k2:{},k1:{}",
            "a".repeat(32),
            "b".repeat(40)
        )));
        assert!(refuse_short(&config).is_ok());
    }

    #[test]
    fn a_short_secret_is_named_and_refused() {
        let mut config = config();
        config.token_secret = Some(Secret::new("t".repeat(31)));
        let error = refuse_short(&config).unwrap_err().to_string();
        assert!(
            error.contains("FLOODGATE_TOKEN_SECRET is 31 bytes"),
            "{error}"
        );

        let mut config = self::config();
        config.webhook_secret = Some(Secret::new("whsec_short"));
        let error = refuse_short(&config).unwrap_err().to_string();
        assert!(error.contains("FLOODGATE_WEBHOOK_SECRET"), "{error}");

        let mut config = self::config();
        config.token_secrets = Some(Secret::new(format!("k2:{},k1:old", "a".repeat(32))));
        let error = refuse_short(&config).unwrap_err().to_string();
        assert!(error.contains(r#"key "k1""#), "{error}");
        assert!(
            !error.contains("old"),
            "the secret itself is never shown: {error}"
        );
    }
}
