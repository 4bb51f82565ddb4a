//! Taking connections: the one accept loop under every listener a server
//! serves on (HTTP, HTTPS, WebSocket, gRPC, a Unix socket), and the cap on
//! how many are open, each client keeping its fair share of it
//! ([`crate::server::shares`]).

use std::future::Future;
use std::time::Duration;

use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

#[cfg(any(feature = "http-server", feature = "websocket", feature = "grpc"))]
pub(crate) use capped::serve_capped;

/// The connections a loop took, once it stopped taking more.
#[derive(Debug, Default)]
pub(crate) struct Open {
    /// Each connection's task.
    pub(crate) connections: TaskTracker,
    /// Cancelled to tell the connections to end.
    pub(crate) stop: CancellationToken,
}

impl Open {
    /// Tells every connection to end and waits until they have, for
    /// `grace` at most when given (one that takes longer is left to
    /// its own end).
    pub(crate) async fn end(self, grace: Option<Duration>) {
        self.stop.cancel();
        self.connections.close();
        let Some(grace) = grace else { return self.connections.wait().await };
        if tokio::time::timeout(grace, self.connections.wait()).await.is_err() {
            tracing::warn!(left = self.connections.len(), "connections still open {grace:?} after the shutdown");
        }
    }
}

impl super::Server {
    /// How long the connections of a listener that stopped taking new ones
    /// get to end as at the end of their input: the requests' grace, then
    /// the writer's.
    pub(crate) fn ending_grace(&self) -> Duration {
        self.limits().shutdown_grace * 2
    }
}

/// Takes connections until `shutdown` completes, handing each to `serve`.
/// A failed accept (out of descriptors, say) is not a reason to stop
/// serving: it is logged and tried again a little later.
pub(crate) async fn accept_until<S, A>(
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

/// The next connection of a TCP `listener` and its client's address, with
/// Nagle's algorithm off: without it a small answer waits for the client's
/// delayed ACK (9.6 ms a gRPC call instead of 0.2 ms).
#[cfg(any(feature = "http-server", feature = "websocket", feature = "grpc"))]
pub(crate) async fn accept_tcp(
    listener: &tokio::net::TcpListener,
) -> std::io::Result<(tokio::net::TcpStream, std::net::SocketAddr)> {
    let (stream, client) = listener.accept().await?;
    if let Err(e) = stream.set_nodelay(true) {
        tracing::debug!("TCP_NODELAY not set: {e}");
    }
    Ok((stream, client))
}

#[cfg(any(feature = "http-server", feature = "websocket", feature = "grpc"))]
mod capped {
    use std::future::Future;
    use std::net::SocketAddr;

    use tokio_util::sync::CancellationToken;

    use super::{Open, accept_until};
    use crate::server::http::{Slot, Slots};

    /// Takes connections of `what` (the words of its log lines) with
    /// `accept` (each with the address its client is counted under) until
    /// `shutdown` completes, at most `cap` open at once: each is served by
    /// `serve`, given its place under the cap and the token that tells it
    /// to end; a newcomer no client gives way to goes to `refuse`.
    pub(crate) async fn serve_capped<S, A, F, R>(
        accept: impl FnMut() -> A,
        cap: usize,
        what: &str,
        shutdown: impl Future<Output = ()>,
        serve: impl Fn(S, Slot, CancellationToken) -> F,
        refuse: impl Fn(S) -> R,
    ) -> Open
    where
        A: Future<Output = std::io::Result<(S, SocketAddr)>>,
        F: Future<Output = ()> + Send + 'static,
        R: Future<Output = ()> + Send + 'static,
    {
        let slots = Slots::new(cap);
        let open = Open::default();
        accept_until(accept, shutdown, what, |(stream, client)| match slots.take(client) {
            Some(slot) => {
                open.connections.spawn(serve(stream, slot, open.stop.child_token()));
            }
            None => {
                tracing::warn!(limit = cap, "refusing {what}: too many connections are open");
                open.connections.spawn(refuse(stream));
            }
        })
        .await;
        open
    }
}

#[cfg(all(test, any(feature = "http-server", feature = "websocket", feature = "grpc")))]
mod tests {
    use super::accept_tcp;

    #[tokio::test]
    async fn a_tcp_connection_is_taken_with_nagles_algorithm_off() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        let (client, accepted) = tokio::join!(tokio::net::TcpStream::connect(address), accept_tcp(&listener));
        let (stream, from) = accepted.unwrap();
        assert_eq!(from, client.unwrap().local_addr().unwrap());
        assert!(stream.nodelay().unwrap(), "every listener takes its connections here: HTTP, WebSocket, gRPC");
    }
}
