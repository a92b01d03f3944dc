//! Stripe's official Python library (`tests/stripe/`) judges the payment simulator and the
//! gateway's webhook route: it makes the gateway's calls (create and confirm, retrieve,
//! search, capture, cancel, refund), parses every answer into its objects, compares them with
//! Stripe's own example objects, and signs and verifies webhooks with its own code.
//!
//! The interpreter is `FLOODGATE_PYTHON` (`bash scripts/test.sh` makes a virtualenv with
//! `tests/python/requirements.txt` and exports it).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::net::SocketAddr;
use std::path::Path;
use std::process::Command;

use floodgate_tests::simulator::{SimServerConfig, spawn};
use gateway::config::{Config, Secret};
use reservation::payments::STRIPE_VERSION;
use reservation::payments::simulator::SimulatorConfig;

const KEY: &str = "sk_test_floodgate_library";
const WEBHOOK_SECRET: &str = "whsec_floodgate_library_0123456789abcdef";

/// The interpreter with the `stripe` library, or a loud failure naming the fix.
fn python() -> String {
    let fix = "run the whole suite with `bash scripts/test.sh` (it makes the virtualenv), or: \
               python3 -m venv /tmp/stripe-venv && /tmp/stripe-venv/bin/pip install -r tests/python/requirements.txt \
               && export FLOODGATE_PYTHON=/tmp/stripe-venv/bin/python";
    let python = std::env::var("FLOODGATE_PYTHON")
        .unwrap_or_else(|_| panic!("FLOODGATE_PYTHON is not set; {fix}"));
    let probe = Command::new(&python)
        .args(["-c", "import stripe; print(stripe.api_version)"])
        .output()
        .unwrap_or_else(|e| panic!("FLOODGATE_PYTHON={python} does not run ({e}); {fix}"));
    assert!(
        probe.status.success(),
        "FLOODGATE_PYTHON={python} cannot import stripe: {}; {fix}",
        String::from_utf8_lossy(&probe.stderr)
    );
    let version = String::from_utf8_lossy(&probe.stdout).trim().to_owned();
    assert_eq!(
        version, STRIPE_VERSION,
        "the installed stripe library speaks API version {version}, the adapter {STRIPE_VERSION}: \
         install tests/python/requirements.txt"
    );
    python
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stripes_own_library_accepts_the_simulator_and_the_gateway() {
    let python = python();
    let sim = spawn(SimServerConfig {
        api_key: Some(KEY.into()),
        simulator: SimulatorConfig {
            seed: 17,
            webhook_secret: WEBHOOK_SECRET.into(),
            ..SimulatorConfig::default()
        },
        ..SimServerConfig::default()
    })
    .await
    .expect("simulator binds 127.0.0.1:0");

    // A real gateway (the embedded default's SQLite) whose provider is this simulator.
    let listener = gateway::listener::bind(SocketAddr::from(([127, 0, 0, 1], 0))).unwrap();
    let addr = listener.local_addr().unwrap();
    let db = std::env::temp_dir().join(format!(
        "floodgate-stripe-library-{}.db",
        uuid::Uuid::now_v7().simple()
    ));
    let mut config = Config::embedded(addr, format!("sqlite:{}", db.display()));
    config.payment_url = Some(sim.base_url.clone());
    config.payment_key = Some(Secret::new(KEY));
    config.webhook_secret = Some(Secret::new(WEBHOOK_SECRET));
    config.organizer_key = Some(Secret::new("org_stripe_library"));
    config.demo = Some(false);
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let gateway = tokio::spawn(gateway::run(config, listener, async move {
        let _ = stopped.await;
    }));
    let base = format!("http://{addr}");
    let http = reqwest::Client::new();
    let mut ready = false;
    for _ in 0..200 {
        if let Ok(r) = http.get(format!("{base}/readyz")).send().await
            && r.status().is_success()
        {
            ready = true;
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert!(ready, "the gateway never became ready at {base}");

    let suite = Path::new(env!("CARGO_MANIFEST_DIR")).join("stripe/run.py");
    let run = tokio::process::Command::new(&python)
        .arg(&suite)
        .env("STRIPE_SIM_URL", &sim.base_url)
        .env("STRIPE_SIM_KEY", KEY)
        .env("STRIPE_WEBHOOK_SECRET", WEBHOOK_SECRET)
        .env("FLOODGATE_GATEWAY_URL", &base)
        .output()
        .await
        .expect("run the Python suite");
    let stdout = String::from_utf8_lossy(&run.stdout);
    let stderr = String::from_utf8_lossy(&run.stderr);
    println!("{stdout}");
    eprintln!("{stderr}");

    let _ = stop.send(());
    let _ = gateway.await;
    let _ = std::fs::remove_file(&db);
    assert!(
        run.status.success(),
        "Stripe's library disagrees with the simulator or the gateway:\n{stdout}\n{stderr}"
    );
    assert!(stdout.contains(" passed, 0 failed"), "{stdout}");
}
