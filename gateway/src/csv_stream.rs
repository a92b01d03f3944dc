//! An organizer's export as a streamed CSV body (RFC 4180, written by the `csv` crate). A
//! task reads the export a page at a time and hands each page's bytes to the body through a
//! channel of two, so the gateway holds at most a few pages whatever the export's size and
//! however slowly the client reads. A client that takes nothing for `STALLED_AFTER` loses the
//! export (the connection is cut, never ended as if the file were whole), freeing its slot.

use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};
use tokio::sync::{OwnedSemaphorePermit, mpsc};

use reservation::{Cell, EXPORT_PAGE, EventId, Export, ExportRow, Store};

use crate::clock::rfc3339;

/// Exports one instance streams at once; each reads one page query at a time.
pub const EXPORTS_AT_ONCE: usize = 4;
/// How long a page may wait for the client to take the one before it.
const STALLED_AFTER: Duration = Duration::from_secs(60);

enum Piece {
    Bytes(Bytes),
    /// Every row was sent: the body ends cleanly.
    End,
}

/// A cell a spreadsheet would run as a formula (`=`, `+`, `-`, `@`, tab, carriage return at
/// its start) gets a leading `'`, so opening an export never runs what a buyer or an
/// organizer typed into a name or a message.
pub fn defuse(cell: &str) -> std::borrow::Cow<'_, str> {
    match cell.as_bytes().first() {
        Some(b'=' | b'+' | b'-' | b'@' | b'\t' | b'\r') => format!("'{cell}").into(),
        _ => cell.into(),
    }
}

fn text(cell: &Cell) -> String {
    match cell {
        Cell::Text(Some(text)) => defuse(text).into_owned(),
        Cell::Int(Some(n)) => n.to_string(),
        Cell::Time(Some(ms)) => rfc3339(*ms),
        Cell::Text(None) | Cell::Int(None) | Cell::Time(None) => String::new(),
    }
}

/// The CSV bytes of `rows`, after the header when `header` is given.
fn page(header: Option<&[&str]>, rows: &[ExportRow]) -> Result<Bytes, csv::Error> {
    let mut out = csv::WriterBuilder::new()
        .terminator(csv::Terminator::CRLF)
        .from_writer(Vec::with_capacity(64 * 1024));
    if let Some(header) = header {
        out.write_record(header)?;
    }
    for row in rows {
        out.write_record(row.cells.iter().map(text))?;
    }
    let bytes = out
        .into_inner()
        .map_err(|e| csv::Error::from(e.into_error()))?;
    Ok(Bytes::from(bytes))
}

/// Reads `export` page after page into `pieces`, until the end, an error, or a stalled client.
async fn produce(
    store: Store,
    export: Export,
    event: EventId,
    pieces: mpsc::Sender<Piece>,
    _slot: OwnedSemaphorePermit,
) {
    let mut after: Option<String> = None;
    let mut header = Some(export.header());
    loop {
        let rows = match store.export_page(export, &event, after.as_deref()).await {
            Ok(rows) => rows,
            Err(error) => {
                tracing::error!(%error, export = export.name(), "export page read failed");
                return;
            }
        };
        let bytes = match page(header.take(), &rows) {
            Ok(bytes) => bytes,
            Err(error) => {
                tracing::error!(%error, export = export.name(), "export page write failed");
                return;
            }
        };
        let last = rows.len() < usize::try_from(EXPORT_PAGE).unwrap_or(usize::MAX);
        after = rows.last().map(|row| row.key.clone());
        if !bytes.is_empty()
            && pieces
                .send_timeout(Piece::Bytes(bytes), STALLED_AFTER)
                .await
                .is_err()
        {
            return;
        }
        if last {
            let _ = pieces.send_timeout(Piece::End, STALLED_AFTER).await;
            return;
        }
    }
}

/// The streamed `text/csv` answer of `export` for `event`; `slot` is held until it ends.
pub fn respond(
    store: Store,
    export: Export,
    event: EventId,
    slot: OwnedSemaphorePermit,
) -> Response {
    let (pieces, taken) = mpsc::channel(2);
    let disposition = format!(
        "attachment; filename=\"{}-{}.csv\"",
        event.as_str(),
        export.name()
    );
    tokio::spawn(produce(store, export, event, pieces, slot));
    // The state is the receiver while the body goes on, `None` once it was cut.
    let stream = futures::stream::unfold(Some(taken), |taken| async move {
        let mut taken = taken?;
        match taken.recv().await {
            Some(Piece::Bytes(bytes)) => Some((Ok(bytes), Some(taken))),
            Some(Piece::End) => None,
            // The reader stopped before the end: cut the connection rather than end the
            // body, so no client takes a partial export for the whole one.
            None => Some((
                Err(std::io::Error::other("the export stopped before its end")),
                None,
            )),
        }
    });
    let mut response = Body::from_stream(stream).into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/csv; charset=utf-8"),
    );
    if let Ok(value) = HeaderValue::from_str(&disposition) {
        headers.insert(header::CONTENT_DISPOSITION, value);
    }
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formula_starts_are_defused_and_the_rest_kept() {
        for (cell, shown) in [
            ("=1+1", "'=1+1"),
            ("+49 30", "'+49 30"),
            ("-3", "'-3"),
            ("@SUM(A1)", "'@SUM(A1)"),
            ("\tx", "'\tx"),
            ("\rx", "'\rx"),
            ("A-1 A-2", "A-1 A-2"),
            ("", ""),
            ("a=b", "a=b"),
        ] {
            assert_eq!(defuse(cell), shown);
        }
    }

    #[test]
    fn a_page_is_rfc_4180() {
        let rows = vec![ExportRow {
            key: "k".into(),
            cells: vec![
                Cell::Text(Some("say \"hi\", then\nleave".into())),
                Cell::Int(Some(42)),
                Cell::Time(None),
            ],
        }];
        let bytes = page(Some(&["a", "b", "c"]), &rows).unwrap();
        assert_eq!(
            std::str::from_utf8(&bytes).unwrap(),
            "a,b,c\r\n\"say \"\"hi\"\", then\nleave\",42,\r\n"
        );
    }
}
