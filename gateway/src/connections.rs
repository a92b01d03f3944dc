//! Serving connections: hyper's HTTP/1.1 with a timer, so a client that opens a connection
//! and sends its request line a byte at a time (or nothing at all, or nothing more after a
//! keep-alive answer) is dropped at the header deadline instead of holding a file for good;
//! and a cap on open connections, so a flood of idle sockets cannot spend the 20,000 files a
//! process may have and leave none for the database, Redis or the next buyer.
//!
//! A connection's slot travels with its socket: a WebSocket upgrade keeps it for as long as
//! the waiting buyer stays.

use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::Request;
use axum::serve::Listener;
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::sync::{OwnedSemaphorePermit, Semaphore, watch};
use tower::{Service, ServiceExt};

/// What a connection may cost, from the configuration.
#[derive(Clone, Copy, Debug)]
pub struct ConnectionLimits {
    /// From a connection's start (or the end of its last answer) to the end of a request's
    /// headers.
    pub header_timeout: Duration,
    /// Connections open at once, WebSockets included; past it a new one is closed at once.
    pub max_connections: usize,
}

/// Serves `app` on `listener` until `stopping` completes, then lets the open connections
/// finish their requests (upgraded sockets are told by the application) and returns.
pub async fn serve<L>(
    mut listener: L,
    app: Router,
    limits: ConnectionLimits,
    stopping: impl Future<Output = ()>,
) where
    L: Listener<Addr = SocketAddr>,
    L::Io: Unpin,
{
    let mut make_service = app.into_make_service_with_connect_info::<SocketAddr>();
    let slots = Arc::new(Semaphore::new(limits.max_connections.max(1)));
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(limits.header_timeout);
    let (stop_tx, stop_rx) = watch::channel(false);
    // Every connection task holds a clone; the last one gone closes the channel.
    let (open_tx, open_rx) = watch::channel(());
    let mut stopping = std::pin::pin!(stopping);
    loop {
        let (io, addr) = tokio::select! {
            () = &mut stopping => break,
            accepted = listener.accept() => accepted,
        };
        let Ok(slot) = slots.clone().try_acquire_owned() else {
            // Accepted only to be closed: left in the backlog it would be answered later by a
            // gateway that has no room then either, and the client would wait for nothing.
            metrics::counter!("floodgate_rejections_total", "status" => "closed", "reason" => "connections")
                .increment(1);
            drop(io);
            continue;
        };
        let service = match make_service.call(addr).await {
            Ok(service) => service,
            Err(never) => match never {},
        };
        let service = TowerToHyperService::new(
            service.map_request(|request: Request<Incoming>| request.map(Body::new)),
        );
        let connection = http
            .serve_connection(TokioIo::new(Slotted { io, _slot: slot }), service)
            .with_upgrades();
        let (mut stop, open) = (stop_rx.clone(), open_rx.clone());
        tokio::spawn(async move {
            let mut connection = std::pin::pin!(connection);
            let stopping = async move {
                let _ = stop.wait_for(|stopping| *stopping).await;
            };
            tokio::select! {
                served = connection.as_mut() => {
                    if let Err(error) = served {
                        tracing::debug!(%error, %addr, "connection ended");
                    }
                }
                () = stopping => {
                    // Finish the request in progress, then close.
                    connection.as_mut().graceful_shutdown();
                    if let Err(error) = connection.await {
                        tracing::debug!(%error, %addr, "connection ended while stopping");
                    }
                }
            }
            drop(open);
        });
    }
    drop(listener);
    let _ = stop_tx.send(true);
    drop(open_rx);
    open_tx.closed().await;
}

/// A connection's socket holding its slot under the cap; the slot is given back when the
/// socket closes, whether it served plain requests or was upgraded to a WebSocket.
struct Slotted<IO> {
    io: IO,
    _slot: OwnedSemaphorePermit,
}

impl<IO: AsyncRead + Unpin> AsyncRead for Slotted<IO> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_read(cx, buf)
    }
}

impl<IO: AsyncWrite + Unpin> AsyncWrite for Slotted<IO> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.io).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.io).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }
}
