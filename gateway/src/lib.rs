//! Floodgate gateway.
