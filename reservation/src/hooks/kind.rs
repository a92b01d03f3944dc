//! What an organizer subscribes to, and where deliveries may go: parsed once at the edge, so
//! the store and the worker never judge a subscription again.

use crate::ids;

/// The facts a subscription can ask for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    QueueOpened,
    QueuePaused,
    QueueResumed,
    SoldOut,
    OrderConfirmed,
    OrderRefunded,
    PaymentStuck,
}

impl Kind {
    pub const ALL: [Kind; 7] = [
        Kind::QueueOpened,
        Kind::QueuePaused,
        Kind::QueueResumed,
        Kind::SoldOut,
        Kind::OrderConfirmed,
        Kind::OrderRefunded,
        Kind::PaymentStuck,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Kind::QueueOpened => "queue.opened",
            Kind::QueuePaused => "queue.paused",
            Kind::QueueResumed => "queue.resumed",
            Kind::SoldOut => "event.sold_out",
            Kind::OrderConfirmed => "order.confirmed",
            Kind::OrderRefunded => "order.refunded",
            Kind::PaymentStuck => "payment.stuck",
        }
    }

    /// Its bit in `webhook_subscriptions.kinds`. The triggers of migration 0015 name the bits
    /// of the kinds they record (paused 2, resumed 4, confirmed 16, refunded 32).
    pub fn bit(self) -> i64 {
        match self {
            Kind::QueueOpened => 1,
            Kind::QueuePaused => 2,
            Kind::QueueResumed => 4,
            Kind::SoldOut => 8,
            Kind::OrderConfirmed => 16,
            Kind::OrderRefunded => 32,
            Kind::PaymentStuck => 64,
        }
    }
}

/// The kind of the test delivery the organizer's button sends; not subscribable.
pub const PING: &str = "ping";

/// The longest delivery URL accepted.
pub const URL_CHARS: usize = 2048;
/// Subscriptions one event may have: each fact costs one row per subscription in the
/// transaction that makes it.
pub const WEBHOOKS_PER_EVENT: i64 = 10;
/// A secret the organizer brings: printable ASCII without spaces, this long.
pub const SECRET_MIN: usize = 16;
pub const SECRET_MAX: usize = 128;

/// A subscription the organizer asked for that cannot be made, and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InvalidHook {
    #[error("url must be an absolute http:// or https:// URL of at most {URL_CHARS} characters")]
    Url,
    #[error("events must name 1-7 distinct kinds of: {}", kind_names())]
    Kinds,
    #[error("secret must be {SECRET_MIN}-{SECRET_MAX} printable ASCII characters without spaces")]
    Secret,
}

fn kind_names() -> String {
    Kind::ALL.map(Kind::as_str).join(", ")
}

/// The subscribed kinds, as the bit set the store keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Kinds(i64);

impl Kinds {
    pub fn parse<S: AsRef<str>>(names: &[S]) -> Result<Kinds, InvalidHook> {
        if names.is_empty() || names.len() > Kind::ALL.len() {
            return Err(InvalidHook::Kinds);
        }
        let mut bits = 0;
        for name in names {
            let kind = Kind::ALL
                .into_iter()
                .find(|k| k.as_str() == name.as_ref())
                .ok_or(InvalidHook::Kinds)?;
            if bits & kind.bit() != 0 {
                return Err(InvalidHook::Kinds);
            }
            bits |= kind.bit();
        }
        Ok(Kinds(bits))
    }

    pub(crate) fn from_bits(bits: i64) -> Kinds {
        Kinds(bits)
    }

    pub fn bits(self) -> i64 {
        self.0
    }

    pub fn names(self) -> Vec<&'static str> {
        Kind::ALL
            .into_iter()
            .filter(|k| self.0 & k.bit() != 0)
            .map(Kind::as_str)
            .collect()
    }
}

/// Where deliveries go: an absolute `http://` or `https://` URL with a host, bounded, without
/// white space or credentials (a secret in a URL would show on the dashboard).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HookUrl(String);

impl HookUrl {
    pub fn parse(text: &str) -> Result<HookUrl, InvalidHook> {
        if text.chars().count() > URL_CHARS || text.chars().any(|c| c.is_whitespace()) {
            return Err(InvalidHook::Url);
        }
        let url = reqwest::Url::parse(text).map_err(|_| InvalidHook::Url)?;
        let fine = matches!(url.scheme(), "http" | "https")
            && url.host_str().is_some_and(|h| !h.is_empty())
            && url.username().is_empty()
            && url.password().is_none();
        if fine {
            Ok(HookUrl(text.to_owned()))
        } else {
            Err(InvalidHook::Url)
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// The secret deliveries are signed with.
#[derive(Clone, PartialEq, Eq)]
pub struct HookSecret(String);

impl HookSecret {
    pub fn parse(text: &str) -> Result<HookSecret, InvalidHook> {
        let fine = (SECRET_MIN..=SECRET_MAX).contains(&text.len())
            && text.bytes().all(|b| b.is_ascii_graphic());
        if fine {
            Ok(HookSecret(text.to_owned()))
        } else {
            Err(InvalidHook::Secret)
        }
    }

    /// A fresh secret of 32 random bytes.
    pub fn generate() -> HookSecret {
        HookSecret(format!("whsec_{}", ids::random_secret()))
    }

    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for HookSecret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("HookSecret(***)")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_parse_to_bits_and_back() {
        let kinds = Kinds::parse(&["order.confirmed", "queue.paused"]).unwrap();
        assert_eq!(kinds.bits(), 18);
        assert_eq!(kinds.names(), ["queue.paused", "order.confirmed"]);
        assert!(Kinds::parse::<&str>(&[]).is_err());
        assert!(Kinds::parse(&["order.confirmed", "order.confirmed"]).is_err());
        assert!(Kinds::parse(&["ping"]).is_err());
        let all = Kind::ALL.map(Kind::as_str);
        assert_eq!(Kinds::parse(&all).unwrap().bits(), 127);
    }

    #[test]
    fn only_plain_http_urls_are_accepted() {
        assert!(HookUrl::parse("https://example.com/hooks?x=1").is_ok());
        assert!(HookUrl::parse("http://127.0.0.1:9000/").is_ok());
        for bad in [
            "ftp://example.com/",
            "javascript:alert(1)",
            "https://user:pw@example.com/",
            "/relative",
            "https://exa mple.com/",
            "",
        ] {
            assert!(HookUrl::parse(bad).is_err(), "{bad}");
        }
        let long = format!("https://example.com/{}", "a".repeat(URL_CHARS));
        assert!(HookUrl::parse(&long).is_err());
    }

    #[test]
    fn secrets_are_bounded_and_hidden() {
        assert!(HookSecret::parse("short").is_err());
        assert!(HookSecret::parse(&"x".repeat(SECRET_MAX + 1)).is_err());
        assert!(HookSecret::parse("sixteen chars ok").is_err(), "no spaces");
        let fresh = HookSecret::generate();
        assert!(HookSecret::parse(fresh.expose()).is_ok());
        assert!(!format!("{fresh:?}").contains(fresh.expose()));
    }
}
