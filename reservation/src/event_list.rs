//! The organizer's list of events: each with its admission switches and seat counts, in pages
//! ordered by id, so a list of any length is read a bounded page at a time.

use crate::Error;
use crate::ids::{EventId, trusted};
use crate::store::Store;

/// The most events one page lists.
pub const EVENTS_PER_PAGE: i64 = 200;

/// One event as the list shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventListing {
    pub event_id: EventId,
    pub name: String,
    pub opens_at_ms: i64,
    pub paused: bool,
    pub closed: bool,
    pub seats_total: i64,
    pub seats_available: i64,
    /// Held or paying: they may come back.
    pub seats_held: i64,
    pub seats_sold: i64,
}

#[derive(sqlx::FromRow)]
struct ListingRow {
    event_id: String,
    name: String,
    opens_at_ms: i64,
    paused: i64,
    closed: i64,
    seats_total: i64,
    seats_available: i64,
    seats_held: i64,
    seats_sold: i64,
}

impl Store {
    /// Up to `limit` events (at most `EVENTS_PER_PAGE`) whose id sorts after `after`.
    pub async fn list_events(
        &self,
        after: Option<&EventId>,
        limit: i64,
    ) -> Result<Vec<EventListing>, Error> {
        let rows = sqlx::query_as::<_, ListingRow>(self.sql(
            "select e.event_id, e.name, MS(e.opens_at) as opens_at_ms,
                 coalesce((select case when c.paused then 1 else 0 end from admission_controls c
                           where c.event_id = e.event_id), 0) as paused,
                 coalesce((select case when c.closed then 1 else 0 end from admission_controls c
                           where c.event_id = e.event_id), 0) as closed,
                 (select count(*) from seats s where s.event_id = e.event_id) as seats_total,
                 (select count(*) from seats s where s.event_id = e.event_id
                      and s.state = 'available') as seats_available,
                 (select count(*) from seats s where s.event_id = e.event_id
                      and s.state in ('held', 'paying')) as seats_held,
                 (select count(*) from seats s where s.event_id = e.event_id
                      and s.state = 'sold') as seats_sold
             from events e where e.event_id > $1 order by e.event_id limit $2",
        ))
        .bind(after.map_or("", EventId::as_str))
        .bind(limit.clamp(1, EVENTS_PER_PAGE))
        .fetch_all(&self.pool)
        .await?;
        rows.into_iter()
            .map(|row| {
                Ok(EventListing {
                    event_id: trusted(row.event_id)?,
                    name: row.name,
                    opens_at_ms: row.opens_at_ms,
                    paused: row.paused != 0,
                    closed: row.closed != 0,
                    seats_total: row.seats_total,
                    seats_available: row.seats_available,
                    seats_held: row.seats_held,
                    seats_sold: row.seats_sold,
                })
            })
            .collect()
    }
}
