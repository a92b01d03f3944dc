//! The team's organizer keys as this instance knows them: every key's hash, read from the
//! database at most every `FRESH_FOR`, so a key revoked through any instance opens nothing
//! here a moment later (API.md: within one second). One read serves every request until then,
//! so a flood of wrong keys costs the database at most one query per `FRESH_FOR`.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use reservation::Store;
use reservation::organizer_keys::Role;
use tokio::sync::Mutex;
use tokio::time::Instant;

/// How long a read of the keys is believed. Half the promised second, so a revocation is
/// obeyed in time even by a request that starts just before the read expires.
pub const FRESH_FOR: Duration = Duration::from_millis(500);

/// A team key's holder, as the audit log names them.
#[derive(Clone, Debug)]
pub struct Member {
    pub key_id: String,
    pub name: String,
    pub role: Role,
}

type ByHash = HashMap<[u8; 32], Member>;

#[derive(Default)]
pub struct KeyBook {
    /// The last read and when it was made. Held across a read, so concurrent requests wait
    /// for one read rather than each making their own.
    read: Mutex<Option<(Instant, Arc<ByHash>)>>,
}

impl KeyBook {
    /// The member holding the key with SHA-256 `hash`, if any. Looked up by the hash of a
    /// key: the timing of a map look-up tells nothing about any key's text.
    pub async fn identify(
        &self,
        store: &Store,
        hash: &[u8; 32],
    ) -> Result<Option<Member>, reservation::Error> {
        let keys = {
            let mut read = self.read.lock().await;
            match &*read {
                Some((at, keys)) if at.elapsed() < FRESH_FOR => keys.clone(),
                _ => {
                    let keys = Arc::new(load(store).await?);
                    *read = Some((Instant::now(), keys.clone()));
                    keys
                }
            }
        };
        Ok(keys.get(hash).cloned())
    }

    /// After this instance added or revoked a key: the next request reads them again.
    pub async fn forget(&self) {
        *self.read.lock().await = None;
    }
}

async fn load(store: &Store) -> Result<ByHash, reservation::Error> {
    let mut keys = HashMap::new();
    for (hex_hash, key) in store.organizer_key_hashes().await? {
        let mut hash = [0u8; 32];
        // The store writes only 64 hex digits here; a row that is not is no key.
        if hex::decode_to_slice(&hex_hash, &mut hash).is_ok() {
            keys.insert(
                hash,
                Member {
                    key_id: key.key_id.as_str().to_owned(),
                    name: key.name,
                    role: key.role,
                },
            );
        }
    }
    Ok(keys)
}
