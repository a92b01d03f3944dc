//! Which commits wait for the disk (PostgreSQL). A hold is working state: its commit does not
//! wait (a crash that loses it frees a seat nobody paid for). Begin-payment is the first
//! financial record and waits; since the WAL is flushed in order, its flush also covers the
//! hold it came from.

use reservation::testing::{fresh_postgres, seeded_event, session};
use reservation::{SeatId, Store};

fn seat(id: &str) -> Vec<SeatId> {
    vec![id.parse().expect("seat id")]
}

/// `synchronous_commit` as the transaction that ran `call` would commit with.
async fn commit_setting(store: &Store, call: &str, args: &[&str]) -> String {
    let mut tx = store.pool().begin().await.expect("begin");
    let placeholders: Vec<String> = (1..=args.len()).map(|n| format!("${n}")).collect();
    let sql = format!("select outcome from {call}({})", placeholders.join(", "));
    let mut query = sqlx::query_scalar(sqlx::AssertSqlSafe(sql));
    for arg in args {
        query = query.bind(*arg);
    }
    let outcome: String = query.fetch_one(&mut *tx).await.expect("call");
    assert!(
        outcome == "held" || outcome == "paying",
        "{call}: {outcome}"
    );
    let setting: String = sqlx::query_scalar("select current_setting('synchronous_commit')")
        .fetch_one(&mut *tx)
        .await
        .expect("setting");
    tx.rollback().await.expect("rollback");
    setting
}

#[tokio::test]
async fn a_hold_commits_without_waiting_and_begin_payment_waits() {
    let store = fresh_postgres().await;
    let event = seeded_event(&store, 4, |_| {}).await;
    let s = session(&store, &event).await;
    assert_eq!(
        commit_setting(
            &store,
            "fg_hold",
            &[s.as_str(), r#"["S00001"]"#, "h_probe", "r"]
        )
        .await,
        "off"
    );
    let hold = store.hold(&s, &seat("S00002")).await.expect("hold");
    assert_eq!(
        commit_setting(
            &store,
            "fg_begin_payment",
            &[
                s.as_str(),
                hold.hold_id.as_str(),
                "pa_probe",
                "pm_card_visa",
                "https://shop.example/back"
            ]
        )
        .await,
        "on"
    );
    store.close().await;
}

#[tokio::test]
async fn begin_payment_flushes_the_wal_past_its_hold() {
    let store = fresh_postgres().await;
    let event = seeded_event(&store, 4, |_| {}).await;
    let s = session(&store, &event).await;
    let hold = store.hold(&s, &seat("S00001")).await.expect("hold");
    // Everything the hold wrote, its commit record included, lies before this position.
    let after_hold: String = sqlx::query_scalar("select pg_current_wal_insert_lsn()::text")
        .fetch_one(store.pool())
        .await
        .expect("insert lsn");
    store
        .begin_payment(&s, &hold.hold_id, "pm_card_visa")
        .await
        .expect("begin payment");
    // Begin-payment returned only after its commit was flushed, so the flushed WAL covers
    // the hold as well.
    let covered: bool = sqlx::query_scalar(sqlx::AssertSqlSafe(format!(
        "select pg_current_wal_flush_lsn() >= '{after_hold}'::pg_lsn"
    )))
    .fetch_one(store.pool())
    .await
    .expect("flush lsn");
    assert!(covered, "the hold's WAL is not flushed after begin-payment");
    store.close().await;
}
