//! The limits of the HTTP and WebSocket endpoints' connections, and the
//! answer to one connection too many.

use std::time::Duration;

use crate::limits::default_max_connections;

use tokio::io::{AsyncWrite, AsyncWriteExt};

/// How long a client may take, and how many connections may be open.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct ConnectionLimits {
    /// Time a client gets to send a whole request (head and body) once its
    /// first byte arrived, and to send its first request after connecting.
    /// 10 s: far more than any real client needs on a working network.
    pub request_read_timeout: Duration,
    /// Time a kept-alive connection may stay unused between requests.
    /// 60 s: longer than the pools of common HTTP clients keep an idle
    /// connection (reqwest 90 s is cut, then reconnects), short enough that
    /// abandoned connections do not pile up.
    pub idle_timeout: Duration,
    /// Connections open at once, listen streams and calls waiting on the
    /// client included. At the cap a newcomer takes the place of the oldest
    /// connection still sending its request head, else of the idlest one of
    /// the client address holding the most; when every address holds about
    /// as many, it is answered 503 with `Retry-After` and closed. The
    /// default is [`default_max_connections`].
    pub max_connections: usize,
    /// Bytes one connection may have queued unsent: a response (a JSON
    /// body, one SSE event) larger than this is not queued; a result or
    /// error is replaced by a -32603 error saying so, a notification is
    /// dropped. The response being written is all a connection queues (the
    /// next SSE event is taken once it is out), so a client that never
    /// reads holds this much, not what it asked for. 16 MiB: far more than
    /// a model takes in as a tool result; 64 connections that never read
    /// hold 1 GiB at most.
    pub max_unsent_bytes: usize,
}

crate::setters::with_setters! {
    ConnectionLimits {
        value with_request_read_timeout => request_read_timeout: Duration,
        value with_idle_timeout => idle_timeout: Duration,
        value with_max_connections => max_connections: usize,
        value with_max_unsent_bytes => max_unsent_bytes: usize,
    }
}

impl Default for ConnectionLimits {
    fn default() -> Self {
        ConnectionLimits {
            request_read_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(60),
            max_connections: default_max_connections(),
            max_unsent_bytes: 16 * 1024 * 1024,
        }
    }
}

/// Answers a connection over the cap at once and closes it.
pub(crate) async fn refuse_connection(mut stream: impl AsyncWrite + Unpin) {
    const BUSY: &[u8] = b"HTTP/1.1 503 Service Unavailable\r\nRetry-After: 1\r\nConnection: close\r\n\
Content-Type: text/plain\r\nContent-Length: 35\r\n\r\ntoo many connections; try again soon";
    // A client already gone needs no answer; the write is bounded by the
    // socket buffer of a fresh connection, which holds these few bytes.
    let _ = tokio::time::timeout(Duration::from_secs(1), stream.write_all(BUSY)).await;
    let _ = stream.shutdown().await;
}
