//! The in-memory link: a client and a server in one process, exchanging
//! message values without serialization. Time limits of requests do not
//! apply on it (a test can pause time without the link timing out).

use mcp_bridge_protocol::Message;
use tokio::sync::mpsc;

use super::{Incoming, Transport};
use crate::limits::{CLOSE_GRACE, OUTGOING_QUEUE};
use crate::server::protect::CallerSlot;
use crate::server::{Connection, Server};
use crate::task_group::TaskGroup;

/// Connects a client transport to `server` in this process. The server side
/// runs on tasks of the transport and ends, like a stdio server at the end
/// of its input, when the client side is dropped or closed.
pub fn connect(server: &Server) -> Transport {
    connect_as(server, CallerSlot::default())
}

/// [`connect`], and the server's handlers see `caller` as the caller of
/// each request ([`RequestContext::caller`](crate::RequestContext::caller)):
/// what the slot holds when the request arrives.
pub fn connect_as(server: &Server, caller: CallerSlot) -> Transport {
    let (to_server, mut from_client) = mpsc::channel::<Message>(OUTGOING_QUEUE);
    let (to_client, incoming) = mpsc::channel::<Incoming>(OUTGOING_QUEUE);
    let (server_out, mut server_rx) = mpsc::channel::<Message>(OUTGOING_QUEUE);
    let mut connection = Connection::new(server.clone(), server_out);
    let tasks = TaskGroup::default();
    let closed = tasks.stopping();
    tasks.spawn_to_finish(CLOSE_GRACE, async move {
        loop {
            let message = tokio::select! {
                message = from_client.recv() => message,
                () = closed.cancelled() => None,
            };
            let Some(message) = message else { break };
            connection.set_caller(caller.get());
            connection.handle(message).await;
        }
        connection.finish().await;
    });
    tasks.spawn(async move {
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
        tasks,
    }
}
