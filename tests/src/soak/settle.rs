//! After the last buyer: wait until every payment attempt of the event has reached a final
//! state and the outbox has done its work (captures, voids, refunds), so the verdict can demand
//! the settled end state.

use std::time::{Duration, Instant};

use reservation::{EventId, Store};
use sqlx::Row;

use super::config::Config;

pub async fn wait(store: &Store, event: &EventId, config: &Config) -> anyhow::Result<()> {
    let until = Instant::now() + Duration::from_secs(config.settle_s);
    loop {
        let open: i64 = sqlx::query(
            "select (select count(*) from payment_attempts where event_id = $1 \
                      and state in ('pending', 'ambiguous', 'authorized')) \
                  + (select count(*) from outbox where event_id = $1 and done_at is null) as n",
        )
        .bind(event.as_str())
        .fetch_one(store.pool())
        .await?
        .try_get("n")?;
        if open == 0 {
            return Ok(());
        }
        if Instant::now() >= until {
            eprintln!(
                "[soak] {open} payment attempts or outbox jobs still open after --settle-s; judging anyway"
            );
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}
