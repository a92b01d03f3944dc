//! The simulator's ledger: every money movement by attempt id, for invariant checkers.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// What happened to the money of one attempt (the authorization's idempotency key).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AttemptRecord {
    /// Every intent created under this attempt id; more than one means a double charge.
    pub payment_ids: Vec<String>,
    pub amount_cents: i64,
    pub authorizations: u32,
    pub declines: u32,
    pub captures: u32,
    pub voids: u32,
    pub refunds: u32,
}

/// Request-level counts, to see that the chaos knobs really fired.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counters {
    pub requests: u64,
    pub idempotent_replays: u64,
    pub idempotency_conflicts: u64,
    pub server_errors: u64,
    pub lost_answers: u64,
    pub webhooks_sent: u64,
    pub webhooks_failed: u64,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Ledger {
    pub attempts: BTreeMap<String, AttemptRecord>,
    pub counters: Counters,
}

impl Ledger {
    pub(crate) fn attempt(&mut self, attempt_id: &str) -> &mut AttemptRecord {
        self.attempts.entry(attempt_id.to_owned()).or_default()
    }

    /// Attempts whose money moved more than once: two intents, two captures or two refunds.
    pub fn charged_twice(&self) -> Vec<&str> {
        self.attempts
            .iter()
            .filter(|(_, r)| {
                r.payment_ids.len() > 1
                    || r.authorizations > 1
                    || r.captures > 1
                    || r.refunds > 1
                    || r.captures + r.voids > 1
            })
            .map(|(k, _)| k.as_str())
            .collect()
    }

    /// Authorizations still holding the buyer's money: neither captured nor voided.
    pub fn unsettled(&self) -> Vec<&str> {
        self.attempts
            .iter()
            .filter(|(_, r)| r.authorizations > 0 && r.captures == 0 && r.voids == 0)
            .map(|(k, _)| k.as_str())
            .collect()
    }

    pub fn total_authorizations(&self) -> u64 {
        self.attempts
            .values()
            .map(|r| u64::from(r.authorizations))
            .sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_capture_or_intent_is_a_double_charge() {
        let mut ledger = Ledger::default();
        let a = ledger.attempt("a");
        a.payment_ids.push("pi_1".into());
        a.authorizations = 1;
        assert_eq!(ledger.unsettled(), vec!["a"]);
        assert!(ledger.charged_twice().is_empty());
        ledger.attempt("a").captures = 1;
        assert!(ledger.unsettled().is_empty());
        ledger.attempt("a").payment_ids.push("pi_2".into());
        assert_eq!(ledger.charged_twice(), vec!["a"]);
    }
}
