//! The seat map and "seats left" per event, cached and refreshed at most once a second. Both
//! may lag by design: they are shown to buyers, never used to decide anything (the conditional
//! UPDATE decides). Concurrent misses for one event wait for one load instead of each querying.

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use sha2::{Digest, Sha256};

use crate::look::Framing;
use crate::seat_sections::Stadium;

pub const MAX_AGE: Duration = Duration::from_secs(1);

#[derive(Clone, Debug)]
pub struct SeatSnapshot {
    /// The `GET …/seats` body, serialized once per refresh.
    pub body: Bytes,
    /// A strong ETag of the body.
    pub etag: String,
    pub seats_left: u64,
    /// The event's own fields for `GET /api/events/{event}`, read in the same refresh, so the
    /// most-read route costs no query per request.
    pub summary: serde_json::Value,
    /// The same seats cut for a stadium: sections, section bodies, changes by version.
    pub stadium: Arc<Stadium>,
    /// What the event's page adds to its Content-Security-Policy.
    pub framing: Arc<Framing>,
    taken_at: Instant,
}

impl SeatSnapshot {
    pub fn new(body: Bytes, seats_left: u64, summary: serde_json::Value) -> Self {
        let etag = format!("\"{}\"", hex::encode(&Sha256::digest(&body)[..12]));
        Self {
            body,
            etag,
            seats_left,
            summary,
            stadium: Arc::default(),
            framing: Arc::default(),
            taken_at: Instant::now(),
        }
    }

    pub fn with_stadium(mut self, stadium: Stadium) -> Self {
        self.stadium = Arc::new(stadium);
        self
    }

    pub fn with_framing(mut self, framing: Framing) -> Self {
        self.framing = Arc::new(framing);
        self
    }
}

#[derive(Clone, Default)]
pub struct SeatCache {
    entries: Arc<Mutex<HashMap<String, Slot>>>,
}

type Slot = Arc<tokio::sync::Mutex<Option<SeatSnapshot>>>;

impl SeatCache {
    /// The event's snapshot, loading a new one with `load` when the cached one is older than
    /// `MAX_AGE`. Only one load per event runs at a time; the others wait for its result.
    pub async fn get<F, Fut, E>(&self, event: &str, load: F) -> Result<SeatSnapshot, E>
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = Result<SeatSnapshot, E>>,
    {
        let slot = {
            let mut entries = self
                .entries
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner());
            entries.entry(event.to_owned()).or_default().clone()
        };
        let mut cached = slot.lock().await;
        if let Some(snapshot) = cached.as_ref().filter(|s| s.taken_at.elapsed() < MAX_AGE) {
            return Ok(snapshot.clone());
        }
        match load().await {
            Ok(fresh) => {
                *cached = Some(fresh.clone());
                Ok(fresh)
            }
            Err(error) => {
                // Nothing is kept for an event that failed to load (an unknown id above all):
                // a flood of made-up ids must leave no entry behind.
                if cached.is_none() {
                    let mut entries = self
                        .entries
                        .lock()
                        .unwrap_or_else(|poisoned| poisoned.into_inner());
                    if entries.get(event).is_some_and(|s| Arc::ptr_eq(s, &slot)) {
                        entries.remove(event);
                    }
                }
                Err(error)
            }
        }
    }

    /// Events with a cached entry (or a load under way).
    pub fn len(&self) -> usize {
        self.entries
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Forget an event's snapshot (after an organizer adds seats).
    pub fn invalidate(&self, event: &str) {
        self.entries
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .remove(event);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[tokio::test]
    async fn concurrent_misses_load_once_and_fresh_hits_do_not_load() {
        let cache = SeatCache::default();
        let loads = Arc::new(AtomicUsize::new(0));
        let mut tasks = Vec::new();
        for _ in 0..20 {
            let (cache, loads) = (cache.clone(), loads.clone());
            tasks.push(tokio::spawn(async move {
                cache
                    .get("e1", || async {
                        loads.fetch_add(1, Ordering::SeqCst);
                        tokio::time::sleep(Duration::from_millis(20)).await;
                        Ok::<_, ()>(SeatSnapshot::new(
                            Bytes::from_static(b"{}"),
                            3,
                            serde_json::Value::Null,
                        ))
                    })
                    .await
            }));
        }
        for task in tasks {
            assert_eq!(task.await.unwrap().unwrap().seats_left, 3);
        }
        assert_eq!(loads.load(Ordering::SeqCst), 1);
    }

    #[tokio::test]
    async fn a_failed_load_leaves_no_entry() {
        let cache = SeatCache::default();
        for n in 0..100 {
            let failed = cache
                .get(&format!("made-up-{n}"), || async {
                    Err::<SeatSnapshot, _>("unknown")
                })
                .await;
            assert!(failed.is_err());
        }
        assert!(cache.is_empty(), "{} entries kept", cache.len());
    }

    #[test]
    fn etag_changes_with_the_body() {
        let a = SeatSnapshot::new(Bytes::from_static(b"a"), 1, serde_json::Value::Null);
        let b = SeatSnapshot::new(Bytes::from_static(b"b"), 1, serde_json::Value::Null);
        assert_ne!(a.etag, b.etag);
        assert!(a.etag.starts_with('"') && a.etag.ends_with('"'));
    }
}
