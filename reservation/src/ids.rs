//! Identifier newtypes, parsed once at the edge so the store never re-validates them.

use std::fmt;
use std::str::FromStr;

/// An identifier that is not 1–64 characters of `[A-Za-z0-9._-]`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid {kind}: must be 1-64 characters of [A-Za-z0-9._-]")]
pub struct InvalidId {
    /// Which identifier was refused (`event id`, `seat id`, …).
    pub kind: &'static str,
}

fn valid(s: &str) -> bool {
    (1..=64).contains(&s.len())
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
}

macro_rules! id_type {
    ($(#[$doc:meta])* $name:ident, $kind:literal) => {
        $(#[$doc])*
        #[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
        #[serde(transparent)]
        pub struct $name(String);

        impl $name {
            /// The identifier as text.
            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl FromStr for $name {
            type Err = InvalidId;
            fn from_str(s: &str) -> Result<Self, InvalidId> {
                Self::try_from(s.to_owned())
            }
        }

        impl TryFrom<String> for $name {
            type Error = InvalidId;
            fn try_from(s: String) -> Result<Self, InvalidId> {
                if valid(&s) { Ok(Self(s)) } else { Err(InvalidId { kind: $kind }) }
            }
        }

        impl<'de> serde::Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let s = String::deserialize(d)?;
                Self::try_from(s).map_err(serde::de::Error::custom)
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl AsRef<str> for $name {
            fn as_ref(&self) -> &str {
                &self.0
            }
        }
    };
}

id_type!(
    /// An event (one on-sale).
    EventId, "event id"
);
id_type!(
    /// A seat of an event; general admission seats are ids too.
    SeatId, "seat id"
);
id_type!(
    /// An admission session (`jti` of the admission token).
    SessionId, "session id"
);
id_type!(
    /// A named organizer key (team keys; the key itself is never stored).
    KeyId, "key id"
);
id_type!(
    /// A hold on 1..n seats.
    HoldId, "hold id"
);
id_type!(
    /// A payment attempt; also the provider's idempotency key.
    AttemptId, "payment attempt id"
);
id_type!(
    /// A confirmed order.
    OrderId, "order id"
);
id_type!(
    /// A queue ticket (admission's id for one buyer in one event).
    TicketId, "ticket id"
);
id_type!(
    /// An organizer's webhook subscription.
    WebhookId, "webhook id"
);

/// A fresh id: a short prefix and a time-ordered uuid (v7), e.g. `h_0190…`.
pub(crate) fn generate(prefix: &str) -> String {
    format!("{prefix}_{}", uuid::Uuid::now_v7().simple())
}

/// 32 random bytes as hex: an unguessable secret.
pub(crate) fn random_secret() -> String {
    hex::encode(rand::random::<[u8; 32]>())
}

/// Values the store produced itself are valid by construction.
pub(crate) fn trusted<T: TryFrom<String, Error = InvalidId>>(s: String) -> Result<T, crate::Error> {
    T::try_from(s).map_err(|e| crate::Error::Storage(sqlx::Error::Decode(Box::new(e))))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_accept_the_alphabet_and_refuse_the_rest() {
        assert!("A-12".parse::<SeatId>().is_ok());
        assert!("ev.2026_x".parse::<EventId>().is_ok());
        assert!("".parse::<SeatId>().is_err());
        assert!("a b".parse::<SeatId>().is_err());
        assert!("é".parse::<SeatId>().is_err());
        assert!("x".repeat(65).parse::<SeatId>().is_err());
        assert_eq!(
            "x".parse::<HoldId>().map_err(|e| e.kind),
            Ok(HoldId("x".into())).map_err(|_: InvalidId| "")
        );
        assert!(generate("h").starts_with("h_"));
    }
}
