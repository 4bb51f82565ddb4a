//! The connections the gRPC service is served on, taken by the server's
//! one accept loop: under its connection cap with each client's fair
//! share, Nagle's algorithm off. Each holds its place while it is open and
//! fails its next read or write once the place is given up to another
//! client's connection.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use futures_util::Stream;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio_util::sync::WaitForCancellationFutureOwned;
use tonic::transport::server::{Connected, TcpConnectInfo};

use crate::server::accept::{accept_tcp, serve_capped};
use crate::server::http::Slot;

/// One connection and its place under the cap.
pub(super) struct Held {
    stream: TcpStream,
    slot: Slot,
    given_up: Pin<Box<WaitForCancellationFutureOwned>>,
}

impl Held {
    fn new(stream: TcpStream, slot: Slot) -> Held {
        // An HTTP/2 connection has no request head to wait on: it is judged
        // by how long it has been quiet.
        slot.activity.upgraded();
        let given_up = Box::pin(slot.shed.clone().cancelled_owned());
        Held { stream, slot, given_up }
    }

    /// An error once the place was given up; else marks progress.
    fn check(&mut self, cx: &mut Context<'_>) -> std::io::Result<()> {
        if self.given_up.as_mut().poll(cx).is_ready() {
            tracing::debug!(target: "mcp_grpc", "closing a gRPC connection to make room for another client's");
            return Err(std::io::Error::new(
                std::io::ErrorKind::ConnectionAborted,
                "the connection made room for another client's",
            ));
        }
        Ok(())
    }

    fn moved(&self, polled: &Poll<std::io::Result<usize>>) {
        if matches!(polled, Poll::Ready(Ok(n)) if *n > 0) {
            self.slot.activity.progressed();
        }
    }
}

impl AsyncRead for Held {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<std::io::Result<()>> {
        self.check(cx)?;
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.stream).poll_read(cx, buf);
        if buf.filled().len() > before {
            self.slot.activity.progressed();
        }
        polled
    }
}

impl AsyncWrite for Held {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<std::io::Result<usize>> {
        self.check(cx)?;
        let polled = Pin::new(&mut self.stream).poll_write(cx, buf);
        self.moved(&polled);
        polled
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        self.check(cx)?;
        let polled = Pin::new(&mut self.stream).poll_write_vectored(cx, bufs);
        self.moved(&polled);
        polled
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.stream).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.stream).poll_shutdown(cx)
    }
}

impl Connected for Held {
    type ConnectInfo = TcpConnectInfo;

    fn connect_info(&self) -> TcpConnectInfo {
        self.stream.connect_info()
    }
}

/// The connections of `listener` as tonic takes them, at most `cap` open
/// at once, until `shutdown` completes; then the stream ends once the
/// connections taken are handed over. The returned future runs the accept
/// loop and must be polled alongside the server.
pub(super) fn incoming(
    listener: TcpListener,
    cap: usize,
    shutdown: impl Future<Output = ()>,
) -> (impl Stream<Item = std::io::Result<Held>>, impl Future<Output = ()>) {
    let (taken, mut connections) = mpsc::channel::<Held>(16);
    let accepting = async move {
        let serve = |stream, slot, _stop| {
            let taken = taken.clone();
            // The server may be gone; the connection then just closes.
            async move { drop(taken.send(Held::new(stream, slot)).await) }
        };
        // A refused connection is closed: an HTTP/2 client reads no 503.
        let refuse = |stream: TcpStream| async move { drop(stream) };
        let open = serve_capped(|| accept_tcp(&listener), cap, "a gRPC client", shutdown, serve, refuse).await;
        open.end(None).await;
    };
    let stream = futures_util::stream::poll_fn(move |cx| connections.poll_recv(cx).map(|held| held.map(Ok)));
    (stream, accepting)
}
