//! The organizer's look of an event's pages, judged at the edge: the branding (a logo, two
//! colours, a heading and a paragraph) and the sites allowed to frame the page. What is stored
//! is only ever what passed here, so the page and the Content-Security-Policy can use it as is.
//! Nothing here can carry markup, a script or a font: texts are shown with `textContent`,
//! colours are `#rrggbb`, the logo is an image from this site or one https origin.

use crate::problem::Problem;
use crate::requests::{Branding, EventLook};

/// The heading and the paragraph, in characters.
pub(crate) const HEADING_CHARS: usize = 120;
pub(crate) const TEXT_CHARS: usize = 1000;
/// The logo's address, in bytes (ASCII only).
pub(crate) const LOGO_URL_BYTES: usize = 2048;
/// Sites allowed to frame one event's page, and the length of each.
pub(crate) const FRAME_ANCESTORS: usize = 10;
pub(crate) const ORIGIN_BYTES: usize = 255;

/// The JSON schema pattern of a colour.
pub(crate) const COLOR_PATTERN: &str = "^#[0-9a-fA-F]{6}$";
/// The JSON schema pattern of the logo's address: a path of this site, or an https URL.
pub(crate) const LOGO_PATTERN: &str = "^(/([A-Za-z0-9._~%-][A-Za-z0-9._~%/-]*)?|https://[a-z0-9.-]+(:[0-9]{1,5})?(/[A-Za-z0-9._~%/=&?+-]*)?)$";
/// The JSON schema pattern of a framing origin: https, or http on this machine's loopback.
pub(crate) const ORIGIN_PATTERN: &str = "^(https://(\\*\\.)?[a-z0-9.-]+|http://(localhost|127\\.[0-9]{1,3}\\.[0-9]{1,3}\\.[0-9]{1,3}))(:[0-9]{1,5})?$";

/// A validated change of look, ready for the store.
pub(crate) struct Look {
    pub branding: Option<Option<String>>,
    pub frame_ancestors: Option<String>,
}

/// The look's part of a change; both `None` when it names neither (the change may name only
/// the event's name or timings).
pub(crate) fn judge(request: &mut EventLook) -> Result<Look, Problem> {
    let branding = match request.branding.take() {
        None => None,
        Some(b) if is_empty(&b) => Some(None),
        Some(b) => {
            check_branding(&b)?;
            Some(Some(
                serde_json::to_string(&b).map_err(|_| Problem::internal())?,
            ))
        }
    };
    let frame_ancestors = match request.frame_ancestors.take() {
        None => None,
        Some(list) => {
            if list.len() > FRAME_ANCESTORS {
                return Err(Problem::bad_request(format!(
                    "frame_ancestors names at most {FRAME_ANCESTORS} origins"
                )));
            }
            if let Some(bad) = list.iter().find(|o| !is_origin(o)) {
                return Err(Problem::bad_request(format!(
                    "{bad:?} is not an origin: https://host[:port] (or http:// on the loopback)"
                )));
            }
            Some(serde_json::to_string(&list).map_err(|_| Problem::internal())?)
        }
    };
    Ok(Look {
        branding,
        frame_ancestors,
    })
}

fn is_empty(b: &Branding) -> bool {
    b.logo_url.is_none() && b.colors.is_none() && b.heading.is_none() && b.text.is_none()
}

fn check_branding(b: &Branding) -> Result<(), Problem> {
    if let Some(colors) = &b.colors {
        for (name, value) in [
            ("colors.primary", &colors.primary),
            ("colors.background", &colors.background),
        ] {
            if !is_color(value) {
                return Err(Problem::bad_request(format!("{name} must be #rrggbb")));
            }
        }
    }
    if let Some(logo) = &b.logo_url
        && !is_logo(logo)
    {
        return Err(Problem::bad_request(
            "logo_url must be a path of this site (/…) or an https URL",
        ));
    }
    for (name, value, max, lines) in [
        ("heading", &b.heading, HEADING_CHARS, false),
        ("text", &b.text, TEXT_CHARS, true),
    ] {
        if let Some(value) = value
            && !is_text(value, max, lines)
        {
            return Err(Problem::bad_request(format!(
                "{name} must be 1-{max} characters of text, not all blank"
            )));
        }
    }
    Ok(())
}

fn is_color(s: &str) -> bool {
    s.len() == 7 && s.starts_with('#') && s[1..].bytes().all(|b| b.is_ascii_hexdigit())
}

/// Control characters are refused (a line break is allowed in the paragraph only).
fn is_text(s: &str, max: usize, lines: bool) -> bool {
    s.chars().count() <= max
        && s.chars().any(|c| !c.is_whitespace())
        && s.chars().all(|c| !c.is_control() || (lines && c == '\n'))
}

fn is_logo(s: &str) -> bool {
    if s.len() > LOGO_URL_BYTES {
        return false;
    }
    if let Some(path) = s.strip_prefix('/') {
        // `//host` would be another site.
        return !path.starts_with('/')
            && path
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"._~%/-".contains(&b));
    }
    let Some(rest) = s.strip_prefix("https://") else {
        return false;
    };
    let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    is_host_port(authority, false)
        && path
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"._~%/=&?+-".contains(&b))
}

/// `host[:port]`: lower-case letters, digits, dots and hyphens, a port of 1-5 digits.
fn is_host_port(s: &str, wildcard: bool) -> bool {
    let (host, port) = match s.split_once(':') {
        Some((h, p)) => (h, Some(p)),
        None => (s, None),
    };
    let host = if wildcard {
        host.strip_prefix("*.").unwrap_or(host)
    } else {
        host
    };
    !host.is_empty()
        && host
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'.' || b == b'-')
        && port.is_none_or(|p| (1..=5).contains(&p.len()) && p.bytes().all(|b| b.is_ascii_digit()))
}

/// An origin a page may be framed by: `https://host[:port]` (a `*.` wildcard allowed), or
/// `http://` on the loopback, where an organizer tries the embed before going live.
pub(crate) fn is_origin(s: &str) -> bool {
    if s.len() > ORIGIN_BYTES {
        return false;
    }
    if let Some(rest) = s.strip_prefix("https://") {
        return is_host_port(rest, true);
    }
    let Some(rest) = s.strip_prefix("http://") else {
        return false;
    };
    let host = rest.split(':').next().unwrap_or_default();
    let loopback = host == "localhost"
        || host.strip_prefix("127.").is_some_and(|r| {
            r.split('.').count() == 3
                && r.split('.')
                    .all(|n| (1..=3).contains(&n.len()) && n.bytes().all(|b| b.is_ascii_digit()))
        });
    loopback && is_host_port(rest, false)
}

/// What the page of one event adds to the Content-Security-Policy: the origins that may
/// frame it and the origin its logo comes from (both as stored, hence already judged).
#[derive(Clone, Debug, Default)]
pub struct Framing {
    pub ancestors: Vec<String>,
    pub logo_origin: Option<String>,
}

impl Framing {
    pub(crate) fn of(event: &reservation::Event) -> Framing {
        let ancestors: Vec<String> = event
            .frame_ancestors
            .as_deref()
            .and_then(|j| serde_json::from_str(j).ok())
            .unwrap_or_default();
        let logo_origin = event
            .branding
            .as_deref()
            .and_then(|j| serde_json::from_str::<Branding>(j).ok())
            .and_then(|b| b.logo_url)
            .and_then(|url| {
                let rest = url.strip_prefix("https://")?;
                let authority = rest.split('/').next()?;
                Some(format!("https://{authority}"))
            });
        // Judged again on the way out: a row written by hand cannot widen the policy.
        Framing {
            ancestors: ancestors.into_iter().filter(|o| is_origin(o)).collect(),
            logo_origin: logo_origin.filter(|o| is_origin(o)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn origins() {
        assert!(is_origin("https://tickets.example.com"));
        assert!(is_origin("https://*.example.com:8443"));
        assert!(is_origin("http://127.0.0.1:4000"));
        assert!(is_origin("http://localhost:4000"));
        assert!(!is_origin("http://tickets.example.com"));
        assert!(!is_origin("https://tickets.example.com/"));
        assert!(!is_origin("https://a.example 'unsafe-inline'"));
        assert!(!is_origin("https://a.example;script-src"));
        assert!(!is_origin("https://A.example"));
        assert!(!is_origin("javascript:alert(1)"));
        assert!(!is_origin("http://127.0.0.1.evil.example"));
    }

    #[test]
    fn logos_and_colours() {
        assert!(is_logo("/static/logo.png"));
        assert!(is_logo("https://cdn.example.com/logo.svg?v=2"));
        assert!(!is_logo("//cdn.example.com/logo.svg"));
        assert!(!is_logo("http://cdn.example.com/logo.svg"));
        assert!(!is_logo("javascript:alert(1)"));
        assert!(!is_logo("data:image/svg+xml,<svg onload=alert(1)>"));
        assert!(!is_logo("https://cdn.example.com/\"onerror=\"x"));
        assert!(is_color("#A1b2C3"));
        assert!(!is_color("red"));
        assert!(!is_color("#abc"));
        assert!(!is_color("#abcdeg"));
    }

    #[test]
    fn texts() {
        assert!(is_text("Welcome to the final", HEADING_CHARS, false));
        assert!(!is_text("   ", HEADING_CHARS, false));
        assert!(!is_text("two\nlines", HEADING_CHARS, false));
        assert!(is_text("two\nlines", TEXT_CHARS, true));
        assert!(!is_text(
            &"x".repeat(HEADING_CHARS + 1),
            HEADING_CHARS,
            false
        ));
    }
}
