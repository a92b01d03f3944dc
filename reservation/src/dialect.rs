//! The only place PostgreSQL and SQLite differ: a few uppercase tokens in otherwise shared
//! SQL text, rendered once per statement and cached for the life of the process.

use std::collections::HashMap;
use std::sync::{OnceLock, RwLock};

/// Which database the store talks to, chosen once from the URL.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Dialect {
    Postgres,
    Sqlite,
}

/// Token → (PostgreSQL, SQLite). Times are timestamptz on PostgreSQL and integer ms on SQLite;
/// `MS`/`TS`/`MSEC` convert at the edges so Rust always sees i64 milliseconds.
const TOKENS: &[(&str, &str, &str)] = &[
    // The database clock, read at the moment of evaluation (never the transaction start).
    (
        "NOW",
        "clock_timestamp()",
        "(cast(unixepoch('subsec') * 1000 as integer))",
    ),
    ("MSEC(", "fg_msec(", "("),
    ("MS(", "fg_ms(", "("),
    ("TS(", "fg_ts(", "("),
    ("JSON_EACH(", "fg_each(", "json_each("),
    // `col IN_JSON($n))` — membership in a JSON array of ids. PostgreSQL gets `= any(array)`
    // so the planner probes the primary key instead of scanning the event's seats.
    (
        "IN_JSON(",
        "= any(fg_arr(",
        "in (select value from json_each(",
    ),
    ("GREATEST(", "greatest(", "max("),
    ("LEAST(", "least(", "min("),
    // SQLite writers are serialized by BEGIN IMMEDIATE, so row locks have no equivalent there.
    ("SKIP_LOCKED", "for update skip locked", ""),
    ("FOR_UPDATE", "for update", ""),
    // A changed seat's availability stamp, in an update of `seats` after `stamp_events`
    // (see `availability`).
    (
        "SEAT_STAMP",
        "pg_current_xact_id()::text::bigint",
        "(select e.availability_version from events e where e.event_id = seats.event_id)",
    ),
];

impl Dialect {
    /// How a writing transaction starts. SQLite takes the write lock at the start (`immediate`)
    /// so two writers queue instead of failing at their first write; PostgreSQL locks rows.
    pub fn begin_write(self) -> &'static str {
        match self {
            Dialect::Postgres => "begin",
            Dialect::Sqlite => "begin immediate",
        }
    }

    /// How a reading transaction that needs one consistent snapshot starts (a checker reading
    /// several tables while the system is busy). A deferred SQLite transaction reads one
    /// snapshot already; PostgreSQL's default takes a new one per statement.
    pub fn begin_snapshot(self) -> &'static str {
        match self {
            Dialect::Postgres => "begin isolation level repeatable read",
            Dialect::Sqlite => "begin",
        }
    }

    /// A statement written with the tokens above, in this dialect (for tools and tests that
    /// read the rows directly; the store renders its own statements the same way).
    pub fn sql(self, text: &'static str) -> &'static str {
        sql(self, text)
    }
}

fn render(dialect: Dialect, text: &str) -> String {
    let mut out = text.to_owned();
    for (token, pg, lite) in TOKENS {
        let with = match dialect {
            Dialect::Postgres => pg,
            Dialect::Sqlite => lite,
        };
        out = out.replace(token, with);
    }
    out
}

type Cache = RwLock<HashMap<(Dialect, usize), &'static str>>;

/// The statement for this dialect. Statements are `'static` literals, so the cache is bounded
/// by the program text; rendered strings are leaked once so sqlx can cache the prepared form.
pub(crate) fn sql(dialect: Dialect, text: &'static str) -> &'static str {
    static CACHE: OnceLock<Cache> = OnceLock::new();
    let cache = CACHE.get_or_init(Default::default);
    let key = (dialect, text.as_ptr() as usize);
    if let Some(s) = cache.read().ok().and_then(|c| c.get(&key).copied()) {
        return s;
    }
    let rendered: &'static str = Box::leak(render(dialect, text).into_boxed_str());
    if let Ok(mut c) = cache.write() {
        c.entry(key).or_insert(rendered)
    } else {
        rendered
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_render_per_dialect() {
        let q = "select MS(expires_at) from holds where expires_at > NOW + MSEC($1) FOR_UPDATE";
        assert_eq!(
            render(Dialect::Postgres, q),
            "select fg_ms(expires_at) from holds where expires_at > clock_timestamp() + fg_msec($1) for update"
        );
        assert_eq!(
            render(Dialect::Sqlite, q),
            "select (expires_at) from holds where expires_at > (cast(unixepoch('subsec') * 1000 as integer)) + ($1) "
        );
        assert_eq!(
            render(Dialect::Sqlite, "x IN_JSON($2))"),
            "x in (select value from json_each($2))"
        );
        assert_eq!(
            render(Dialect::Postgres, "x IN_JSON($2))"),
            "x = any(fg_arr($2))"
        );
    }
}
