//! Every request body the API takes, in one public place: the handlers parse these through
//! `extract::JsonBody`, the OpenAPI document describes them, and a fuzz target can feed them
//! arbitrary bytes. Unknown fields are refused, so a typo never silently means "default", and
//! an optional field is either absent or a value: `null` is refused, as the document allows no
//! `null` anywhere (absent already means "the default" or "unchanged").

use serde::{Deserialize, Deserializer};

/// An optional field that, when present, holds a value: serde would read `null` as absent.
fn present<'de, D, T>(deserializer: D) -> Result<Option<T>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    T::deserialize(deserializer).map(Some)
}

/// `POST /api/events/{event}/holds`: `{"seats": [...]}` (named seats) or
/// `{"section": "GA", "quantity": 2}` (general admission).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HoldRequest {
    #[serde(default, deserialize_with = "present")]
    pub seats: Option<Vec<String>>,
    #[serde(default, deserialize_with = "present")]
    pub section: Option<String>,
    #[serde(default, deserialize_with = "present")]
    pub quantity: Option<u32>,
}

/// `POST /api/holds/{hold}/checkout`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CheckoutRequest {
    pub payment_method: String,
    /// The buyer's page, where the provider sends the buyer back after a 3-D Secure check.
    #[serde(default, deserialize_with = "present")]
    pub return_url: Option<String>,
}

/// `POST /api/admin/events`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CreateEvent {
    pub event: String,
    pub name: String,
    #[serde(default, deserialize_with = "present")]
    pub opens_at: Option<String>,
    #[serde(default, deserialize_with = "present")]
    pub hold_ttl_s: Option<i64>,
    #[serde(default, deserialize_with = "present")]
    pub max_hold_s: Option<i64>,
    #[serde(default, deserialize_with = "present")]
    pub max_seats_per_hold: Option<i64>,
    #[serde(default, deserialize_with = "present")]
    pub resolve_s: Option<i64>,
    #[serde(default, deserialize_with = "present")]
    pub abandon_s: Option<i64>,
    #[serde(default, deserialize_with = "present")]
    pub currency: Option<String>,
    #[serde(default)]
    pub admission: AdmissionSettings,
}

/// The admission settings of an event at creation, and `PATCH …/admission`.
#[derive(Debug, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct AdmissionSettings {
    #[serde(default, deserialize_with = "present")]
    pub rate_per_min: Option<i64>,
    #[serde(default, deserialize_with = "present")]
    pub max_active: Option<i64>,
    #[serde(default, deserialize_with = "present")]
    pub session_s: Option<i64>,
    #[serde(default, deserialize_with = "present")]
    pub offer_s: Option<i64>,
    #[serde(default, deserialize_with = "present")]
    pub paused: Option<bool>,
}

/// `POST /api/admin/events/{event}/seats`: a list, or rows to generate.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SeatsRequest {
    #[serde(default, deserialize_with = "present")]
    pub seats: Option<Vec<SeatSpec>>,
    #[serde(default, deserialize_with = "present")]
    pub generate: Option<Generate>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SeatSpec {
    pub seat_id: String,
    pub section: String,
    #[serde(default)]
    pub row: String,
    #[serde(default)]
    pub number: i64,
    pub price_cents: i64,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Generate {
    pub section: String,
    pub rows: u32,
    pub per_row: u32,
    pub price_cents: i64,
}

/// The query of `GET /api/admin/events/{event}/stuck`.
#[derive(Debug, Deserialize)]
pub struct StuckQuery {
    pub older_than_s: Option<i64>,
}

/// The query of the waiting-room socket: the queue token travels there (browsers cannot set
/// headers on a WebSocket).
#[derive(Debug, Deserialize)]
pub struct TokenQuery {
    pub token: Option<String>,
}

/// `POST /api/admin/keys`: a team member's key.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CreateKey {
    pub name: String,
    pub role: reservation::organizer_keys::Role,
}

/// The query of `GET /api/admin/events`: a page of events after `after`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EventListQuery {
    pub limit: Option<i64>,
    pub after: Option<String>,
}
