//! An event's records for the organizer's CSV exports, read a page at a time in key order.
//! Each page is one short statement: an export of any size holds no connection and no
//! snapshot while the download waits for a slow client, and the statement timeout stays the
//! pool's. Ids are time-ordered (uuid v7), so key order is the order things happened in.

use sqlx::Row;
use sqlx::any::AnyRow;

use crate::Error;
use crate::ids::EventId;
use crate::store::Store;

/// The most rows one page reads.
pub const EXPORT_PAGE: i64 = 500;

/// What can be exported of an event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Export {
    Orders,
    Sales,
    Holds,
    Admissions,
    Audit,
}

/// How a column is read.
#[derive(Clone, Copy)]
enum Col {
    Text,
    Int,
    /// Milliseconds since the epoch.
    Time,
    /// A JSON array of seat ids, shown space-separated.
    Seats,
}

/// One value of a row, as the database had it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Cell {
    Text(Option<String>),
    Int(Option<i64>),
    /// Milliseconds since the epoch.
    Time(Option<i64>),
}

/// One row: its page key (what the next page starts after) and its cells.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExportRow {
    pub key: String,
    pub cells: Vec<Cell>,
}

struct Shape {
    header: &'static [&'static str],
    cols: &'static [Col],
    /// `$1` the event, `$2` the key to start after, `$3` the page size; the first column is
    /// the page key, the rest are `cols`.
    sql: &'static str,
    key: Key,
}

/// What a page starts after.
#[derive(Clone, Copy)]
enum Key {
    /// A text id.
    Text,
    /// The audit log's integer id.
    Int,
    /// A queue place and a session id (`"PLACE SESSION"`, the session empty for an offer
    /// never claimed): `$2` the place, `$4` the session.
    Place,
}

/// The admission log's page. Priority places are numbered from 2^50
/// (`admission::PRIORITY_BASE`); the log shows a place within its lane.
const ADMISSIONS: &str =
    "select cast(x.place as text) || ' ' || x.sid, x.ticket_id, x.shown_place, x.lane,
         x.offered_at, x.offer_expires_at, x.claimed_at, x.lapsed, x.session_id,
         x.session_expires_at, x.ended_at, x.end_reason
     from (
         select * from (
             select 0 as place, s.session_id as sid, s.ticket_id,
                 cast(null as bigint) as shown_place, cast(null as text) as lane,
                 cast(null as bigint) as offered_at, cast(null as bigint) as offer_expires_at,
                 MS(s.created_at) as claimed_at, 'false' as lapsed, s.session_id,
                 MS(s.expires_at) as session_expires_at, MS(s.ended_at) as ended_at,
                 s.end_reason
             from admission_sessions s
             where s.event_id = $1 and s.queue_place is null and $2 = 0 and s.session_id > $4
             order by s.session_id limit $3) a
         union all
         select * from (
             select coalesce(o.place, s.queue_place) as place,
                 coalesce(s.session_id, '') as sid, s.ticket_id,
                 case when coalesce(o.place, s.queue_place) >= 1125899906842624
                     then coalesce(o.place, s.queue_place) - 1125899906842624
                     else coalesce(o.place, s.queue_place) end as shown_place,
                 case when coalesce(o.place, s.queue_place) >= 1125899906842624
                     then 'priority' else 'general' end as lane,
                 MS(o.offered_at) as offered_at, MS(o.offer_expires_at) as offer_expires_at,
                 MS(s.created_at) as claimed_at,
                 case when s.session_id is null and o.offer_expires_at <= NOW
                     then 'true' else 'false' end as lapsed,
                 s.session_id, MS(s.expires_at) as session_expires_at,
                 MS(s.ended_at) as ended_at, s.end_reason
             from (select place, offered_at, offer_expires_at from queue_offers
                   where event_id = $1 and place >= $2 order by place limit $3 + 1) o
             full join (select session_id, ticket_id, queue_place, created_at, expires_at,
                           ended_at, end_reason
                        from admission_sessions where event_id = $1 and queue_place >= $2
                        order by queue_place, session_id limit $3 + 1) s
                 on s.queue_place = o.place
             where coalesce(o.place, s.queue_place) > $2 or coalesce(s.session_id, '') > $4
             order by 1, 2 limit $3) b
     ) x
     order by x.place, x.sid limit $3";

use Col::{Int, Seats, Text, Time};

impl Export {
    pub const ALL: [Export; 5] = [
        Export::Orders,
        Export::Sales,
        Export::Holds,
        Export::Admissions,
        Export::Audit,
    ];

    /// The file's name without `.csv`.
    pub fn name(self) -> &'static str {
        match self {
            Export::Orders => "orders",
            Export::Sales => "sales",
            Export::Holds => "holds",
            Export::Admissions => "admissions",
            Export::Audit => "audit",
        }
    }

    pub fn header(self) -> &'static [&'static str] {
        self.shape().header
    }

    fn shape(self) -> Shape {
        match self {
            Export::Orders => Shape {
                header: &[
                    "order",
                    "created_at",
                    "seats",
                    "seat_count",
                    "amount_cents",
                    "currency",
                    "status",
                    "payment_status",
                    "hold",
                ],
                cols: &[Text, Time, Seats, Int, Int, Text, Text, Text, Text],
                sql: "select o.order_id, o.order_id, MS(o.created_at), o.seats,
                          cast((select count(*) from JSON_EACH(o.seats)) as bigint),
                          o.total_cents, e.currency, o.status, o.payment_status, o.hold_id
                      from orders o join events e on e.event_id = o.event_id
                      where o.event_id = $1 and o.order_id > $2 order by o.order_id limit $3",
                key: Key::Text,
            },
            Export::Sales => Shape {
                header: &[
                    "seat",
                    "section",
                    "row",
                    "number",
                    "price_cents",
                    "order",
                    "sold_at",
                ],
                cols: &[Text, Text, Text, Int, Int, Text, Time],
                sql: "select s.seat_id, s.seat_id, st.section, st.row_label,
                          cast(st.number as bigint), st.price_cents, s.order_id, MS(o.created_at)
                      from sales s
                      join seats st on st.event_id = s.event_id and st.seat_id = s.seat_id
                      join orders o on o.order_id = s.order_id
                      where s.event_id = $1 and s.seat_id > $2 order by s.seat_id limit $3",
                key: Key::Text,
            },
            Export::Holds => Shape {
                header: &[
                    "hold",
                    "state",
                    "seats",
                    "total_cents",
                    "created_at",
                    "expires_at",
                    "ended_at",
                    "order",
                    "last_payment_error",
                ],
                cols: &[Text, Text, Seats, Int, Time, Time, Time, Text, Text],
                sql: "select h.hold_id, h.hold_id, h.state, h.seats, h.total_cents,
                          MS(h.created_at), MS(h.expires_at), MS(h.ended_at), h.order_id,
                          h.last_payment_error
                      from holds h
                      where h.event_id = $1 and h.hold_id > $2 order by h.hold_id limit $3",
                key: Key::Text,
            },
            // Every offer the meter recorded, with its session once claimed, and the sessions
            // that have no recorded offer (claimed before offers were recorded, or admitted
            // from the database alone while the queue backend was down: no place). One page
            // reads at most a page of each side from the key on, both in place order, and
            // joins them; the sessions without a place come first.
            Export::Admissions => Shape {
                header: &[
                    "ticket",
                    "place",
                    "lane",
                    "offered_at",
                    "offer_expires_at",
                    "claimed_at",
                    "lapsed",
                    "session",
                    "session_expires_at",
                    "ended_at",
                    "end_reason",
                ],
                cols: &[
                    Text, Int, Text, Time, Time, Time, Text, Text, Time, Time, Text,
                ],
                sql: ADMISSIONS,
                key: Key::Place,
            },
            Export::Audit => Shape {
                header: &["at", "actor", "key_id", "action", "detail"],
                cols: &[Time, Text, Text, Text, Text],
                sql: "select cast(a.id as text), MS(a.at), a.actor, a.key_id, a.action, a.detail
                      from audit_log a
                      where a.event_id = $1 and a.id > $2 order by a.id limit $3",
                key: Key::Int,
            },
        }
    }
}

impl std::str::FromStr for Export {
    type Err = ();
    fn from_str(s: &str) -> Result<Self, ()> {
        Export::ALL.into_iter().find(|e| e.name() == s).ok_or(())
    }
}

fn read(row: &AnyRow, cols: &[Col]) -> Result<ExportRow, Error> {
    let key: String = row.try_get(0)?;
    let mut cells = Vec::with_capacity(cols.len());
    for (i, col) in cols.iter().enumerate() {
        let at = i + 1;
        cells.push(match col {
            Col::Text => Cell::Text(row.try_get(at)?),
            Col::Int => Cell::Int(row.try_get(at)?),
            Col::Time => Cell::Time(row.try_get(at)?),
            Col::Seats => {
                let json: Option<String> = row.try_get(at)?;
                let seats: Vec<String> = match json {
                    Some(text) => serde_json::from_str(&text)?,
                    None => Vec::new(),
                };
                Cell::Text(Some(seats.join(" ")))
            }
        });
    }
    Ok(ExportRow { key, cells })
}

impl Store {
    /// Up to `EXPORT_PAGE` rows of `export` for `event` whose key sorts after `after` (`None`:
    /// from the start). An empty page is the end.
    pub async fn export_page(
        &self,
        export: Export,
        event: &EventId,
        after: Option<&str>,
    ) -> Result<Vec<ExportRow>, Error> {
        let shape = export.shape();
        let query = sqlx::query(self.sql(shape.sql)).bind(event.as_str());
        let rows = match shape.key {
            Key::Int => {
                let after = after.and_then(|k| k.parse::<i64>().ok()).unwrap_or(0);
                query.bind(after).bind(EXPORT_PAGE)
            }
            Key::Text => query.bind(after.unwrap_or("").to_owned()).bind(EXPORT_PAGE),
            Key::Place => {
                let (place, session) = after
                    .and_then(|k| k.split_once(' '))
                    .and_then(|(p, s)| Some((p.parse::<i64>().ok()?, s.to_owned())))
                    .unwrap_or((0, String::new()));
                query.bind(place).bind(EXPORT_PAGE).bind(session)
            }
        }
        .fetch_all(&self.pool)
        .await?;
        rows.iter().map(|row| read(row, shape.cols)).collect()
    }
}
