//! Presale and access codes (`access_codes`): each with a number of uses, an optional window
//! and a lane. A join takes one use with one conditional update judged by the database clock,
//! so two tabs racing with a one-use code get one place between them; a refused code changes
//! nothing, and the reason is then read, never written.

use crate::Error;
use crate::ids::EventId;
use crate::store::Store;

/// Codes one request may generate or upload.
pub const CODES_PER_REQUEST: i64 = 100_000;
/// Uses one code may have.
pub const USES_PER_CODE: i64 = 1_000_000;
/// A code's length in characters (an uploaded code: `[A-Za-z0-9_-]`).
pub const CODE_MIN_CHARS: usize = 4;
pub const CODE_MAX_CHARS: usize = 64;
/// Codes one listing page shows at most.
pub const CODES_PER_PAGE: i64 = 1_000;

/// A code as the organizer adds it.
#[derive(Debug, Clone)]
pub struct NewCodes {
    pub codes: Vec<String>,
    pub uses: i64,
    pub starts_at_ms: Option<i64>,
    pub ends_at_ms: Option<i64>,
    /// `general` or `priority`.
    pub lane: String,
}

/// A code as listed, with the uses it has left.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct AccessCode {
    pub code: String,
    pub uses: i64,
    pub uses_left: i64,
    pub starts_at_ms: Option<i64>,
    pub ends_at_ms: Option<i64>,
    pub lane: String,
}

/// Why a code admits nobody.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum CodeRefusal {
    #[error("no such code for this event")]
    Invalid,
    #[error("the code has no uses left")]
    UsedUp,
    #[error("the code is not valid at this time")]
    OutsideWindow,
}

/// Is `code` shaped like a code (length and characters)? Checked before any query.
pub fn is_code(code: &str) -> bool {
    (CODE_MIN_CHARS..=CODE_MAX_CHARS).contains(&code.len())
        && code
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

#[derive(sqlx::FromRow)]
struct Spent {
    lane: String,
}

#[derive(sqlx::FromRow)]
struct Judged {
    uses_left: i64,
    in_window: i64,
}

impl Store {
    /// Adds codes; a code the event already has is kept as it is (an upload is idempotent).
    /// Returns how many were new.
    #[tracing::instrument(skip_all, err, fields(event = %event, n = new.codes.len()))]
    pub async fn add_codes(&self, event: &EventId, new: &NewCodes) -> Result<u64, Error> {
        self.get_event(event).await?;
        let mut added = 0;
        // Chunks keep one statement's JSON within what either database parses comfortably.
        for chunk in new.codes.chunks(5_000) {
            let list = serde_json::to_string(chunk)?;
            let done = sqlx::query(self.sql(
                "insert into access_codes (event_id, code, uses, uses_left, starts_at, ends_at, lane) \
                 select $1, value, $2, $2, TS($3), TS($4), $5 from JSON_EACH($6) where true \
                 on conflict (event_id, code) do nothing",
            ))
            .bind(event.as_str())
            .bind(new.uses)
            .bind(new.starts_at_ms)
            .bind(new.ends_at_ms)
            .bind(new.lane.as_str())
            .bind(list)
            .execute(&self.pool)
            .await?;
            added += done.rows_affected();
        }
        Ok(added)
    }

    /// One page of the event's codes in code order, after `after` (exclusive).
    pub async fn list_codes(
        &self,
        event: &EventId,
        after: Option<&str>,
        limit: i64,
    ) -> Result<Vec<AccessCode>, Error> {
        self.get_event(event).await?;
        Ok(sqlx::query_as::<_, AccessCode>(self.sql(
            "select code, cast(uses as bigint) as uses, cast(uses_left as bigint) as uses_left, \
             MS(starts_at) as starts_at_ms, MS(ends_at) as ends_at_ms, lane \
             from access_codes where event_id = $1 and code > $2 order by code limit $3",
        ))
        .bind(event.as_str())
        .bind(after.unwrap_or(""))
        .bind(limit)
        .fetch_all(&self.pool)
        .await?)
    }

    /// Takes one use of `code`: the lane it admits to, or why it admits nobody. The update is
    /// the judge (uses left and the window, by the database clock); the read after a refusal
    /// only names the reason.
    #[tracing::instrument(skip_all, err(level = "debug"), fields(event = %event))]
    pub async fn spend_code(
        &self,
        event: &EventId,
        code: &str,
    ) -> Result<Result<String, CodeRefusal>, Error> {
        if !is_code(code) {
            return Ok(Err(CodeRefusal::Invalid));
        }
        let spent = sqlx::query_as::<_, Spent>(self.sql(
            "update access_codes set uses_left = uses_left - 1 \
             where event_id = $1 and code = $2 and uses_left > 0 \
             and (starts_at is null or starts_at <= NOW) and (ends_at is null or ends_at > NOW) \
             returning lane",
        ))
        .bind(event.as_str())
        .bind(code)
        .fetch_optional(&self.pool)
        .await?;
        if let Some(s) = spent {
            return Ok(Ok(s.lane));
        }
        let judged = sqlx::query_as::<_, Judged>(self.sql(
            "select cast(uses_left as bigint) as uses_left, \
             cast(case when (starts_at is null or starts_at <= NOW) \
                 and (ends_at is null or ends_at > NOW) then 1 else 0 end as bigint) as in_window \
             from access_codes where event_id = $1 and code = $2",
        ))
        .bind(event.as_str())
        .bind(code)
        .fetch_optional(&self.pool)
        .await?;
        Ok(Err(match judged {
            None => CodeRefusal::Invalid,
            Some(j) if j.in_window == 0 => CodeRefusal::OutsideWindow,
            Some(j) if j.uses_left <= 0 => CodeRefusal::UsedUp,
            // The window closed or opened between the two statements: say so.
            Some(_) => CodeRefusal::OutsideWindow,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::is_code;

    #[test]
    fn codes_are_short_plain_text() {
        assert!(is_code("PRESALE-1234"));
        assert!(is_code("abcd"));
        assert!(!is_code("abc"));
        assert!(!is_code(&"a".repeat(65)));
        assert!(!is_code("has space"));
        assert!(!is_code("ünï"));
    }
}
