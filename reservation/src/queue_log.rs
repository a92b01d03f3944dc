//! What admission did, for the organizer: the offers the meter made (`queue_offers`), the
//! queue's join count minute by minute (`queue_minutes`), and the per-minute timeline read
//! from them and from the sessions, holds and orders.

use sqlx::Row;

use crate::Error;
use crate::ids::EventId;
use crate::limits;
use crate::store::Store;

/// One minute of an event's timeline (the minute's start, ms since the epoch).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MinuteCounts {
    pub minute_ms: i64,
    /// Places given (both lanes).
    pub joins: i64,
    pub offers: i64,
    /// Sessions opened.
    pub claims: i64,
    /// Offers whose time to claim ran out that minute, never claimed.
    pub lapsed: i64,
    pub holds: i64,
    /// Seats sold.
    pub sales: i64,
}

/// An event's timeline: every minute from the earlier of its opening and its first join to
/// now (database clock), at most `max_minutes` of them, the last one the current minute.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Timeline {
    pub opens_at_ms: i64,
    pub now_ms: i64,
    pub minutes: Vec<MinuteCounts>,
}

const MINUTE_MS: i64 = 60_000;

impl Store {
    /// Records offers made at once: one statement for any number of them. A place recorded
    /// before keeps its first offer (a retried tick changes nothing). The deadline is the
    /// database clock's now plus `offer_ms`, read after the queue made the offer, so it never
    /// falls before the queue's own: an offer shown lapsed can no longer be claimed.
    pub async fn record_offers(
        &self,
        event: &EventId,
        places: &[u64],
        offer_ms: i64,
    ) -> Result<(), Error> {
        if places.is_empty() {
            return Ok(());
        }
        let places = serde_json::to_string(places)?;
        // SQLite reads `on conflict` after a bare `select` as a join: the `where` ends it.
        sqlx::query(self.sql(
            "insert into queue_offers (event_id, place, offered_at, offer_expires_at) \
             select $1, cast(j.value as bigint), NOW, NOW + MSEC($3) from JSON_EACH($2) j \
             where true on conflict (event_id, place) do nothing",
        ))
        .bind(event.as_str())
        .bind(places)
        .bind(offer_ms)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    /// Whether the meter ever offered `place` (a lapsed or claimed offer included): after a
    /// queue loss, the judge of a returning ticket the saved frontiers say was offered.
    pub async fn was_offered(&self, event: &EventId, place: i64) -> Result<bool, Error> {
        Ok(
            sqlx::query(self.sql("select 1 from queue_offers where event_id = $1 and place = $2"))
                .bind(event.as_str())
                .bind(place)
                .fetch_optional(&self.pool)
                .await?
                .is_some(),
        )
    }

    /// Records the queue's cumulative join count in the current minute, keeping the greatest
    /// (instances and retries may report an older count late).
    pub async fn record_joins(&self, event: &EventId, joins_total: i64) -> Result<(), Error> {
        sqlx::query(self.sql(
            "insert into queue_minutes (event_id, minute, joins_total) \
             values ($1, TS(MS(NOW) / 60000 * 60000), $2) \
             on conflict (event_id, minute) do update set \
             joins_total = GREATEST(queue_minutes.joins_total, excluded.joins_total)",
        ))
        .bind(event.as_str())
        .bind(joins_total)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    /// The event's timeline (see [`Timeline`]). Every read is bounded by the window: each
    /// table is read through an index on the event and the time.
    pub async fn timeline(&self, event: &EventId, max_minutes: i64) -> Result<Timeline, Error> {
        let head = sqlx::query(self.sql(
            "select MS(e.opens_at) as opens_at_ms, MS(NOW) as now_ms, \
             (select MS(min(m.minute)) from queue_minutes m where m.event_id = e.event_id) \
                 as first_join_ms \
             from events e where e.event_id = $1",
        ))
        .bind(event.as_str())
        .fetch_optional(&self.pool)
        .await?
        .ok_or(Error::EventNotFound)?;
        let opens_at_ms: i64 = head.try_get("opens_at_ms")?;
        let now_ms: i64 = head.try_get("now_ms")?;
        let first_join_ms: Option<i64> = head.try_get("first_join_ms")?;
        let now_minute = now_ms.div_euclid(MINUTE_MS);
        let first = first_join_ms
            .map_or(opens_at_ms, |j| j.min(opens_at_ms))
            .div_euclid(MINUTE_MS);
        let start = first.max(now_minute - (max_minutes.max(1) - 1));
        let mut minutes: Vec<MinuteCounts> = (start..=now_minute)
            .map(|m| MinuteCounts {
                minute_ms: m * MINUTE_MS,
                ..MinuteCounts::default()
            })
            .collect();
        if minutes.is_empty() {
            return Ok(Timeline {
                opens_at_ms,
                now_ms,
                minutes,
            });
        }
        let start_ms = start * MINUTE_MS;
        // An offer lapses at most `OFFER_S` after it was made: that bounds the offers read for
        // the lapses of the window.
        let offered_from_ms = start_ms - limits::OFFER_S * 1000;
        let rows = sqlx::query(self.sql(
            "select 'joins_before' as kind, cast(0 as bigint) as minute, \
                 coalesce(max(joins_total), 0) as n \
             from queue_minutes where event_id = $1 and minute < TS($2) \
             union all \
             select 'joins', MS(minute) / 60000, joins_total \
             from queue_minutes where event_id = $1 and minute >= TS($2) \
             union all \
             select 'offers', MS(offered_at) / 60000, count(*) \
             from queue_offers where event_id = $1 and offered_at >= TS($2) \
             group by MS(offered_at) / 60000 \
             union all \
             select 'lapsed', MS(o.offer_expires_at) / 60000, count(*) \
             from queue_offers o \
             where o.event_id = $1 and o.offered_at >= TS($3) and o.offer_expires_at >= TS($2) \
               and o.offer_expires_at <= NOW \
               and not exists (select 1 from admission_sessions s \
                               where s.event_id = o.event_id and s.queue_place = o.place) \
             group by MS(o.offer_expires_at) / 60000 \
             union all \
             select 'claims', MS(created_at) / 60000, count(*) \
             from admission_sessions where event_id = $1 and created_at >= TS($2) \
             group by MS(created_at) / 60000 \
             union all \
             select 'holds', MS(created_at) / 60000, count(*) \
             from holds where event_id = $1 and created_at >= TS($2) \
             group by MS(created_at) / 60000 \
             union all \
             select 'sales', x.minute, cast(sum(x.seats) as bigint) \
             from (select MS(created_at) / 60000 as minute, \
                       (select count(*) from JSON_EACH(seats)) as seats \
                   from orders where event_id = $1 and created_at >= TS($2)) x \
             group by x.minute",
        ))
        .bind(event.as_str())
        .bind(start_ms)
        .bind(offered_from_ms)
        .fetch_all(&self.pool)
        .await?;
        let mut joins_before = 0;
        let mut joins: Vec<(i64, i64)> = Vec::new();
        for row in &rows {
            let kind: String = row.try_get("kind")?;
            let minute: i64 = row.try_get("minute")?;
            let n: i64 = row.try_get("n")?;
            let slot = usize::try_from(minute - start)
                .ok()
                .and_then(|i| minutes.get_mut(i));
            match (kind.as_str(), slot) {
                ("joins_before", _) => joins_before = n,
                ("joins", _) => joins.push((minute, n)),
                ("offers", Some(m)) => m.offers += n,
                ("lapsed", Some(m)) => m.lapsed += n,
                ("claims", Some(m)) => m.claims += n,
                ("holds", Some(m)) => m.holds += n,
                ("sales", Some(m)) => m.sales += n,
                // A row of a minute past `now` (written between the two reads) waits for the
                // next call.
                _ => {}
            }
        }
        // The joins of a minute: its count less the greatest one before it.
        joins.sort_unstable();
        let mut seen = joins_before;
        for (minute, total) in joins {
            if let Some(m) = usize::try_from(minute - start)
                .ok()
                .and_then(|i| minutes.get_mut(i))
            {
                m.joins += (total - seen).max(0);
                seen = seen.max(total);
            }
        }
        Ok(Timeline {
            opens_at_ms,
            now_ms,
            minutes,
        })
    }
}
