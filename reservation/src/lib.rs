//! Floodgate reservation core.
pub mod failpoint;
pub mod payments;
