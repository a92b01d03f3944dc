//! `GET /api/admin/events/{event}/exports/{orders|sales|holds|admissions|audit}.csv`: an
//! event's records as streamed CSV (`csv_stream.rs`), one route per file so the document
//! names each exactly. Viewers may export.

use axum::extract::State;
use axum::response::Response;

use reservation::{EventId, Export};

use crate::auth::Organizer;
use crate::extract::PathId;
use crate::problem::Problem;
use crate::state::AppState;

async fn export(state: AppState, event: EventId, export: Export) -> Result<Response, Problem> {
    state.store.get_event(&event).await?;
    let slot = state.exports.clone().try_acquire_owned().map_err(|_| {
        Problem::overloaded("as many exports as this instance streams at once are running")
    })?;
    Ok(crate::csv_stream::respond(
        state.store.clone(),
        export,
        event,
        slot,
    ))
}

macro_rules! export_route {
    ($name:ident, $export:expr) => {
        pub(crate) async fn $name(
            State(state): State<AppState>,
            PathId(event): PathId<EventId>,
            _: Organizer,
        ) -> Result<Response, Problem> {
            export(state, event, $export).await
        }
    };
}

export_route!(orders, Export::Orders);
export_route!(sales, Export::Sales);
export_route!(holds, Export::Holds);
export_route!(admissions, Export::Admissions);
export_route!(audit, Export::Audit);
