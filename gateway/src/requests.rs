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
    /// The priority lane's share of offers, 0-1 (live changes only).
    #[serde(default, deserialize_with = "present")]
    pub priority_share: Option<f64>,
}

/// `PATCH …/admission`: the creation settings, the emergency controls, the message and the
/// version the change is conditional on.
#[derive(Debug, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct AdmissionChange {
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
    #[serde(default, deserialize_with = "present")]
    pub mode: Option<ModeName>,
    #[serde(default, deserialize_with = "present")]
    pub on_backend_down: Option<BackendDownName>,
    /// The one field where `null` means something: it clears the message.
    #[serde(default, deserialize_with = "nullable")]
    pub message: Option<Option<MessageBody>>,
    #[serde(default, deserialize_with = "present")]
    pub version: Option<i64>,
    /// The priority lane's share of offers, 0-1 (live changes only).
    #[serde(default, deserialize_with = "present")]
    pub priority_share: Option<f64>,
}

/// Absent → `None`; `null` → `Some(None)`; a value → `Some(Some(v))`.
fn nullable<'de, D, T>(deserializer: D) -> Result<Option<Option<T>>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    Option::<T>::deserialize(deserializer).map(Some)
}

#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ModeName {
    Normal,
    PassThrough,
    Maintenance,
}

#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BackendDownName {
    FailClosed,
    FailOpen,
}

#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LevelName {
    Info,
    Warning,
}

/// The organizer's message: plain text (shown as written, never as HTML) and its styling.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MessageBody {
    pub text: String,
    pub level: LevelName,
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

/// `POST /api/events/{event}/queue` (the body is optional: an empty one is `{}`).
#[derive(Debug, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct JoinRequest {
    /// A presale or access code.
    #[serde(default, deserialize_with = "present")]
    pub code: Option<String>,
    /// A short-lived token the organizer's site signed, naming the buyer (`sub`).
    #[serde(default, deserialize_with = "present")]
    pub identity: Option<String>,
}

impl JoinRequest {
    /// Within the documented lengths (a longer value is bad input, whatever the event).
    pub fn check(&self) -> Result<(), crate::problem::Problem> {
        let long =
            |v: &Option<String>, max: usize| v.as_ref().is_some_and(|s| s.chars().count() > max);
        if long(&self.code, reservation::codes::CODE_MAX_CHARS)
            || long(&self.identity, admission::IDENTITY_TOKEN_BYTES)
        {
            return Err(crate::problem::Problem::bad_request(
                "code is at most 64 characters, identity at most 4096",
            ));
        }
        Ok(())
    }
}

/// `POST /api/admin/events/{event}/codes`: codes to generate, or a list to upload.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CodesRequest {
    #[serde(default, deserialize_with = "present")]
    pub generate: Option<i64>,
    #[serde(default, deserialize_with = "present")]
    pub codes: Option<Vec<String>>,
    #[serde(default, deserialize_with = "present")]
    pub uses: Option<i64>,
    #[serde(default, deserialize_with = "present")]
    pub starts_at: Option<String>,
    #[serde(default, deserialize_with = "present")]
    pub ends_at: Option<String>,
    #[serde(default, deserialize_with = "present")]
    pub lane: Option<String>,
}

/// The query of `GET /api/admin/events/{event}/codes`: a page after a code.
#[derive(Debug, Deserialize)]
pub struct CodesQuery {
    pub after: Option<String>,
    pub limit: Option<i64>,
}

/// `PATCH /api/admin/events/{event}/access`: who may join, and the identity key.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AccessSettings {
    #[serde(default, deserialize_with = "present")]
    pub access: Option<String>,
    #[serde(default, deserialize_with = "present")]
    pub general_opens_at: Option<String>,
    /// `null` removes the identity check; absent leaves it as it is.
    #[serde(default, deserialize_with = "nullable")]
    pub identity: Option<Option<IdentitySettings>>,
}

/// The organizer's identity key: a shared secret (HS256) or a public key PEM (ES256, RS256).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IdentitySettings {
    pub alg: String,
    #[serde(default, deserialize_with = "present")]
    pub secret: Option<String>,
    #[serde(default, deserialize_with = "present")]
    pub public_key_pem: Option<String>,
    #[serde(default)]
    pub required: bool,
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

/// `PATCH /api/admin/events/{event}`: the look of the event's pages. `branding: {}` removes
/// the branding; `frame_ancestors: []` stops all framing. Also the event's name (any time) and
/// its timings, as creation takes them (only before the queue opens).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EventLook {
    #[serde(default, deserialize_with = "present")]
    pub branding: Option<Branding>,
    #[serde(default, deserialize_with = "present")]
    pub frame_ancestors: Option<Vec<String>>,
    #[serde(default, deserialize_with = "present")]
    pub name: Option<String>,
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
}

/// The organizer's branding: texts are shown as text, colours as CSS custom properties.
#[derive(Debug, Deserialize, serde::Serialize, Default)]
#[serde(deny_unknown_fields)]
pub struct Branding {
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub logo_url: Option<String>,
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub colors: Option<BrandColors>,
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub heading: Option<String>,
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub text: Option<String>,
}

#[derive(Debug, Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct BrandColors {
    pub primary: String,
    pub background: String,
}

/// The query of `GET /api/events/{event}/seats`: one section, or the changes since a version.
#[derive(Debug, Deserialize)]
pub struct SeatsQuery {
    pub section: Option<String>,
    pub since: Option<i64>,
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
