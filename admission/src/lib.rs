//! Floodgate admission.
