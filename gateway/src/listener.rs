//! Binding the listening socket. tokio's `TcpListener::bind` listens with a backlog of 128,
//! which an on-sale's connect storm overflows; we bind through `TcpSocket` with 4,096.

use std::net::SocketAddr;

use tokio::net::{TcpListener, TcpSocket};

pub const LISTEN_BACKLOG: u32 = 4096;

pub fn bind(addr: SocketAddr) -> std::io::Result<TcpListener> {
    let socket = if addr.is_ipv4() {
        TcpSocket::new_v4()?
    } else {
        TcpSocket::new_v6()?
    };
    // A restarted gateway must rebind at once while old connections sit in TIME_WAIT.
    socket.set_reuseaddr(true)?;
    socket.set_nodelay(true)?;
    socket.bind(addr)?;
    socket.listen(LISTEN_BACKLOG)
}
