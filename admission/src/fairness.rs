//! The auditable pre-queue: arrivals before `opens_at` are ordered by HMAC-SHA256(seed, ticket).
//! The seed's SHA-256 is published at creation and the seed revealed at opening, so anyone can
//! recompute the order; each token alone yields its key in it.

use hmac::{Hmac, Mac};
use serde::Serialize;
use sha2::{Digest, Sha256};

/// What `GET /api/events/{event}/fairness` answers.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Fairness {
    pub seed_commitment: String,
    /// Present once the queue has opened.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub seed: Option<String>,
}

/// SHA-256 of the seed, lowercase hex: published before anyone joins.
pub fn seed_commitment(seed: &str) -> String {
    hex::encode(Sha256::digest(seed.as_bytes()))
}

/// The ticket's key in the pre-queue permutation.
pub fn rank_key(seed: &str, ticket: &str) -> [u8; 32] {
    // HMAC accepts keys of any length, so this cannot fail.
    let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(seed.as_bytes())
        .expect("HMAC-SHA256 takes keys of any length");
    mac.update(ticket.as_bytes());
    mac.finalize().into_bytes().into()
}

/// The rank key's top 52 bits as a fraction in [0, 1): exact in an IEEE double, so it orders a
/// Redis sorted set the same way as the full key (a 52-bit tie is beyond practical reach).
pub fn pre_score(seed: &str, ticket: &str) -> f64 {
    let k = rank_key(seed, ticket);
    let mut top = [0u8; 8];
    top.copy_from_slice(&k[..8]);
    (u64::from_be_bytes(top) >> 12) as f64 / (1u64 << 52) as f64
}

/// The pre-queue order the revealed seed implies: anyone can run this to check the offers.
pub fn pre_queue_order<'a>(seed: &str, tickets: impl IntoIterator<Item = &'a str>) -> Vec<&'a str> {
    let mut keyed: Vec<([u8; 32], &str)> = tickets
        .into_iter()
        .map(|t| (rank_key(seed, t), t))
        .collect();
    keyed.sort();
    keyed.into_iter().map(|(_, t)| t).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commitment_is_sha256_hex_of_the_seed() {
        assert_eq!(
            seed_commitment("abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }

    /// The waiting page computes the same score with WebCrypto (`static/queue-snapshot.js`
    /// `preScore`, which gives 0.8735432050876426 for these inputs).
    #[test]
    fn the_page_computes_the_same_score() {
        assert_eq!(pre_score("seed", "t1"), 0.873_543_205_087_642_6);
    }

    #[test]
    fn score_orders_like_the_full_key() {
        let tickets: Vec<String> = (0..500).map(|i| format!("t{i}")).collect();
        let order = pre_queue_order("seed", tickets.iter().map(String::as_str));
        let scores: Vec<f64> = order.iter().map(|t| pre_score("seed", t)).collect();
        assert!(scores.windows(2).all(|w| w[0] <= w[1]));
        assert!(scores.iter().all(|s| (0.0..1.0).contains(s)));
    }
}
