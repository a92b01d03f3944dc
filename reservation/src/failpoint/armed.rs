//! The registry behind armed failpoints (only with the `failpoints` feature).

use std::collections::HashMap;
use std::sync::{LazyLock, Mutex, MutexGuard, PoisonError};

use tokio::sync::oneshot;

use super::{FailpointCrash, Point};

/// Arms a point for every scope; for tests that own the whole process.
pub const ANY_SCOPE: &str = "*";

enum Action {
    Crash,
    Pause {
        reached: oneshot::Sender<()>,
        release: oneshot::Receiver<()>,
    },
}

type Registry = HashMap<(Point, String), Action>;

static REGISTRY: LazyLock<Mutex<Registry>> = LazyLock::new(|| Mutex::new(HashMap::new()));

fn registry() -> MutexGuard<'static, Registry> {
    REGISTRY.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Marks a failpoint: fires the action armed for `(point, scope)` (or `ANY_SCOPE`), once.
pub async fn hit(point: Point, scope: &str) -> Result<(), FailpointCrash> {
    let action = {
        let mut reg = registry();
        reg.remove(&(point, scope.to_owned()))
            .or_else(|| reg.remove(&(point, ANY_SCOPE.to_owned())))
    };
    match action {
        None => Ok(()),
        Some(Action::Crash) => {
            tracing::info!(point = point.as_str(), scope, "failpoint crash");
            Err(FailpointCrash(point))
        }
        Some(Action::Pause { reached, release }) => {
            tracing::info!(point = point.as_str(), scope, "failpoint pause");
            // The test may have stopped listening; the pause still holds until release.
            let _ = reached.send(());
            // Released explicitly, or implicitly when the test drops its handle.
            let _ = release.await;
            Ok(())
        }
    }
}

/// Whether any scope has armed `point` and it has not fired yet.
pub fn armed(point: Point) -> bool {
    registry().keys().any(|(p, _)| *p == point)
}

/// Keeps a point armed; dropping it disarms the point if it has not fired yet.
#[derive(Debug)]
pub struct Armed {
    point: Point,
    scope: String,
}

impl Drop for Armed {
    fn drop(&mut self) {
        registry().remove(&(self.point, std::mem::take(&mut self.scope)));
    }
}

fn arm(point: Point, scope: &str, action: Action) -> Armed {
    registry().insert((point, scope.to_owned()), action);
    Armed {
        point,
        scope: scope.to_owned(),
    }
}

/// Arms a one-shot crash: the next `hit(point, scope)` returns `Err(FailpointCrash)`.
pub fn crash(point: Point, scope: &str) -> Armed {
    arm(point, scope, Action::Crash)
}

/// The test's side of an armed pause.
#[derive(Debug)]
pub struct Paused {
    reached: oneshot::Receiver<()>,
    release: Option<oneshot::Sender<()>>,
    _armed: Armed,
}

impl Paused {
    /// Resolves once a task is parked at the point. Returns `false` if the point was disarmed
    /// without being reached.
    pub async fn reached(&mut self) -> bool {
        (&mut self.reached).await.is_ok()
    }

    /// Lets the parked task go on.
    pub fn release(mut self) {
        if let Some(tx) = self.release.take() {
            let _ = tx.send(());
        }
    }
}

/// Arms a one-shot pause at `(point, scope)`.
pub fn pause(point: Point, scope: &str) -> Paused {
    let (reached_tx, reached_rx) = oneshot::channel();
    let (release_tx, release_rx) = oneshot::channel();
    let armed = arm(
        point,
        scope,
        Action::Pause {
            reached: reached_tx,
            release: release_rx,
        },
    );
    Paused {
        reached: reached_rx,
        release: Some(release_tx),
        _armed: armed,
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::time::Duration;

    use super::*;

    // One runtime thread: if a pause blocked the thread, the test itself could never run
    // again to release it, and would hang instead of passing.
    #[tokio::test(flavor = "current_thread", start_paused = true)]
    async fn a_pause_parks_the_task_without_blocking_the_runtime() {
        let mut paused = pause(Point::AfterHold, "ev-pause");
        let done = Arc::new(AtomicBool::new(false));
        let flag = done.clone();
        let task = tokio::spawn(async move {
            hit(Point::AfterHold, "ev-pause").await?;
            flag.store(true, Ordering::SeqCst);
            Ok::<_, FailpointCrash>(())
        });
        assert!(paused.reached().await);
        tokio::time::sleep(Duration::from_secs(60)).await;
        assert!(
            !done.load(Ordering::SeqCst),
            "the task must wait at the point"
        );
        paused.release();
        task.await.unwrap().unwrap();
        assert!(done.load(Ordering::SeqCst));
        // One-shot: the next pass goes straight through.
        hit(Point::AfterHold, "ev-pause").await.unwrap();
    }

    #[tokio::test]
    async fn dropping_the_handle_releases_the_task() {
        let mut paused = pause(Point::InsideSweeper, "ev-drop");
        let task = tokio::spawn(hit(Point::InsideSweeper, "ev-drop"));
        assert!(paused.reached().await);
        drop(paused);
        assert_eq!(task.await.unwrap(), Ok(()));
    }

    #[tokio::test]
    async fn a_crash_fires_once_and_only_in_its_scope() {
        let _armed = crash(Point::BeforeFinalizeCommit, "ev-crash");
        assert_eq!(hit(Point::BeforeFinalizeCommit, "ev-other").await, Ok(()));
        assert_eq!(hit(Point::AfterHold, "ev-crash").await, Ok(()));
        assert_eq!(
            hit(Point::BeforeFinalizeCommit, "ev-crash").await,
            Err(FailpointCrash(Point::BeforeFinalizeCommit))
        );
        assert_eq!(hit(Point::BeforeFinalizeCommit, "ev-crash").await, Ok(()));
    }

    #[tokio::test]
    async fn a_dropped_guard_disarms() {
        drop(crash(Point::AfterPayingCommitted, "ev-disarm"));
        assert_eq!(hit(Point::AfterPayingCommitted, "ev-disarm").await, Ok(()));
    }

    #[tokio::test]
    async fn many_parallel_scopes_do_not_interfere() {
        let armed: Vec<_> = (0..50)
            .map(|i| crash(Point::AfterProviderAuthorized, &format!("ev-par-{i}")))
            .collect();
        let tasks: Vec<_> = (0..100)
            .map(|i| {
                tokio::spawn(async move {
                    hit(Point::AfterProviderAuthorized, &format!("ev-par-{i}")).await
                })
            })
            .collect();
        for (i, t) in tasks.into_iter().enumerate() {
            assert_eq!(t.await.unwrap().is_err(), i < 50, "scope {i}");
        }
        drop(armed);
    }
}
