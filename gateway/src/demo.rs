//! The `demo` event of the embedded default: opens at start, a few hundred seats in three
//! sections, brisk admission so a person trying it out gets in within a minute.

use reservation::{EventId, NewEvent, Store};

pub const DEMO_EVENT: &str = "demo";

pub async fn seed(store: &Store) -> anyhow::Result<()> {
    let event: EventId = DEMO_EVENT.parse()?;
    if store.get_event(&event).await.is_ok() {
        return Ok(());
    }
    let mut spec = NewEvent::new(event.clone(), "Floodgate demo night");
    spec.hold_ttl_s = 300;
    spec.max_hold_s = 600;
    spec.max_seats_per_hold = 6;
    spec.abandon_s = 300;
    spec.rate_per_min = 120;
    spec.max_active = 50;
    spec.session_s = 1200;
    spec.offer_s = 60;
    if let Err(error) = store.create_event(spec).await {
        // Another instance seeding at the same moment is fine; anything else is not.
        if store.get_event(&event).await.is_err() {
            return Err(error.into());
        }
        return Ok(());
    }
    for (section, rows, per_row, price_cents) in [
        ("Floor", 6, 20, 12_000),
        ("Balcony", 8, 16, 7_500),
        ("Gallery", 4, 12, 4_500),
    ] {
        store
            .generate_seats(&event, section, rows, per_row, price_cents)
            .await?;
    }
    tracing::info!(event = DEMO_EVENT, "demo event seeded");
    Ok(())
}
