//! Receipt keys: what a buyer keeps to read their hold and order for days, long after their
//! admission token has lapsed. A key is 16 random bytes and a tag over them under the
//! deployment's receipt secret, so the edge can tell a key this deployment issued from a
//! made-up one with a hash and no database read. That decides only how the request is
//! treated under load (a buyer who paid is owed an answer, not a 503); which hold the key
//! opens is still the database's to say.

use hmac::{Hmac, Mac};
use sha2::Sha256;

/// Random part and tag, 16 bytes each: 64 hex characters, the length keys always had.
const PART: usize = 16;

#[derive(Clone)]
pub struct ReceiptKeys {
    mac: Hmac<Sha256>,
}

impl std::fmt::Debug for ReceiptKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ReceiptKeys(..)")
    }
}

impl ReceiptKeys {
    /// Keys tagged under `secret`; every instance of a deployment must share it.
    pub fn new(secret: &[u8]) -> Self {
        Self {
            // HMAC takes a key of any length.
            mac: Hmac::new_from_slice(secret).unwrap_or_else(|_| unreachable!()),
        }
    }

    /// A secret of this process alone, until the deployment's is set.
    pub(crate) fn random() -> Self {
        Self::new(&rand::random::<[u8; 32]>())
    }

    fn mac_of(&self, random: &[u8]) -> Hmac<Sha256> {
        let mut mac = self.mac.clone();
        mac.update(random);
        mac
    }

    /// A new key.
    pub(crate) fn issue(&self) -> String {
        let random: [u8; PART] = rand::random();
        let mut key = [0u8; PART * 2];
        key[..PART].copy_from_slice(&random);
        key[PART..].copy_from_slice(&self.mac_of(&random).finalize().into_bytes()[..PART]);
        hex::encode(key)
    }

    /// Whether `key` was issued under this secret (compared in constant time).
    pub fn is_issued(&self, key: &str) -> bool {
        let mut bytes = [0u8; PART * 2];
        if hex::decode_to_slice(key, &mut bytes).is_err() {
            return false;
        }
        let (random, tag) = bytes.split_at(PART);
        self.mac_of(random).verify_truncated_left(tag).is_ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn issued_keys_check_and_others_do_not() {
        let keys = ReceiptKeys::new(b"a deployment's receipt secret...");
        let key = keys.issue();
        assert_eq!(key.len(), 64);
        assert!(keys.is_issued(&key));
        assert_ne!(keys.issue(), key, "each key is new");
        // Another deployment's key, a key with one digit changed, and junk are not.
        assert!(!ReceiptKeys::new(b"another secret").is_issued(&key));
        let mut changed = key.clone().into_bytes();
        changed[0] = if changed[0] == b'0' { b'1' } else { b'0' };
        assert!(!keys.is_issued(std::str::from_utf8(&changed).unwrap()));
        for junk in ["", "zz", &"0".repeat(64), &"a".repeat(63), &"é".repeat(32)] {
            assert!(!keys.is_issued(junk), "{junk:?}");
        }
    }
}
