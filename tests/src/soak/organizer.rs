//! The organizer's side of a soak, through the organizer API only: create the event and its
//! seats, set the admission rate and cap, read the stats.

use serde_json::{Value, json};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

use super::config::Config;
use super::context::section;
use super::plan::seat_ids;

#[derive(Clone)]
pub struct Organizer {
    http: reqwest::Client,
    base: String,
    key: String,
    event: String,
}

/// The seat counts of `GET …/stats`.
#[derive(Debug, Clone, Copy, Default, serde::Serialize, serde::Deserialize)]
pub struct SeatCounts {
    pub available: u64,
    pub held: u64,
    pub paying: u64,
    pub sold: u64,
}

impl SeatCounts {
    /// Nothing left and nothing that could come back.
    pub fn sold_out(&self) -> bool {
        self.available == 0 && self.held == 0 && self.paying == 0
    }
}

impl Organizer {
    pub fn new(config: &Config) -> anyhow::Result<Organizer> {
        Ok(Organizer {
            http: reqwest::Client::builder()
                .tls_certs_merge(super::trust::Trust::load(config.ca_file.as_deref())?.extra)
                .timeout(std::time::Duration::from_secs(30))
                .build()?,
            base: config.gateways[0].trim_end_matches('/').to_owned(),
            key: config.organizer_key.clone(),
            event: config.event.clone(),
        })
    }

    async fn send(&self, request: reqwest::RequestBuilder) -> anyhow::Result<Value> {
        let response = request.bearer_auth(&self.key).send().await?;
        let status = response.status();
        let body: Value = response.json().await.unwrap_or(Value::Null);
        anyhow::ensure!(
            status.is_success(),
            "organizer API answered {status}: {body}"
        );
        Ok(body)
    }

    /// Creates the event opening `opens_in_s` from now, its seats, and its admission settings.
    pub async fn create_event(&self, config: &Config) -> anyhow::Result<()> {
        let opens_at =
            OffsetDateTime::now_utc() + time::Duration::seconds(config.opens_in_s as i64);
        let body = json!({
            "event": self.event,
            "name": format!("Soak {}", self.event),
            "opens_at": opens_at.format(&Rfc3339)?,
            "hold_ttl_s": config.hold_ttl_s,
            "max_hold_s": config.max_hold_s,
            "max_seats_per_hold": 1,
            "resolve_s": config.resolve_s,
            "abandon_s": config.abandon_s,
            "admission": {
                "session_s": config.session_s(),
                "offer_s": config.offer_s,
            },
        });
        self.send(
            self.http
                .post(format!("{}/api/admin/events", self.base))
                .json(&body),
        )
        .await?;
        let section = section(config);
        for chunk in seat_ids(section, config.seat_count).chunks(500) {
            let seats: Vec<Value> = chunk
                .iter()
                .enumerate()
                .map(|(i, id)| {
                    json!({"seat_id": id, "section": section,
                           "row": (i / 50).to_string(), "number": i % 50 + 1, "price_cents": 5_000})
                })
                .collect();
            self.send(
                self.http
                    .post(format!(
                        "{}/api/admin/events/{}/seats",
                        self.base, self.event
                    ))
                    .json(&json!({ "seats": seats })),
            )
            .await?;
        }
        // Rate and cap go through PATCH, as an organizer tunes them live.
        self.send(
            self.http
                .patch(format!(
                    "{}/api/admin/events/{}/admission",
                    self.base, self.event
                ))
                .json(
                    &json!({"rate_per_min": config.rate_per_min, "max_active": config.max_active}),
                ),
        )
        .await?;
        Ok(())
    }

    pub async fn stats(&self) -> anyhow::Result<Value> {
        self.send(self.http.get(format!(
            "{}/api/admin/events/{}/stats",
            self.base, self.event
        )))
        .await
    }

    /// The public queue snapshot, as every waiting page reads it.
    pub async fn snapshot(&self) -> anyhow::Result<Value> {
        self.send(self.http.get(format!(
            "{}/api/events/{}/queue/snapshot",
            self.base, self.event
        )))
        .await
    }

    pub async fn seats(&self) -> anyhow::Result<(SeatCounts, Value)> {
        let stats = self.stats().await?;
        let counts = serde_json::from_value(stats["seats"].clone())?;
        Ok((counts, stats))
    }
}
