//! What the database holds, read directly (never through the gateway): "nothing changed"
//! snapshots for bad input, and the figures the organizer's stats must match.

use std::collections::BTreeMap;

use reservation::Store;

/// Row counts of every table a buyer request can write, plus seats and holds by state.
/// Each test has its own database, so whole-table counts are this test's rows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rows(pub BTreeMap<String, i64>);

const TABLES: &[&str] = &[
    "admission_sessions",
    "holds",
    "payment_attempts",
    "orders",
    "sales",
    "outbox",
    "reservation_events",
    "idempotency_keys",
];

impl Rows {
    pub async fn of(store: &Store) -> Self {
        let mut counts = BTreeMap::new();
        for table in TABLES {
            let n = reservation::testing::table_count(store, table).await;
            counts.insert((*table).to_owned(), n);
        }
        for (table, column) in [
            ("seats", "state"),
            ("holds", "state"),
            ("payment_attempts", "state"),
        ] {
            for (state, n) in group(store, table, column).await {
                counts.insert(format!("{table}.{state}"), n);
            }
        }
        Self(counts)
    }

    pub fn get(&self, key: &str) -> i64 {
        self.0.get(key).copied().unwrap_or(0)
    }
}

/// `(state, rows)` of `table` grouped by `column`.
pub async fn group(store: &Store, table: &str, column: &str) -> BTreeMap<String, i64> {
    reservation::testing::group_counts(store, table, column).await
}
