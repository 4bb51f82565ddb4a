//! Newline-delimited JSON-RPC over a Unix domain socket, framed as on
//! stdio: the client's transport here, the server's accept loop in
//! [`crate::Server::serve_unix`]. For a local server that outlives its
//! clients (a daemon), with the socket file's permissions as the access
//! control.

use std::path::Path;

use mcp_bridge_protocol::Message;
use tokio::net::UnixStream;
use tokio::sync::mpsc;

use super::lines::{read_frames, write_lines};
use super::{Incoming, Transport};
use crate::error::Error;
use crate::limits::OUTGOING_QUEUE;
use crate::task_group::TaskGroup;

/// The longest line read from the server, as on stdio.
pub const MAX_LINE_BYTES: usize = mcp_bridge_protocol::DEFAULT_MAX_LINE_BYTES;

/// Connects a client transport to the server listening at `path`.
///
/// # Errors
/// [`Error::Connect`] when nothing listens there (or it may not be used).
pub async fn connect(path: impl AsRef<Path>) -> Result<Transport, Error> {
    let address = format!("unix:{}", path.as_ref().display());
    let stream = UnixStream::connect(path).await.map_err(|source| Error::Connect { source })?;
    let (read, write) = stream.into_split();
    let (outgoing, mut out_rx) = mpsc::channel::<Message>(OUTGOING_QUEUE);
    let (to_client, incoming) = mpsc::channel::<Incoming>(OUTGOING_QUEUE);
    let reader_out = to_client.clone();
    let tasks = TaskGroup::default();
    tasks.spawn(async move {
        read_frames(read, reader_out.clone(), MAX_LINE_BYTES, mcp_bridge_protocol::UPSTREAM_MAX_DEPTH).await;
        // The server closed the connection: the waiting requests fail.
        let _ = reader_out.send(Incoming::Disconnected).await;
    });
    tasks.spawn(async move {
        if let Err(e) = write_lines(write, &mut out_rx, tokio_util::sync::CancellationToken::new()).await {
            tracing::debug!("the socket closed for writing: {e}");
        }
        drop(to_client);
    });
    Ok(Transport { address: Some(address), ..Transport::remote(outgoing, incoming, tasks) })
}
