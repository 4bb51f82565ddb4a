//! The TCP connections of the HTTP endpoint: a cap on how many are open,
//! and a watchdog that closes one whose client is too slow to send its
//! request or keeps it open without using it. A response in progress (a
//! result being computed, an SSE stream such as a listen stream) is never
//! timed out: only a connection waiting on its client is. A connection
//! the cap's fair shares give up (`slots.rs`) is closed at once.

use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use axum::Router;
use axum::body::Body;
use axum::http::Request;
use bytes::Bytes;
use hyper::body::{Frame, Incoming, SizeHint};
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::sync::Notify;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::ConnectionLimits;
use super::slots::Slot;
use crate::server::protect::PeerCertificates;
use tower_service::Service;

/// What a connection is doing, as far as its timeouts care.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Phase {
    /// Waiting for a request to start, since the instant given.
    Idle(Instant),
    /// Reading a request that started (or the first one) at the instant.
    Reading(Instant),
    /// Answering this many requests: no timeout applies.
    Busy(usize),
}

impl Phase {
    /// When the connection is to be closed if nothing changes.
    fn deadline(self, limits: &ConnectionLimits) -> Option<Instant> {
        match self {
            Phase::Idle(since) => Some(since + limits.idle_timeout),
            Phase::Reading(since) => Some(since + limits.request_read_timeout),
            Phase::Busy(_) => None,
        }
    }

    fn bytes_read(self, now: Instant) -> Phase {
        match self {
            Phase::Idle(_) => Phase::Reading(now),
            other => other,
        }
    }

    pub(super) fn request_started(self) -> Phase {
        match self {
            Phase::Busy(n) => Phase::Busy(n + 1),
            _ => Phase::Busy(1),
        }
    }

    fn response_ended(self, now: Instant) -> Phase {
        match self {
            Phase::Busy(n) if n > 1 => Phase::Busy(n - 1),
            _ => Phase::Idle(now),
        }
    }
}

/// The phase of one connection, shared by its reader, its requests, its
/// watchdog and the cap's fair shares.
#[derive(Debug)]
pub(super) struct Activity {
    phase: Mutex<Phase>,
    changed: Notify,
    /// The last time a byte was read or written.
    progress: Mutex<Instant>,
}

impl Activity {
    pub(super) fn new() -> Arc<Self> {
        let now = Instant::now();
        Arc::new(Activity { phase: Mutex::new(Phase::Reading(now)), changed: Notify::new(), progress: Mutex::new(now) })
    }

    /// Since when no byte was read or written.
    pub(super) fn quiet_since(&self) -> Instant {
        *self.progress.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn progressed(&self) {
        *self.progress.lock().unwrap_or_else(|e| e.into_inner()) = Instant::now();
    }

    /// Whether the connection is reading a request head (nothing answered
    /// or being answered).
    pub(super) fn reading_head(&self) -> bool {
        matches!(self.current(), Phase::Reading(_))
    }

    pub(super) fn update(&self, change: impl FnOnce(Phase) -> Phase) {
        let mut phase = self.phase.lock().unwrap_or_else(|e| e.into_inner());
        let next = change(*phase);
        if next != *phase {
            *phase = next;
            self.changed.notify_one();
        }
    }

    fn current(&self) -> Phase {
        *self.phase.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Completes when the connection has waited on its client too long.
    async fn expired(&self, limits: &ConnectionLimits) {
        loop {
            let changed = self.changed.notified();
            match self.current().deadline(limits) {
                Some(deadline) if deadline <= Instant::now() => return,
                Some(deadline) => {
                    tokio::select! {
                        () = tokio::time::sleep_until(deadline) => {}
                        () = changed => {}
                    }
                }
                None => changed.await,
            }
        }
    }
}

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
            self.activity.update(|phase| phase.bytes_read(Instant::now()));
            self.activity.progressed();
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn only_a_connection_waiting_on_its_client_has_a_deadline() {
        let limits = ConnectionLimits::default();
        let t0 = Instant::now();
        let reading = Phase::Reading(t0);
        assert_eq!(reading.deadline(&limits), Some(t0 + limits.request_read_timeout));
        let busy = reading.request_started();
        assert_eq!(busy, Phase::Busy(1));
        assert_eq!(busy.deadline(&limits), None);
        // Bytes of a pipelined request change nothing while busy.
        assert_eq!(busy.bytes_read(t0), busy);
        assert_eq!(busy.request_started().response_ended(t0), Phase::Busy(1));
        let t1 = t0 + Duration::from_secs(3);
        let idle = busy.response_ended(t1);
        assert_eq!(idle.deadline(&limits), Some(t1 + limits.idle_timeout));
        let t2 = t1 + Duration::from_secs(5);
        assert_eq!(idle.bytes_read(t2).deadline(&limits), Some(t2 + limits.request_read_timeout));
    }
}
