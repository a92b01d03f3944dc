//! A pre-queue buyer on the WebSocket hears their own offer when it is made, not only once the
//! whole pre-queue has been offered (their place is their rank in the permutation, which the
//! socket must ask the queue backend for, as polling does).

use crate::support;

use futures::future::select_all;
use serde_json::json;

use support::{Backends, spawn_app};

const PRE_QUEUE: usize = 5;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pre_queue_buyer_hears_the_offer_before_the_pre_queue_has_drained() {
    let app = spawn_app(Backends::Postgres).await;
    // One offer a second: the pre-queue of five takes about five seconds to drain.
    let opens_at = time::OffsetDateTime::now_utc() + time::Duration::seconds(3);
    let opens_at = opens_at
        .format(&time::format_description::well_known::Rfc3339)
        .expect("format");
    let event = app
        .create_event_with(
            10,
            json!({"opens_at": opens_at, "admission": {"rate_per_min": 60, "max_active": 100, "offer_s": 60}}),
        )
        .await;
    let mut sockets = Vec::new();
    for _ in 0..PRE_QUEUE {
        let queued = app.join_queue(&event).await;
        sockets.push(app.open_socket(&queued).await);
    }
    // Whoever hears "offered" first: at that moment the pre-queue has not drained yet.
    let heard = sockets
        .iter_mut()
        .map(|s| Box::pin(s.next_of("offered")))
        .collect::<Vec<_>>();
    let (offer, _, _) = select_all(heard).await;
    let stats = app.stats(&event).await;
    let served = stats["queue"]["served"].as_u64().expect("served");
    assert!(
        served < PRE_QUEUE as u64,
        "the first pre-queue offer was heard only after {served} of {PRE_QUEUE} were offered: {offer} {stats:#}"
    );
}
