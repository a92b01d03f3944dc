//! The waiting-room page and the organizer dashboard, plain files from `static/` (no build
//! step). The folder is found beside the workspace by default, or at `FLOODGATE_STATIC_DIR`.

use std::path::PathBuf;

use axum::routing::{MethodRouter, get_service};
use tower_http::services::{ServeDir, ServeFile};

use crate::state::AppState;

fn static_dir() -> PathBuf {
    std::env::var_os("FLOODGATE_STATIC_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../static")))
}

/// The waiting-room page (`/`; `/events/{event}` serves it too, with the event's policy).
pub(crate) fn index() -> MethodRouter<AppState> {
    get_service(index_file())
}

pub(crate) fn index_file() -> ServeFile {
    ServeFile::new(static_dir().join("index.html"))
}

/// The organizer dashboard.
pub(crate) fn admin() -> MethodRouter<AppState> {
    get_service(ServeFile::new(static_dir().join("admin.html")))
}

/// Everything else under `/static`.
pub(crate) fn files() -> ServeDir {
    ServeDir::new(static_dir())
}
