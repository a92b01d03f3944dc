//! Failpoints: named places in the saga where a test can pause the flow or crash it.
//!
//! Call sites write `failpoint::hit(Point::AfterHold, event_id).await?;`. Without the
//! `failpoints` cargo feature `hit` is an empty `async fn` returning `Ok(())`, which the
//! optimizer removes, and there is no way to arm anything.
//!
//! With the feature, a test arms a point for one **scope** and it fires once:
//! - [`pause`]: the task that reaches the point awaits a oneshot until the test releases it
//!   (an async barrier: the runtime thread stays free, unlike the `fail` crate's pauses); the
//!   test can await "reached" first. Dropping the handle releases the task too.
//! - [`crash`]: `hit` returns `Err(FailpointCrash)`, which the caller propagates, so the task
//!   ends there as if the process had died at that point.
//!
//! The scope is the **event id** at every call site. Tests run in parallel in one process, and
//! each owns a unique event id, so arming `(point, event)` never trips another test. A test
//! that owns the whole process may arm [`ANY_SCOPE`].

/// The boundaries DESIGN.md §7 asks fault injection to cover.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Point {
    AfterHold,
    AfterPayingCommitted,
    AfterProviderAuthorized,
    BeforeFinalizeCommit,
    InsideSweeper,
}

impl Point {
    pub fn as_str(self) -> &'static str {
        match self {
            Point::AfterHold => "after_hold",
            Point::AfterPayingCommitted => "after_paying_committed",
            Point::AfterProviderAuthorized => "after_provider_authorized",
            Point::BeforeFinalizeCommit => "before_finalize_commit",
            Point::InsideSweeper => "inside_sweeper",
        }
    }
}

/// The flow was "killed" at a failpoint; callers propagate it and stop.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("failpoint {} crashed the task", .0.as_str())]
pub struct FailpointCrash(pub Point);

/// Marks a failpoint. A no-op unless the `failpoints` feature is on and a test armed it.
#[cfg(not(feature = "failpoints"))]
#[inline(always)]
pub async fn hit(_point: Point, _scope: &str) -> Result<(), FailpointCrash> {
    Ok(())
}

/// Whether any scope has armed `point` (always false without the feature).
#[cfg(not(feature = "failpoints"))]
#[inline(always)]
pub fn armed(_point: Point) -> bool {
    false
}

#[cfg(feature = "failpoints")]
mod armed;
#[cfg(feature = "failpoints")]
pub use armed::{ANY_SCOPE, Armed, Paused, armed, crash, hit, pause};
