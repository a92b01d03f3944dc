//! Presale and access codes: the organizer generates or uploads them (each with its uses, an
//! optional window and a lane) and lists them with the uses left, a page at a time.

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use rand::Rng;
use serde_json::{Value, json};

use reservation::EventId;
use reservation::codes::{
    self, AccessCode, CODES_PER_PAGE, CODES_PER_REQUEST, NewCodes, USES_PER_CODE,
};

use crate::auth::Organizer;
use crate::clock::rfc3339;
use crate::extract::{JsonBody, PathId, Query};
use crate::problem::Problem;
use crate::requests::{CodesQuery, CodesRequest};
use crate::routes::admin::audit;
use crate::state::AppState;

/// Codes one upload may list (a larger batch is generated, or sent in several requests).
pub(crate) const CODES_PER_UPLOAD: usize = 10_000;
/// The body of an upload: 10,000 codes of 64 characters with their quotes and commas.
pub(crate) const CODES_BODY: usize = 1024 * 1024;
/// A listing page when none is asked for.
const DEFAULT_PAGE: i64 = 100;
/// Generated codes: 16 characters of an alphabet without look-alikes (80 bits), in groups of
/// four so they can be read out over the phone.
const ALPHABET: &[u8] = b"ABCDEFGHJKLMNPQRSTUVWXYZ23456789";

fn out_of_range(field: &'static str, min: i64, max: i64) -> Problem {
    reservation::Error::OutOfRange { field, min, max }.into()
}

fn time_ms(field: &str, value: Option<&String>) -> Result<Option<i64>, Problem> {
    value
        .map(|text| {
            time::OffsetDateTime::parse(text, &time::format_description::well_known::Rfc3339)
                .map(crate::clock::ms)
                .map_err(|_| Problem::bad_request(format!("{field} must be an RFC 3339 time")))
        })
        .transpose()
}

fn generated(n: usize) -> Vec<String> {
    let mut rng = rand::rng();
    (0..n)
        .map(|_| {
            let mut code = String::with_capacity(19);
            for i in 0..16 {
                if i > 0 && i % 4 == 0 {
                    code.push('-');
                }
                code.push(char::from(ALPHABET[rng.random_range(0..ALPHABET.len())]));
            }
            code
        })
        .collect()
}

pub(crate) async fn add(
    State(state): State<AppState>,
    PathId(event): PathId<EventId>,
    who: Organizer,
    JsonBody { value: request, .. }: JsonBody<CodesRequest>,
) -> Result<Response, Problem> {
    let uses = request.uses.unwrap_or(1);
    if !(1..=USES_PER_CODE).contains(&uses) {
        return Err(out_of_range("uses", 1, USES_PER_CODE));
    }
    let starts_at_ms = time_ms("starts_at", request.starts_at.as_ref())?;
    let ends_at_ms = time_ms("ends_at", request.ends_at.as_ref())?;
    if let (Some(start), Some(end)) = (starts_at_ms, ends_at_ms)
        && end <= start
    {
        return Err(Problem::bad_request("ends_at must be after starts_at"));
    }
    let lane = request.lane.unwrap_or_else(|| "general".into());
    if lane != "general" && lane != "priority" {
        return Err(Problem::bad_request("lane is `general` or `priority`"));
    }
    let (list, show) = match (request.generate, request.codes) {
        (Some(n), None) => {
            if !(1..=CODES_PER_REQUEST).contains(&n) {
                return Err(out_of_range("generate", 1, CODES_PER_REQUEST));
            }
            (generated(usize::try_from(n).unwrap_or(0)), true)
        }
        (None, Some(list)) => {
            if list.is_empty() || list.len() > CODES_PER_UPLOAD {
                return Err(Problem::bad_request("give 1-10,000 codes per upload"));
            }
            if !list.iter().all(|c| codes::is_code(c)) {
                return Err(Problem::bad_request(
                    "each code is 4-64 characters of A-Z, a-z, 0-9, `-` and `_`",
                ));
            }
            (list, false)
        }
        _ => return Err(Problem::bad_request("give either `generate` or `codes`")),
    };
    let new = NewCodes {
        codes: list,
        uses,
        starts_at_ms,
        ends_at_ms,
        lane,
    };
    let added = state.store.add_codes(&event, &new).await?;
    let detail = json!({"added": added, "uses": uses, "lane": new.lane, "generated": show});
    audit(&state, &who, "add_codes", Some(event.as_str()), &detail).await;
    let mut body = json!({ "added": added });
    if show {
        body["codes"] = json!(new.codes);
    }
    Ok((StatusCode::CREATED, axum::Json(body)).into_response())
}

fn listed(code: &AccessCode) -> Value {
    let mut item = json!({
        "code": code.code, "uses": code.uses, "uses_left": code.uses_left, "lane": code.lane,
    });
    if let Some(ms) = code.starts_at_ms {
        item["starts_at"] = json!(rfc3339(ms));
    }
    if let Some(ms) = code.ends_at_ms {
        item["ends_at"] = json!(rfc3339(ms));
    }
    item
}

pub(crate) async fn list(
    State(state): State<AppState>,
    PathId(event): PathId<EventId>,
    _: Organizer,
    Query(query): Query<CodesQuery>,
) -> Result<Response, Problem> {
    let limit = query.limit.unwrap_or(DEFAULT_PAGE);
    if !(1..=CODES_PER_PAGE).contains(&limit) {
        return Err(out_of_range("limit", 1, CODES_PER_PAGE));
    }
    if let Some(after) = &query.after
        && after.len() > codes::CODE_MAX_CHARS
    {
        return Err(Problem::bad_request(
            "after is a code (at most 64 characters)",
        ));
    }
    let page = state
        .store
        .list_codes(&event, query.after.as_deref(), limit)
        .await?;
    let next = (page.len() as i64 == limit)
        .then(|| page.last().map(|c| c.code.clone()))
        .flatten();
    let items: Vec<Value> = page.iter().map(listed).collect();
    Ok(axum::Json(json!({ "codes": items, "next_after": next })).into_response())
}

#[cfg(test)]
mod tests {
    use super::generated;

    #[test]
    fn generated_codes_are_codes_and_distinct() {
        let list = generated(1000);
        assert!(list.iter().all(|c| reservation::codes::is_code(c)));
        let distinct: std::collections::HashSet<_> = list.iter().collect();
        assert_eq!(distinct.len(), 1000);
    }
}
