//! The waiting-room page and the organizer dashboard, plain files from `static/` (no build
//! step). The folder is found beside the workspace by default, or at `FLOODGATE_STATIC_DIR`.

use std::path::PathBuf;

use axum::Router;
use axum::routing::get_service;
use tower_http::services::{ServeDir, ServeFile};

use crate::state::AppState;

fn static_dir() -> PathBuf {
    std::env::var_os("FLOODGATE_STATIC_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../static")))
}

pub fn router() -> Router<AppState> {
    let dir = static_dir();
    let index = ServeFile::new(dir.join("index.html"));
    Router::new()
        .route_service("/", get_service(index.clone()))
        .route_service("/events/{event}", get_service(index))
        .route_service(
            "/admin",
            get_service(ServeFile::new(dir.join("admin.html"))),
        )
        .nest_service("/static", ServeDir::new(dir))
}
