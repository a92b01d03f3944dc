//! The headers a browser needs on every answer (pages, API answers, errors, 404s): scripts
//! and everything else from this origin only, no MIME sniffing, no referrer (a page's URL
//! names the event and, after a 3-D Secure return, the hold), and framing only by the sites the
//! organizer names in `FLOODGATE_FRAME_ANCESTORS` (none by default), so the waiting room
//! cannot be framed by a look-alike site that clicks for the buyer. One event's page
//! (`/events/{event}`) also admits the sites that event's organizer named for embedding, and
//! the origin of its logo as an image source (`look::Framing`, set by the page's handler). Receipt keys travel in the
//! `Floodgate-Receipt` header only: a query carrying one is refused.

use axum::Router;
use axum::extract::Request;
use axum::http::HeaderValue;
use axum::http::header::{
    CONTENT_SECURITY_POLICY, InvalidHeaderValue, REFERRER_POLICY, X_CONTENT_TYPE_OPTIONS,
};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use std::sync::Arc;

use reservation::payments::simulator::challenge_style_source;

use crate::look::Framing;

use crate::problem::Problem;

/// `frame-ancestors` when no site is named: nobody may frame the pages.
pub const NO_FRAMING: &str = "'none'";

/// The Content-Security-Policy for `frame_ancestors` (a CSP source list such as
/// `'self' https://tickets.example.com`). The pages load their modules, styles, canvas images
/// and data from this origin; WebSockets go to the same host, which `'self'` allows. The one
/// inline style allowed is the simulated bank page's, by its hash (that exact text only).
pub fn policy(frame_ancestors: &str) -> String {
    policy_with(frame_ancestors, &Framing::default())
}

/// The policy for `frame_ancestors` plus one event's embedding sites and logo origin.
pub fn policy_with(frame_ancestors: &str, event: &Framing) -> String {
    let mut sources: Vec<&str> = frame_ancestors
        .split_whitespace()
        .filter(|s| *s != NO_FRAMING)
        .collect();
    sources.extend(event.ancestors.iter().map(String::as_str));
    let ancestors = if sources.is_empty() {
        NO_FRAMING.to_owned()
    } else {
        sources.join(" ")
    };
    let logo = event
        .logo_origin
        .as_deref()
        .map(|o| format!(" {o}"))
        .unwrap_or_default();
    let challenge_style = challenge_style_source();
    format!(
        "default-src 'self'; script-src 'self'; style-src 'self' {challenge_style}; \
         img-src 'self' data:{logo}; connect-src 'self'; object-src 'none'; base-uri 'none'; \
         form-action 'self'; frame-ancestors {ancestors}"
    )
}

#[derive(Debug, thiserror::Error)]
pub enum FrameAncestorsError {
    #[error(
        "FLOODGATE_FRAME_ANCESTORS is a space-separated list of sources; {0:?} would add directives to the policy"
    )]
    Directive(String),
    #[error("FLOODGATE_FRAME_ANCESTORS cannot be sent in a header: {0}")]
    NotAHeader(#[from] InvalidHeaderValue),
}

/// The policy header, or why the frame ancestors setting is not a plain list of sources
/// (checked at start).
pub fn csp_header(frame_ancestors: &str) -> Result<HeaderValue, FrameAncestorsError> {
    if frame_ancestors.contains([';', ',']) {
        return Err(FrameAncestorsError::Directive(frame_ancestors.to_owned()));
    }
    // The setting itself must be header text: the policy joins its sources with spaces, which
    // would otherwise hide a line break an operator did not mean.
    HeaderValue::from_str(frame_ancestors)?;
    Ok(HeaderValue::from_str(&policy(frame_ancestors))?)
}

/// Wraps the whole application (its fallback included) so no answer leaves without them.
/// A request carrying a receipt key in its query is refused here, before any route, span or
/// log line sees its URL.
pub fn apply(app: Router, csp: HeaderValue, frame_ancestors: String) -> Router {
    let frame_ancestors: Arc<str> = frame_ancestors.into();
    app.layer(axum::middleware::from_fn(
        move |request: Request, next: Next| {
            let (csp, frame_ancestors) = (csp.clone(), frame_ancestors.clone());
            async move {
                let response = if carries_receipt(request.uri().query()) {
                    Problem::bad_request(
                        "a receipt key goes in the Floodgate-Receipt header, never in a URL",
                    )
                    .into_response()
                } else {
                    next.run(request).await
                };
                // An event's page: its own policy (the same one plus what its organizer named).
                let csp = match response.extensions().get::<Framing>() {
                    Some(event) => {
                        HeaderValue::from_str(&policy_with(&frame_ancestors, event)).unwrap_or(csp)
                    }
                    None => csp,
                };
                stamp(response, csp)
            }
        },
    ))
}

/// A `receipt` (or `receipt_key`) parameter in a query string: a URL ends up in logs,
/// histories and proxies, where a key that reads an order must not.
fn carries_receipt(query: Option<&str>) -> bool {
    query.is_some_and(|query| {
        query.split('&').any(|pair| {
            let name = pair.split('=').next().unwrap_or_default();
            name.eq_ignore_ascii_case("receipt") || name.eq_ignore_ascii_case("receipt_key")
        })
    })
}

fn stamp(mut response: Response, csp: HeaderValue) -> Response {
    let headers = response.headers_mut();
    headers.insert(CONTENT_SECURITY_POLICY, csp);
    headers.insert(X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    headers.insert(REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn framing_is_refused_unless_sites_are_named() {
        assert!(policy("").ends_with("frame-ancestors 'none'"));
        assert!(policy("'none'").ends_with("frame-ancestors 'none'"));
        let named = policy("https://tickets.example.com");
        assert!(named.ends_with("frame-ancestors https://tickets.example.com"));
        assert!(named.contains("script-src 'self';"));
        assert!(named.contains(&format!("style-src 'self' {};", challenge_style_source())));
    }

    #[test]
    fn an_event_adds_its_embedding_sites_and_logo_origin() {
        let event = Framing {
            ancestors: vec!["https://club.example".into()],
            logo_origin: Some("https://cdn.example".into()),
        };
        let alone = policy_with("'none'", &event);
        assert!(
            alone.ends_with("frame-ancestors https://club.example"),
            "{alone}"
        );
        assert!(
            alone.contains("img-src 'self' data: https://cdn.example;"),
            "{alone}"
        );
        let both = policy_with("https://tickets.example", &event);
        assert!(both.ends_with("frame-ancestors https://tickets.example https://club.example"));
        assert!(policy_with("'none'", &Framing::default()).ends_with("frame-ancestors 'none'"));
    }

    #[test]
    fn a_receipt_in_a_query_is_spotted() {
        assert!(carries_receipt(Some("hold=h1&receipt=abc")));
        assert!(carries_receipt(Some("Receipt_Key=abc")));
        assert!(!carries_receipt(Some("hold=h1&receipts_shown=1")));
        assert!(!carries_receipt(Some("token=abc")));
        assert!(!carries_receipt(None));
    }

    #[test]
    fn a_setting_that_cannot_be_a_header_is_refused() {
        assert!(csp_header("https://a.example\nX-Evil: 1").is_err());
        assert!(csp_header("'self'; script-src *").is_err());
        assert!(csp_header("'self' https://a.example").is_ok());
    }
}
