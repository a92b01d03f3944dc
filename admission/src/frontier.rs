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
        if !self.judges(claims) {
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

    /// The general lane's places of this frontier's epoch: the only ones it speaks for.
    fn judges(&self, claims: &QueueClaims) -> bool {
        claims.epoch == self.epoch && claims.seq < crate::entry::PRIORITY_BASE
    }

    /// The backend told a status read that this token's place is offered: that place, and
    /// every place before it in its line (offers follow the line's order), has been offered,
    /// even while this instance's own tick has not come back with it (its meter task waits
    /// for a core, or another instance's meter made the offer). The buyer's claim, sent the
    /// moment it heard, is then told from the crowd's. `seed` is the event's pre-queue seed:
    /// an offer means the queue has opened.
    pub fn offered(&mut self, claims: &QueueClaims, seed: &str) {
        if !self.judges(claims) {
            return;
        }
        if !claims.pre_queue {
            self.cursor = self.cursor.max(claims.seq);
            return;
        }
        let seed = self.seed.get_or_insert_with(|| seed.to_owned());
        let score = crate::fairness::pre_score(seed, &claims.ticket_id);
        self.prequeue_through = Some(self.prequeue_through.map_or(score, |t| t.max(score)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fifo(seq: u64, epoch: &str) -> QueueClaims {
        QueueClaims {
            event: "e".into(),
            ticket_id: format!("t{seq}"),
            seq,
            pre_queue: false,
            epoch: epoch.into(),
            iat: 0,
            exp: 0,
            typ: "queue".into(),
            lane: crate::entry::Lane::General,
        }
    }

    #[test]
    fn an_offer_heard_of_covers_the_places_before_it_and_no_other_epoch() {
        let mut f = Frontier {
            epoch: "e1".into(),
            cursor: 10,
            ..Frontier::default()
        };
        assert!(!f.reached(&fifo(15, "e1")));
        f.offered(&fifo(15, "e1"), "seed");
        assert!(f.reached(&fifo(12, "e1")) && f.reached(&fifo(15, "e1")));
        assert!(!f.reached(&fifo(16, "e1")));
        // An older offer heard late does not move the frontier back.
        f.offered(&fifo(3, "e1"), "seed");
        assert_eq!(f.cursor, 15);
        // A token of another epoch is the backend's to judge.
        f.offered(&fifo(40, "e2"), "seed");
        assert_eq!(f.cursor, 15);
    }
}
