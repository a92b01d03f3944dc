//! How far offers have gone, as this instance learned it from the queue backend's last tick:
//! known the moment the backend answers, before the checkpoint is written and the snapshot is
//! published, so the edge can tell an offered place's claim from the crowd's even while the
//! database holds the tick up.

use crate::token::QueueClaims;

#[derive(Clone, Debug, Default)]
pub(crate) struct Frontier {
    pub epoch: String,
    /// Highest post-opening join sequence offered.
    pub cursor: u64,
    /// The pre-queue score of the last pre-queue place offered.
    pub prequeue_through: Option<f64>,
    /// The pre-queue draw's seed, once the queue has opened.
    pub seed: Option<String>,
}

impl Frontier {
    /// Whether this token's place has been offered: a FIFO place the cursor passed, or a
    /// pre-queue place whose score the pre-queue frontier reached. A place of another queue
    /// epoch or of a priority lane is not judged here (`false`): only the backend knows it.
    pub fn reached(&self, claims: &QueueClaims) -> bool {
        if claims.epoch != self.epoch || claims.seq >= crate::entry::PRIORITY_BASE {
            return false;
        }
        if !claims.pre_queue {
            return claims.seq <= self.cursor;
        }
        match (&self.seed, self.prequeue_through) {
            (Some(seed), Some(through)) => {
                crate::fairness::pre_score(seed, &claims.ticket_id) <= through
            }
            _ => false,
        }
    }
}
