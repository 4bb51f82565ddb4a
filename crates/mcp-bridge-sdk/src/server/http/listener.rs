//! Where an HTTP endpoint takes its connections: a TCP port, which anyone
//! who can reach it may connect to, or a Unix domain socket, which only
//! those the permissions of its folder let in may.

use std::net::SocketAddr;
use std::pin::Pin;
use std::task::{Context, Poll};

use crate::server::accept::accept_tcp;

/// The address a Unix socket's clients are counted under in the fair
/// shares of the connection cap: they all share one, since the folder's
/// permissions already admit only its owner.
#[cfg(all(unix, feature = "unix"))]
const UNIX_CLIENT: SocketAddr = SocketAddr::new(std::net::IpAddr::V4(std::net::Ipv4Addr::UNSPECIFIED), 0);

/// A listening socket an HTTP endpoint serves on ([`serve_router`](super::serve_router)):
/// made `From` a tokio TCP listener or (on Unix) a Unix domain socket's.
#[derive(Debug)]
#[non_exhaustive]
pub enum Listener {
    /// A TCP port.
    Tcp(tokio::net::TcpListener),
    /// A Unix domain socket: who may connect is who may enter its folder.
    #[cfg(all(unix, feature = "unix"))]
    Unix(tokio::net::UnixListener),
}

impl From<tokio::net::TcpListener> for Listener {
    fn from(listener: tokio::net::TcpListener) -> Self {
        Listener::Tcp(listener)
    }
}

#[cfg(all(unix, feature = "unix"))]
impl From<tokio::net::UnixListener> for Listener {
    fn from(listener: tokio::net::UnixListener) -> Self {
        Listener::Unix(listener)
    }
}

/// One accepted connection of a [`Listener`].
#[derive(Debug)]
pub(super) enum Accepted {
    Tcp(tokio::net::TcpStream),
    #[cfg(all(unix, feature = "unix"))]
    Unix(tokio::net::UnixStream),
}

impl Listener {
    /// The next connection and the address its client is counted under.
    pub(super) async fn accept(&self) -> std::io::Result<(Accepted, SocketAddr)> {
        match self {
            Listener::Tcp(listener) => {
                accept_tcp(listener).await.map(|(stream, client)| (Accepted::Tcp(stream), client))
            }
            #[cfg(all(unix, feature = "unix"))]
            Listener::Unix(listener) => {
                listener.accept().await.map(|(stream, _)| (Accepted::Unix(stream), UNIX_CLIENT))
            }
        }
    }
}

/// Runs `$body` with `$stream` bound to the connection inside `$accepted`.
macro_rules! either {
    ($accepted:expr, $stream:ident => $body:expr) => {
        match $accepted {
            Accepted::Tcp($stream) => $body,
            #[cfg(all(unix, feature = "unix"))]
            Accepted::Unix($stream) => $body,
        }
    };
}

impl tokio::io::AsyncRead for Accepted {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        either!(self.get_mut(), stream => Pin::new(stream).poll_read(cx, buf))
    }
}

impl tokio::io::AsyncWrite for Accepted {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<std::io::Result<usize>> {
        either!(self.get_mut(), stream => Pin::new(stream).poll_write(cx, buf))
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        either!(self.get_mut(), stream => Pin::new(stream).poll_flush(cx))
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        either!(self.get_mut(), stream => Pin::new(stream).poll_shutdown(cx))
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        either!(self.get_mut(), stream => Pin::new(stream).poll_write_vectored(cx, bufs))
    }

    fn is_write_vectored(&self) -> bool {
        either!(self, stream => stream.is_write_vectored())
    }
}
