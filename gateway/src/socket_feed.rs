//! What the waiting sockets of an event hear: the meter's snapshot, passed on at most once per
//! `PUSH_EVERY`. The meter ticks ten times a second and, while offers flow, every tick moves
//! every position; 15,000 sockets each told ten times a second was 150,000 frames a second,
//! which kept both cores of the 500,000-buyer soak busy with news nobody reads that fast.
//! A change of the event's state (paused, sold out, closed, reopened) or of the organizer's
//! message is passed on at once.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use admission::{Admission, QueueMessage, Snapshot};
use tokio::sync::watch;
use tokio::time::Instant;

/// The longest a waiting buyer's place goes untold while it changes. An offer is heard at most
/// this late, against an offer window of many seconds.
pub const PUSH_EVERY: Duration = Duration::from_secs(1);

/// One relayed feed per event, started by its first socket.
#[derive(Clone, Default)]
pub struct SocketFeeds(Arc<Mutex<HashMap<String, watch::Receiver<Arc<Snapshot>>>>>);

impl SocketFeeds {
    /// The event's paced feed; its current value is the latest snapshot.
    pub fn subscribe(&self, admission: &Admission, event: &str) -> watch::Receiver<Arc<Snapshot>> {
        let mut feeds = self.0.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(feed) = feeds.get(event) {
            return feed.clone();
        }
        let source = admission.subscribe(event);
        let (tx, rx) = watch::channel(source.borrow().clone());
        // Ends with the meter's feed. Not stopped at shutdown: a closed feed would end sockets
        // before they could say `reconnect`.
        tokio::spawn(relay(source, tx));
        feeds.insert(event.to_owned(), rx.clone());
        rx
    }
}

/// Passes the meter's snapshots on: state changes at once, position changes no more often
/// than `PUSH_EVERY` (the latest one wins; the ones in between are never sent).
async fn relay(mut source: watch::Receiver<Arc<Snapshot>>, tx: watch::Sender<Arc<Snapshot>>) {
    let news = |s: &Snapshot| (s.state, QueueMessage::fingerprint(s.message.as_ref()));
    let mut last_news = news(&source.borrow());
    let mut last_sent: Option<Instant> = None;
    while source.changed().await.is_ok() {
        let urgent = news(&source.borrow()) != last_news;
        if !urgent && let Some(at) = last_sent {
            // Wait out the pace, unless the event's state changes meanwhile.
            let paced = tokio::time::sleep_until(at + PUSH_EVERY);
            tokio::pin!(paced);
            loop {
                tokio::select! {
                    () = &mut paced => break,
                    changed = source.changed() => {
                        if changed.is_err() {
                            return;
                        }
                        if news(&source.borrow()) != last_news {
                            break;
                        }
                    }
                }
            }
        }
        let snapshot = source.borrow_and_update().clone();
        last_news = news(&snapshot);
        tx.send_replace(snapshot);
        last_sent = Some(Instant::now());
    }
}

#[cfg(test)]
mod tests {
    use admission::EventState;

    use super::*;

    fn snapshot(served: u64, state: EventState) -> Arc<Snapshot> {
        Arc::new(Snapshot {
            served,
            state,
            ..Snapshot::default()
        })
    }

    #[tokio::test(start_paused = true)]
    async fn places_are_paced_and_state_changes_are_not() {
        let (meter, source) = watch::channel(snapshot(0, EventState::Open));
        let (tx, mut heard) = watch::channel(source.borrow().clone());
        tokio::spawn(relay(source, tx));

        // After a quiet spell the first change goes out at once.
        let start = Instant::now();
        meter.send_replace(snapshot(1, EventState::Open));
        heard.changed().await.expect("relay alive");
        assert_eq!(heard.borrow_and_update().served, 1);
        assert_eq!(start.elapsed(), Duration::ZERO);

        // Ten ticks within the next second: only the latest is passed on, a second after the
        // previous push.
        for served in 2..=11 {
            tokio::time::sleep(Duration::from_millis(90)).await;
            meter.send_replace(snapshot(served, EventState::Open));
        }
        heard.changed().await.expect("relay alive");
        assert_eq!(heard.borrow_and_update().served, 11);
        assert_eq!(start.elapsed(), PUSH_EVERY);

        // A place change starts the pace again; a sell-out during it is not held back.
        tokio::time::sleep(Duration::from_millis(100)).await;
        meter.send_replace(snapshot(12, EventState::Open));
        tokio::time::sleep(Duration::from_millis(100)).await;
        let sold_out_at = Instant::now();
        meter.send_replace(snapshot(13, EventState::SoldOut));
        heard.changed().await.expect("relay alive");
        let now = heard.borrow_and_update().clone();
        assert_eq!((now.served, now.state), (13, EventState::SoldOut));
        assert_eq!(sold_out_at.elapsed(), Duration::ZERO);

        // And right after a push, a state change still goes at once.
        let reopened_at = Instant::now();
        meter.send_replace(snapshot(13, EventState::Open));
        heard.changed().await.expect("relay alive");
        assert_eq!(heard.borrow_and_update().state, EventState::Open);
        assert_eq!(reopened_at.elapsed(), Duration::ZERO);
    }
}
