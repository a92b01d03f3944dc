//! The organizer's team: keys of each role made through the API, and snapshots of everything
//! an organizer request can change, for "refused and nothing changed".

use reqwest::Method;
use serde_json::{Value, json};

use super::TestApp;
use super::http::{Answer, Gateway};
use super::rows::Rows;

/// A team key as `POST /api/admin/keys` answered it.
#[derive(Debug, Clone)]
pub struct TeamKey {
    pub id: String,
    pub name: String,
    pub role: String,
    pub key: String,
}

impl Gateway {
    /// `POST /api/admin/keys` with the configured key.
    pub async fn add_key_raw(&self, body: &Value) -> Answer {
        self.send(self.admin(Method::POST, "/api/admin/keys").json(body))
            .await
    }

    /// Adds a key named `name` of `role`; panics unless it is made.
    pub async fn add_key(&self, name: &str, role: &str) -> TeamKey {
        let made = self
            .add_key_raw(&json!({"name": name, "role": role}))
            .await
            .expect(201);
        TeamKey {
            id: made.str("id"),
            name: made.str("name"),
            role: made.str("role"),
            key: made.str("key"),
        }
    }

    /// A request with `key` as the bearer.
    pub fn with_key(&self, key: &str, method: Method, path: &str) -> reqwest::RequestBuilder {
        self.request(method, path).bearer_auth(key)
    }
}

/// Everything an organizer request may change: the rows, the audit log, the keys, the events
/// and their admission settings.
#[derive(Debug, PartialEq)]
pub struct World {
    rows: Rows,
    audit: usize,
    keys: Vec<String>,
    events: Vec<String>,
}

impl World {
    pub async fn of(app: &TestApp) -> Self {
        let audit = app
            .store
            .audit_log(10_000)
            .await
            .expect("the audit log")
            .len();
        let keys = app
            .store
            .organizer_keys()
            .await
            .expect("the keys")
            .iter()
            .map(|k| format!("{k:?}"))
            .collect();
        let mut events = Vec::new();
        for event in app.store.list_events(None, 200).await.expect("the events") {
            let control = app
                .store
                .admission_control(&event.event_id)
                .await
                .expect("control");
            events.push(format!("{event:?} {control:?}"));
        }
        Self {
            rows: Rows::of(&app.store).await,
            audit,
            keys,
            events,
        }
    }
}
