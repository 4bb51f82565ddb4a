//! Serving one connection over a byte stream (stdio, a socket): framing,
//! decoding with the connection's limits, answers to bad lines, and the end
//! of the input.

use mcp_bridge_protocol::{ErrorObject, Frame, decode_message, error_code};
use serde_json::json;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

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
        let limits = self.limits().clone();
        let (out, mut rx) = mpsc::channel(OUTGOING_QUEUE);
        let stop_writer = CancellationToken::new();
        let stop = stop_writer.clone();
        let writer = tokio::spawn(async move { write_lines(output, &mut rx, stop).await });
        let connection = Connection::new(self.clone(), out);
        let mut reader = FrameReader::new(input, limits.max_line_bytes);
        let read_result = loop {
            let frame = match reader.next().await {
                Ok(Some(frame)) => frame,
                Ok(None) => break Ok(()),
                Err(e) => break Err(e),
            };
            match frame {
                Frame::TooLong(line) => {
                    let error = ErrorObject::new(error_code::INVALID_REQUEST, "Invalid request: line too long")
                        .with_data(json!({ "cause": "line_too_long", "detail": limits.max_line_bytes }));
                    connection.reject(line.recover_id(), error).await;
                }
                Frame::Line(line) => match decode_message(&line, limits.max_depth) {
                    Ok(message) => connection.handle(message).await,
                    Err(e) => connection.reject(e.reply_id(&line), e.to_error_object()).await,
                },
            }
        };
        connection.finish().await;
        // A client that stopped reading before the last frames is gone, not
        // an error of this server.
        let write_result = match finish_writer(writer, stop_writer, limits.shutdown_grace).await {
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
            other => other,
        };
        read_result.and(write_result)
    }

    /// Serves every client that connects to `listener` (a Unix domain
    /// socket), each as [`Server::serve_stream`] does, until `shutdown`
    /// completes; then the open listen streams end with their completion
    /// result and no new client is taken.
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
        accept_until(accept, shutdown, "a socket client", |stream: tokio::net::UnixStream| {
            let server = self.clone();
            tokio::spawn(async move {
                let (read, write) = stream.into_split();
                if let Err(e) = server.serve_stream(read, write).await {
                    tracing::debug!("a socket client's connection failed: {e}");
                }
            });
        })
        .await;
        self.shutdown_subscriptions();
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

/// Takes connections until `shutdown` completes, handing each to `serve`.
/// A failed accept (out of descriptors, say) is not a reason to stop
/// serving: it is logged and tried again a little later.
pub(super) async fn accept_until<S, A>(
    mut accept: impl FnMut() -> A,
    shutdown: impl Future<Output = ()>,
    what: &str,
    mut serve: impl FnMut(S),
) where
    A: Future<Output = std::io::Result<S>>,
{
    tokio::pin!(shutdown);
    loop {
        tokio::select! {
            accepted = accept() => match accepted {
                Ok(stream) => serve(stream),
                Err(e) => {
                    tracing::warn!("accepting {what} failed: {e}");
                    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
                }
            },
            () = &mut shutdown => return,
        }
    }
}
