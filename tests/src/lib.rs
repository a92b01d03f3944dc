//! Floodgate end-to-end support.
