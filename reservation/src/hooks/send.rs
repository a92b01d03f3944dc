//! One delivery attempt over HTTP: the body, its `Floodgate-Signature` (the provider's
//! `t=UNIX,v1=HEX` scheme, signed by the same code that verifies the provider's), a bounded
//! wait, no redirects, and at most a little of the answer read.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::payments::webhook::sign;

use super::delivery::{Claimed, Tried};
use super::record::rfc3339;

/// The signature header on every delivery.
pub const SIGNATURE_HEADER: &str = "Floodgate-Signature";
/// Bytes of an answer read before the connection is dropped: the status is the answer.
const ANSWER_BYTES: usize = 1024;
/// Characters of an error kept for the dashboard.
const ERROR_CHARS: usize = 300;

/// The HTTP client deliveries go out through: never follows a redirect (a receiver cannot
/// bounce a signed body elsewhere), and gives up after `timeout`.
pub(crate) fn client(timeout: Duration) -> Result<reqwest::Client, reqwest::Error> {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(timeout)
        .connect_timeout(timeout)
        .user_agent("Floodgate-Webhooks/1")
        .build()
}

/// The JSON a receiver gets: the same bytes on every try, so its id deduplicates.
pub(crate) fn body(job: &Claimed) -> Vec<u8> {
    let data: Value = serde_json::from_str(&job.data).unwrap_or(Value::Null);
    json!({
        "id": job.fact_id,
        "type": job.kind,
        "event": job.event_id,
        "created_at": rfc3339(job.created_at_ms),
        "data": data,
    })
    .to_string()
    .into_bytes()
}

/// Sends `job` once, signed at `now` (unix seconds).
pub(crate) async fn attempt(client: &reqwest::Client, job: &Claimed, now: i64) -> Tried {
    let body = body(job);
    let signature = sign(job.secret.as_bytes(), now, &body);
    let started = Instant::now();
    let sent = client
        .post(&job.url)
        .header(reqwest::header::CONTENT_TYPE, "application/json")
        .header(SIGNATURE_HEADER, signature)
        .header("Floodgate-Delivery", job.id.to_string())
        .body(body)
        .send()
        .await;
    let (status, error) = match sent {
        Ok(mut answer) => {
            let status = answer.status().as_u16();
            let mut read = 0;
            while read < ANSWER_BYTES {
                match answer.chunk().await {
                    Ok(Some(chunk)) => read += chunk.len(),
                    _ => break,
                }
            }
            let error = (!answer.status().is_success()).then(|| format!("answered {status}"));
            (Some(status), error)
        }
        Err(e) => (None, Some(describe(&e))),
    };
    Tried {
        status,
        error,
        duration_ms: started.elapsed().as_millis() as i64,
    }
}

fn describe(error: &reqwest::Error) -> String {
    let what = if error.is_timeout() {
        "timed out"
    } else if error.is_connect() {
        "could not connect"
    } else {
        "request failed"
    };
    let mut text = format!("{what}: {error}");
    if let Some(cut) = text.char_indices().nth(ERROR_CHARS).map(|(i, _)| i) {
        text.truncate(cut);
    }
    text
}
