//! Helpers shared by the provider tests: a simulator on port 0 and the real HTTP client.

use std::time::Duration;

use floodgate_tests::simulator::{SimServerConfig, SimulatorHandle, spawn};
use reservation::payments::{AuthorizeRequest, Outcome, Provider};

pub const KEY: &str = "sk_test_floodgate";

pub async fn simulator() -> SimulatorHandle {
    spawn(SimServerConfig {
        api_key: Some(KEY.into()),
        ..SimServerConfig::default()
    })
    .await
    .expect("simulator binds 127.0.0.1:0")
}

pub fn client(sim: &SimulatorHandle, timeout_ms: u64) -> Provider {
    sim.http_provider(KEY, Duration::from_millis(timeout_ms))
}

pub fn request(attempt: &str, pm: &str) -> AuthorizeRequest {
    AuthorizeRequest::new(attempt, 4_200, "eur", pm)
}

pub fn payment_id(o: &Outcome) -> String {
    match o {
        Outcome::Authorized { payment_id } => payment_id.clone(),
        other => panic!("expected Authorized, got {other:?}"),
    }
}
