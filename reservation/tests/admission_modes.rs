#![allow(clippy::unwrap_used)] // a test: a panic is the failure report
//! The organizer's emergency controls on both databases: mode, backend-down policy and message
//! stored with the version; a change conditional on a stale version refused with nothing
//! changed; bad input refused before anything is written; and the cap judged by the database
//! when sessions are opened without the meter, under real concurrency.

use std::collections::HashSet;

use reservation::testing::{fresh_postgres, fresh_sqlite, seeded_event};
use reservation::{
    AdmissionMode, AdmissionPatch, BackendDown, Error, MessageLevel, QueueMessage, Store, TicketId,
};

fn message(text: &str, level: MessageLevel) -> Option<Option<QueueMessage>> {
    Some(Some(QueueMessage {
        text: text.into(),
        level,
    }))
}

async fn controls(store: Store) {
    let event = seeded_event(&store, 2, |_| {}).await;
    let start = store.admission_control(&event).await.unwrap().unwrap();
    assert_eq!(
        (start.mode, start.on_backend_down, start.message.clone()),
        (AdmissionMode::Normal, BackendDown::FailClosed, None),
        "the defaults"
    );

    let set = store
        .update_admission_control(
            &event,
            &AdmissionPatch {
                mode: Some(AdmissionMode::Maintenance),
                on_backend_down: Some(BackendDown::FailOpen),
                message: message("Back at <b>9</b> — ünïcode", MessageLevel::Warning),
                expected_version: Some(start.version),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(set.version, start.version + 1);
    assert_eq!(set.mode, AdmissionMode::Maintenance);
    assert_eq!(set.on_backend_down, BackendDown::FailOpen);
    let shown = set.message.clone().unwrap();
    assert_eq!(
        shown.text, "Back at <b>9</b> — ünïcode",
        "stored as written"
    );
    assert_eq!(shown.level, MessageLevel::Warning);

    // A change made against the version read before the last one: refused, nothing changed.
    let stale = store
        .update_admission_control(
            &event,
            &AdmissionPatch {
                mode: Some(AdmissionMode::Normal),
                message: Some(None),
                expected_version: Some(start.version),
                ..Default::default()
            },
        )
        .await;
    assert!(
        matches!(stale, Err(Error::StaleVersion { current }) if current == set.version),
        "{stale:?}"
    );
    assert_eq!(store.admission_control(&event).await.unwrap().unwrap(), set);

    // Bad input: each refused before anything is written.
    let long = "é".repeat(reservation::MESSAGE_CHARS + 1);
    for bad in [
        AdmissionPatch {
            message: message(&long, MessageLevel::Info),
            ..Default::default()
        },
        AdmissionPatch {
            message: message("  \t ", MessageLevel::Info),
            ..Default::default()
        },
        AdmissionPatch {
            message: message("two\nlines", MessageLevel::Info),
            ..Default::default()
        },
        AdmissionPatch {
            mode: Some(AdmissionMode::Normal),
            expected_version: Some(0),
            ..Default::default()
        },
        AdmissionPatch {
            expected_version: Some(set.version),
            ..Default::default()
        },
    ] {
        assert!(
            store.update_admission_control(&event, &bad).await.is_err(),
            "{bad:?}"
        );
    }
    assert_eq!(store.admission_control(&event).await.unwrap().unwrap(), set);
    let at_the_limit = "é".repeat(reservation::MESSAGE_CHARS);
    store
        .update_admission_control(
            &event,
            &AdmissionPatch {
                message: message(&at_the_limit, MessageLevel::Info),
                ..Default::default()
            },
        )
        .await
        .unwrap();

    // Without a version the last writer wins; `Some(None)` clears the message.
    let cleared = store
        .update_admission_control(
            &event,
            &AdmissionPatch {
                mode: Some(AdmissionMode::PassThrough),
                message: Some(None),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(cleared.message, None);
    assert_eq!(cleared.mode, AdmissionMode::PassThrough);
    assert_eq!(cleared.on_backend_down, BackendDown::FailOpen, "kept");
}

/// Twenty claims at once for a cap of five: five sessions, never more; a ticket claiming again
/// gets its own session back even when full.
async fn capped(store: Store) {
    let event = seeded_event(&store, 2, |_| {}).await;
    let tickets: Vec<TicketId> = (0..20)
        .map(|i| format!("t{i:02}x").parse().unwrap())
        .collect();
    let claims = tickets.iter().map(|t| {
        let store = store.clone();
        let event = event.clone();
        let t = t.clone();
        async move { store.open_session_capped(&event, &t, None, 3600, 5).await }
    });
    let outcomes = futures::future::join_all(claims).await;
    let opened: Vec<_> = outcomes.into_iter().filter_map(Result::unwrap).collect();
    assert_eq!(opened.len(), 5, "exactly the cap");
    assert_eq!(store.active_sessions(&event).await.unwrap(), 5);
    let ids: HashSet<_> = opened.iter().map(|s| s.session_id.clone()).collect();
    assert_eq!(ids.len(), 5);
    let again = store
        .open_session_capped(&event, &opened[0].ticket_id, None, 3600, 5)
        .await
        .unwrap()
        .expect("its own session, though full");
    assert_eq!(again.session_id, opened[0].session_id);
    assert!(!again.created);
    let unknown = "nope".parse().unwrap();
    assert!(matches!(
        store
            .open_session_capped(&unknown, &tickets[0], None, 3600, 5)
            .await,
        Err(Error::EventNotFound)
    ));
}

#[tokio::test]
async fn admission_modes_on_postgres() {
    controls(fresh_postgres().await).await;
}

#[tokio::test]
async fn admission_modes_on_sqlite() {
    controls(fresh_sqlite().await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_database_holds_the_cap_under_concurrent_claims_on_postgres() {
    capped(fresh_postgres().await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_database_holds_the_cap_under_concurrent_claims_on_sqlite() {
    capped(fresh_sqlite().await).await;
}
