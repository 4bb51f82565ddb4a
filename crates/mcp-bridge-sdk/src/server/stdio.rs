//! Serving one connection over a byte stream (stdio, a socket): framing,
//! decoding with the connection's limits, answers to bad lines, and the end
//! of the input.

#[cfg(all(unix, feature = "unix"))]
use std::sync::Arc;

use tokio::io::{AsyncRead, AsyncWrite};
#[cfg(all(unix, feature = "unix"))]
use tokio::sync::Semaphore;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

#[cfg(all(unix, feature = "unix"))]
use super::accept::{Open, accept_until};
use super::frames::read_until;
use super::{Connection, Server};
use crate::limits::OUTGOING_QUEUE;
use crate::transport::lines::{FrameReader, finish_writer, write_lines};
#[cfg(feature = "stdio")]
use crate::transport::process_stdio;

impl Server {
    /// Serves one client over a byte stream until the input ends: reads
    /// newline-delimited JSON-RPC from `input`, writes responses and events
    /// to `output`. A bad line is answered and the connection goes on.
    ///
    /// # Errors
    /// An I/O error of the input or the output.
    pub async fn serve_stream<R, W>(&self, input: R, output: W) -> std::io::Result<()>
    where
        R: AsyncRead + Unpin,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        self.serve_stream_until(input, output, CancellationToken::new()).await
    }

    /// [`Server::serve_stream`] until the input ends or `stop` is
    /// cancelled, which ends the connection as the end of its input does:
    /// requests in flight get the grace time, then the output closes.
    ///
    /// # Errors
    /// An I/O error of the input or the output.
    ///
    /// With the `legacy` feature, the first request chooses the revision:
    /// `initialize` is a 2025-11-25 client's (see
    /// [`ServerBuilder::legacy_clients`](super::ServerBuilder::legacy_clients)).
    pub async fn serve_stream_until<R, W>(&self, input: R, output: W, stop: CancellationToken) -> std::io::Result<()>
    where
        R: AsyncRead + Unpin,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        #[cfg(feature = "legacy")]
        if let Some(options) = self.legacy_options() {
            return super::legacy::embed::serve_stream_auto(self, input, output, options, stop).await.map(drop);
        }
        let reader = FrameReader::new(input, self.limits().max_line_bytes);
        self.serve_modern_frames(reader, output, stop).await
    }

    /// [`Server::serve_stream_until`] for a 2026-07-28 client, on frames
    /// some of which may already have been read (the embed's first line).
    pub(crate) async fn serve_modern_frames<R, W>(
        &self,
        mut reader: FrameReader<R>,
        output: W,
        stop: CancellationToken,
    ) -> std::io::Result<()>
    where
        R: AsyncRead + Unpin,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        let limits = self.limits().clone();
        let (out, mut rx) = mpsc::channel(OUTGOING_QUEUE);
        let stop_writer = CancellationToken::new();
        let writer_stop = stop_writer.clone();
        let writer = tokio::spawn(async move { write_lines(output, &mut rx, writer_stop).await });
        let connection = Connection::new(self.clone(), out);
        let read_result = read_until(&mut reader, &connection, limits.max_depth, stop.cancelled()).await;
        connection.finish().await;
        // A client that stopped reading before the last frames is gone, not
        // an error of this server.
        let write_result = match finish_writer(writer, stop_writer, limits.shutdown_grace).await {
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
            other => other,
        };
        read_result.map(drop).and(write_result)
    }

    /// Serves every client that connects to `listener` (a Unix domain
    /// socket), each as [`Server::serve_stream`] does, until `shutdown`
    /// completes; then no new client is taken, the open listen streams end
    /// with their completion result, and every connection ends as at the
    /// end of its input (its requests get the grace time); it returns when
    /// they have.
    ///
    /// # Errors
    /// None today: a failed accept is logged and the loop goes on.
    #[cfg(all(unix, feature = "unix"))]
    pub async fn serve_unix(
        &self,
        listener: tokio::net::UnixListener,
        shutdown: impl Future<Output = ()>,
    ) -> std::io::Result<()> {
        let accept = || async { listener.accept().await.map(|(stream, _)| stream) };
        let open = Open::default();
        let places = Arc::new(Semaphore::new(self.limits().max_connections.min(Semaphore::MAX_PERMITS)));
        accept_until(accept, shutdown, "a socket client", |stream: tokio::net::UnixStream| {
            let Ok(place) = places.clone().try_acquire_owned() else {
                tracing::warn!(
                    limit = self.limits().max_connections,
                    "refusing a socket client: too many are connected"
                );
                return;
            };
            let (server, stop) = (self.clone(), open.stop.child_token());
            open.connections.spawn(async move {
                let _place = place;
                let (read, write) = stream.into_split();
                if let Err(e) = server.serve_stream_until(read, write, stop).await {
                    tracing::debug!("a socket client's connection failed: {e}");
                }
            });
        })
        .await;
        self.shutdown_subscriptions();
        open.end(Some(self.ending_grace())).await;
        Ok(())
    }

    /// Serves the process's own stdin and stdout until stdin ends.
    ///
    /// # Errors
    /// An I/O error of stdin or stdout.
    #[cfg(feature = "stdio")]
    pub async fn serve_stdio(&self) -> std::io::Result<()> {
        self.serve_stream(process_stdio::stdin(), process_stdio::stdout()).await
    }
}
