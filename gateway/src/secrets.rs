//! Secrets the gateway needs: from the configuration when given, otherwise generated once and
//! kept in the database, so a restart (or a second instance) logs no one out.

use rand::RngCore;
use reservation::Store;
use sha2::{Digest, Sha256};

use admission::KeyRing;

use crate::config::Config;

pub struct Secrets {
    pub keys: KeyRing,
    pub organizer_key_hashes: Vec<[u8; 32]>,
    pub webhook_secret: String,
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

    Ok(Secrets {
        keys,
        organizer_key_hashes,
        webhook_secret,
        generated_organizer_key,
    })
}
