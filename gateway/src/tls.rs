//! HTTPS for the buyer's hop: a listener that hands axum connections whose TLS handshake is
//! done. Handshakes run in their own tasks, never in the accept loop, so a slow or silent
//! client cannot stall everyone else's connections during an on-sale's connect storm.

use std::io;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use rustls::ServerConfig;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Semaphore, mpsc};
use tokio_rustls::TlsAcceptor;
use tokio_rustls::server::TlsStream;

/// A client that has not finished its handshake by then is dropped.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// Handshakes in progress at once; past it the accept loop waits and the kernel's backlog
/// holds the rest, as it does for plain HTTP.
const MAX_HANDSHAKES: usize = 1024;

#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error("reading {path}: {source}")]
    Read {
        path: String,
        source: rustls::pki_types::pem::Error,
    },
    #[error("{0} holds no certificate")]
    NoCertificate(String),
    #[error("certificate and key do not make a TLS configuration: {0}")]
    Config(#[from] rustls::Error),
}

/// The server side of TLS from PEM files, on the one crypto provider the workspace compiles.
pub fn server_config(cert_file: &Path, key_file: &Path) -> Result<Arc<ServerConfig>, TlsError> {
    let read_err = |path: &Path| {
        let path = path.display().to_string();
        move |source| TlsError::Read { path, source }
    };
    let chain = CertificateDer::pem_file_iter(cert_file)
        .map_err(read_err(cert_file))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(read_err(cert_file))?;
    if chain.is_empty() {
        return Err(TlsError::NoCertificate(cert_file.display().to_string()));
    }
    let key = PrivateKeyDer::from_pem_file(key_file).map_err(read_err(key_file))?;
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let mut config = ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .with_no_client_auth()
        .with_single_cert(chain, key)?;
    // axum serves HTTP/1.1 (WebSocket upgrades included), so that is all we offer.
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

/// Accepts TCP, shakes hands in the background, and yields finished TLS connections.
pub struct TlsListener {
    ready: mpsc::Receiver<(TlsStream<TcpStream>, SocketAddr)>,
    local: SocketAddr,
}

impl TlsListener {
    /// The accept loop ends when this listener is dropped (the server stopped).
    pub fn new(listener: TcpListener, config: Arc<ServerConfig>) -> io::Result<Self> {
        let local = listener.local_addr()?;
        let (tx, ready) = mpsc::channel(64);
        tokio::spawn(accept_loop(listener, TlsAcceptor::from(config), tx));
        Ok(Self { ready, local })
    }
}

async fn accept_loop(
    mut listener: TcpListener,
    acceptor: TlsAcceptor,
    tx: mpsc::Sender<(TlsStream<TcpStream>, SocketAddr)>,
) {
    let handshakes = Arc::new(Semaphore::new(MAX_HANDSHAKES));
    loop {
        let permit = tokio::select! {
            () = tx.closed() => return,
            permit = handshakes.clone().acquire_owned() => match permit {
                Ok(permit) => permit,
                Err(_) => return,
            },
        };
        let (tcp, addr) = tokio::select! {
            () = tx.closed() => return,
            // axum's accept retries and logs socket errors (such as running out of files).
            accepted = axum::serve::Listener::accept(&mut listener) => accepted,
        };
        let (acceptor, tx) = (acceptor.clone(), tx.clone());
        tokio::spawn(async move {
            let _permit = permit;
            match tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(tcp)).await {
                Ok(Ok(stream)) => {
                    // Fails only when the server has stopped: the connection just closes.
                    let _ = tx.send((stream, addr)).await;
                }
                Ok(Err(error)) => tracing::debug!(%error, %addr, "TLS handshake failed"),
                Err(_) => tracing::debug!(%addr, "TLS handshake timed out"),
            }
        });
    }
}

impl axum::serve::Listener for TlsListener {
    type Io = TlsStream<TcpStream>;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        match self.ready.recv().await {
            Some(accepted) => accepted,
            // The accept loop only ends once this listener is gone, so this never resolves.
            None => std::future::pending().await,
        }
    }

    fn local_addr(&self) -> io::Result<Self::Addr> {
        Ok(self.local)
    }
}
