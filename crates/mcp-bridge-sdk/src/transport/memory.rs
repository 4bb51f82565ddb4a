//! The in-memory link: a client and a server in one process, exchanging
//! message values without serialization. Time limits of requests do not
//! apply on it (a test can pause time without the link timing out).

use mcp_bridge_protocol::Message;
use tokio::sync::mpsc;

use super::{Incoming, Transport};
use crate::limits::OUTGOING_QUEUE;
use crate::server::{Connection, Server};

/// Connects a client transport to `server` in this process. The server side
/// runs on its own task and ends, like a stdio server at the end of its
/// input, when the client side is dropped or closed.
pub fn connect(server: &Server) -> Transport {
    let (to_server, mut from_client) = mpsc::channel::<Message>(OUTGOING_QUEUE);
    let (to_client, incoming) = mpsc::channel::<Incoming>(OUTGOING_QUEUE);
    let (server_out, mut server_rx) = mpsc::channel::<Message>(OUTGOING_QUEUE);
    let connection = Connection::new(server.clone(), server_out);
    tokio::spawn(async move {
        while let Some(message) = from_client.recv().await {
            connection.handle(message).await;
        }
        connection.finish().await;
    });
    tokio::spawn(async move {
        while let Some(message) = server_rx.recv().await {
            if to_client.send(Incoming::Message(message)).await.is_err() {
                break;
            }
        }
    });
    Transport {
        outgoing: to_server,
        incoming,
        #[cfg(feature = "stdio")]
        process: None,
        timed: false,
        credential: Default::default(),
        endpoint: None,
        address: None,
        closer: None,
    }
}
