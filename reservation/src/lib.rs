//! Floodgate reservation core.
