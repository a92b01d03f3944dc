//! The simulator binary: starts on port 0, serves the provider and the control routes.

use std::process::Stdio;
use std::time::Duration;

use floodgate_tests::sim_control::SimControl;
use reservation::payments::{AuthorizeRequest, Outcome, Provider, StripeClient};
use tokio::io::{AsyncBufReadExt, BufReader};

#[tokio::test]
async fn the_binary_serves_payments_and_its_ledger() {
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_simulator"))
        .args([
            "--listen",
            "127.0.0.1:0",
            "--webhook-secret",
            "whsec_bin",
            "--seed",
            "7",
        ])
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("the simulator binary starts");
    let stdout = child.stdout.take().unwrap();
    let line = tokio::time::timeout(
        Duration::from_secs(10),
        BufReader::new(stdout).lines().next_line(),
    )
    .await
    .expect("the binary prints its address")
    .unwrap()
    .expect("a line");
    let base_url = line.rsplit(' ').next().unwrap().to_owned();
    assert!(base_url.starts_with("http://127.0.0.1:"), "{line}");

    let p = Provider::Http(StripeClient::new(&base_url, "sk", Duration::from_secs(3)).unwrap());
    let out = p
        .authorize(&AuthorizeRequest {
            attempt_id: "att-bin".into(),
            amount_cents: 500,
            currency: "eur".into(),
            payment_method: "pm_card_visa".into(),
            return_url: None,
        })
        .await;
    assert!(matches!(out, Outcome::Authorized { .. }), "{out:?}");
    let ledger = SimControl::new(&base_url).ledger().await.unwrap();
    assert_eq!(ledger.attempts["att-bin"].authorizations, 1);
    child.kill().await.unwrap();
}
