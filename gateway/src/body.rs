//! Reading a request body at the edge: whole, within the route's size limit and a deadline,
//! before the handler runs and before any shed permit is taken. A client trickling its body
//! therefore holds a connection and a little memory, never a share of a route group's budget.

use std::time::Duration;

use axum::body::Body;
use axum::extract::Request;
use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};
use bytes::{Bytes, BytesMut};
use futures::StreamExt;

use crate::problem::Problem;

/// The body limit of routes that take JSON.
pub const MAX_BODY: usize = 64 * 1024;
/// A join's optional body: an access code and an identity token of at most 4 KiB.
pub const JOIN_BODY: usize = 8 * 1024;
/// The organizer's seat list (`POST …/seats`): 10,000 seats of up to 400 bytes each. Read
/// only after the organizer key is checked.
pub const SEAT_LIST_BODY: usize = 4 * 1024 * 1024;

/// Why a body was not read.
#[derive(Debug, thiserror::Error)]
pub enum BodyError {
    #[error("the body is over {limit} bytes")]
    TooLarge { limit: usize },
    #[error("the body did not arrive within {} s", .deadline.as_secs())]
    TooSlow { deadline: Duration },
    #[error("the body could not be read: {0}")]
    Broken(String),
}

impl IntoResponse for BodyError {
    fn into_response(self) -> Response {
        let slow = matches!(self, BodyError::TooSlow { .. });
        let mut response = Problem::from(self).into_response();
        if slow {
            // The rest of the body is never read: the connection cannot carry another request.
            response
                .headers_mut()
                .insert(header::CONNECTION, HeaderValue::from_static("close"));
        }
        response
    }
}

/// Reads the body of `request` (at most `limit` bytes, all of it within `deadline`) and puts
/// it back in memory, so the handler's extractor parses without waiting on the client.
pub async fn buffer(
    request: Request,
    limit: usize,
    deadline: Duration,
) -> Result<Request, BodyError> {
    let declared = request
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > limit as u64) {
        return Err(BodyError::TooLarge { limit });
    }
    let (parts, body) = request.into_parts();
    let bytes = tokio::time::timeout(deadline, collect(body, limit))
        .await
        .map_err(|_| BodyError::TooSlow { deadline })??;
    Ok(Request::from_parts(parts, Body::from(bytes)))
}

async fn collect(body: Body, limit: usize) -> Result<Bytes, BodyError> {
    let mut stream = body.into_data_stream();
    let mut bytes = BytesMut::new();
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(|error| BodyError::Broken(error.to_string()))?;
        if bytes.len() + chunk.len() > limit {
            return Err(BodyError::TooLarge { limit });
        }
        bytes.extend_from_slice(&chunk);
    }
    Ok(bytes.freeze())
}
