//! The TCP connections of the HTTP endpoint: a cap on how many are open,
//! and a watchdog that closes one whose client is too slow to send its
//! request or keeps it open without using it. A response in progress (a
//! result being computed, an SSE stream such as a listen stream) is never
//! timed out: only a connection waiting on its client is. A connection
//! the cap's fair shares give up (`slots.rs`) is closed at once.

use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use axum::Router;
use axum::body::Body;
use axum::http::Request;
use bytes::Bytes;
use hyper::body::{Frame, Incoming, SizeHint};
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::ConnectionLimits;
use super::activity::{Activity, Phase};
use super::slots::Slot;
use crate::server::protect::PeerCertificates;
use tower_service::Service;

/// The socket, telling the watchdog when a request starts to arrive.
struct Watched<S> {
    stream: S,
    activity: Arc<Activity>,
}

impl<S: AsyncRead + Unpin> AsyncRead for Watched<S> {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.stream).poll_read(cx, buf);
        if buf.filled().len() > before {
            // Progress first: a connection must never look like a head being
            // read since the last answer (the cap's shares give those up).
            self.activity.progressed();
            self.activity.update(|phase| phase.bytes_read(Instant::now()));
        }
        polled
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Watched<S> {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<std::io::Result<usize>> {
        let polled = Pin::new(&mut self.stream).poll_write(cx, buf);
        self.wrote(&polled);
        polled
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.stream).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.stream).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        let polled = Pin::new(&mut self.stream).poll_write_vectored(cx, bufs);
        self.wrote(&polled);
        polled
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }
}

impl<S> Watched<S> {
    fn wrote(&self, polled: &Poll<std::io::Result<usize>>) {
        if matches!(polled, Poll::Ready(Ok(n)) if *n > 0) {
            self.activity.progressed();
        }
    }
}

/// A response body that marks its request answered when it is dropped
/// (sent to its end, or abandoned with the connection).
struct Answering {
    body: Body,
    activity: Arc<Activity>,
}

impl Drop for Answering {
    fn drop(&mut self) {
        self.activity.update(|phase| phase.response_ended(Instant::now()));
    }
}

impl hyper::body::Body for Answering {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        Pin::new(&mut self.body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

/// Serves one accepted connection with `router` until it ends, its client
/// waits too long, or `shutdown` fires (then the response in progress is
/// finished and the connection closed), or its slot is given up to a
/// newcomer. The slot is its place under the connection cap, given back
/// when it ends. Each request carries `peer` (the client's TLS
/// certificates) and the client's address (axum's `ConnectInfo`) in its
/// extensions.
pub(crate) async fn serve_connection<S>(
    stream: S,
    router: Router,
    limits: ConnectionLimits,
    shutdown: CancellationToken,
    slot: Slot,
    peer: Option<PeerCertificates>,
) where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let activity = slot.activity.clone();
    let io = TokioIo::new(Watched { stream, activity: activity.clone() });
    let for_requests = activity.clone();
    let client: SocketAddr = slot.client;
    let service = hyper::service::service_fn(move |mut request: Request<Incoming>| {
        for_requests.update(Phase::request_started);
        if let Some(peer) = &peer {
            request.extensions_mut().insert(peer.clone());
        }
        request.extensions_mut().insert(axum::extract::ConnectInfo(client));
        let activity = for_requests.clone();
        let mut router = router.clone();
        async move {
            // A Router is always ready, and its error type is Infallible.
            let response = router.call(request.map(Body::new)).await?;
            Ok::<_, std::convert::Infallible>(response.map(|body| Answering { body, activity }))
        }
    });
    let connection = hyper::server::conn::http1::Builder::new().serve_connection(io, service);
    tokio::pin!(connection);
    let mut draining = false;
    loop {
        tokio::select! {
            // The connection first: what its client already sent is read
            // (a request head makes it busy) before the watchdog judges it.
            // A runtime slow to poll this task (workers busy encoding a big
            // answer) must not cut off a client that was on time: closed
            // with its request unread, the socket would be reset.
            biased;
            served = connection.as_mut() => {
                if let Err(e) = served {
                    tracing::debug!("an HTTP connection ended with an error: {e}");
                }
                return;
            }
            () = activity.expired(&limits) => {
                tracing::debug!("closing an HTTP connection whose client sent nothing in time");
                return;
            }
            () = slot.shed.cancelled() => {
                tracing::debug!("closing an HTTP connection to make room for another client's");
                return;
            }
            () = shutdown.cancelled(), if !draining => {
                draining = true;
                connection.as_mut().graceful_shutdown();
            }
        }
    }
}
