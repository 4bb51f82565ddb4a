//! Transports of the client: how messages reach a server and come back.
//!
//! Every transport here is a pair of message channels plus whatever owns
//! the other end (a server task, a child process):
//!
//! ```text
//!  Client ──Message──▶ outgoing ──▶ [memory: server connection | stdio: child stdin]
//!  Client ◀─Incoming── incoming ◀── [memory: server connection | stdio: child stdout]
//!
//! and likewise a Unix socket, a WebSocket, or HTTP (one POST per message).
//! ```

#[cfg(all(feature = "client", any(feature = "http-client", feature = "websocket")))]
pub mod credentials;
#[cfg(feature = "http-client")]
pub mod http;
#[cfg(any(feature = "http-client", all(feature = "client", feature = "grpc")))]
pub(crate) mod in_flight;
#[cfg(any(feature = "server", all(feature = "client", any(feature = "stdio", feature = "unix"))))]
pub mod lines;
#[cfg(all(feature = "client", feature = "server"))]
pub mod memory;
#[cfg(all(feature = "server", feature = "stdio"))]
pub mod process_stdio;
#[cfg(feature = "http-client")]
pub(crate) mod sse;
#[cfg(all(feature = "client", feature = "stdio"))]
pub mod stdio;
#[cfg(all(feature = "client", any(feature = "http-client", feature = "websocket")))]
mod tls;
#[cfg(all(feature = "client", any(feature = "http-client", feature = "websocket")))]
pub use tls::TlsClientOptions;
#[cfg(any(feature = "http-client", all(feature = "client", feature = "grpc")))]
pub(crate) mod tool_headers;
#[cfg(all(unix, feature = "unix", feature = "client"))]
pub mod unix;
#[cfg(feature = "websocket")]
pub mod websocket;

#[cfg(feature = "client")]
use std::sync::Arc;

#[cfg(feature = "client")]
use mcp_bridge_protocol::{Message, RequestId};
#[cfg(feature = "client")]
use sha2::{Digest, Sha256};
#[cfg(feature = "client")]
use tokio::sync::mpsc;

#[cfg(all(feature = "client", any(feature = "http-client", feature = "websocket")))]
use credentials::AuthProvider;

#[cfg(feature = "client")]
/// What the client's reader receives.
#[derive(Debug)]
pub(crate) enum Incoming {
    /// A decoded message.
    Message(Message),
    /// A result response of a line-framed transport, not decoded.
    Result(mcp_bridge_protocol::RawResult),
    /// A frame that could not be decoded; `id` when one could be recovered,
    /// so the request it answers can fail at once.
    Undecodable { id: Option<RequestId>, reason: String },
    /// The server went away (a child process ended); the requests waiting
    /// on it fail, and the transport may come back (a restarted child).
    Disconnected,
    /// The stream of one request ended before its response.
    Lost { id: RequestId },
    /// A request failed in the transport before it was sent.
    Failed { id: RequestId, error: crate::Error },
    /// A notification on the response stream of request `id` (HTTP): it
    /// belongs to that request even without a progress token (a log
    /// message, for one).
    OnStream { id: RequestId, notification: mcp_bridge_protocol::JsonRpcNotification },
    /// The HTTP status of the response to a request, before its message.
    HttpStatus { id: RequestId, status: u16 },
    /// A server's request on the response stream of request `id` (a
    /// 2025-11-25 server over HTTP): asked for that request's sake.
    RequestOnStream { id: RequestId, request: mcp_bridge_protocol::JsonRpcRequest },
    /// The transport asks the user for request `id`'s sake (a sign-in's
    /// consent): answered by whoever answers that request's server
    /// requests.
    #[cfg(any(feature = "http-client", feature = "websocket"))]
    AskUser {
        id: RequestId,
        request: Box<mcp_bridge_protocol::types::InputRequest>,
        answer: tokio::sync::oneshot::Sender<crate::Result<mcp_bridge_protocol::types::InputResponse>>,
    },
}

#[cfg(feature = "client")]
/// A connection to a server, ready for [`crate::Client::new`].
#[derive(Debug)]
pub struct Transport {
    pub(crate) outgoing: mpsc::Sender<Message>,
    pub(crate) incoming: mpsc::Receiver<Incoming>,
    #[cfg(feature = "stdio")]
    pub(crate) process: Option<stdio::ChildProcess>,
    /// Whether request time limits apply (not on the in-memory link).
    pub(crate) timed: bool,
    /// Who the requests speak for, as the result cache tells callers apart.
    pub(crate) credential: Credential,
    /// The endpoint URL of a network transport (the origin of its icons).
    pub(crate) endpoint: Option<String>,
    /// Where the server is (URL, command line, socket path), as the era
    /// cache knows it; `None` in memory.
    pub(crate) address: Option<String>,
    /// Every task of the transport, and then of the client on it:
    /// [`crate::Client::close`] stops them all (HTTP first ends its
    /// requests in flight and a 2025-11-25 session with a DELETE).
    pub(crate) tasks: crate::task_group::TaskGroup,
}

#[cfg(feature = "client")]
impl Transport {
    /// A transport to a server in another process or on another machine
    /// (time limits apply), with no credential or address yet: the
    /// network transports fill those in.
    #[allow(dead_code)] // each network transport is a feature of its own
    pub(crate) fn remote(
        outgoing: mpsc::Sender<Message>,
        incoming: mpsc::Receiver<Incoming>,
        tasks: crate::task_group::TaskGroup,
    ) -> Transport {
        Transport {
            outgoing,
            incoming,
            #[cfg(feature = "stdio")]
            process: None,
            timed: true,
            credential: Credential::None,
            endpoint: None,
            address: None,
            tasks,
        }
    }
}

#[cfg(feature = "client")]
/// The credential a transport sends with each request (HTTP, WebSocket),
/// for the result cache: private results are kept per credential.
#[derive(Clone, Default)]
pub(crate) enum Credential {
    /// None: a local transport.
    #[default]
    None,
    /// A fixed `Authorization` header value.
    Fixed(String),
    /// The provider that gives each request its credentials.
    #[cfg(any(feature = "http-client", feature = "websocket"))]
    Provider(Arc<dyn AuthProvider>),
}

#[cfg(feature = "client")]
impl std::fmt::Debug for Credential {
    /// The kind of credential, never its value.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Credential::None => "None",
            Credential::Fixed(_) => "Fixed(***)",
            #[cfg(any(feature = "http-client", feature = "websocket"))]
            Credential::Provider(_) => "Provider",
        })
    }
}

#[cfg(feature = "client")]
impl Credential {
    /// The credential of a transport with this provider and these headers.
    #[cfg(any(feature = "http-client", feature = "websocket"))]
    pub(crate) fn of(auth: Option<&Arc<dyn AuthProvider>>, headers: &[(String, String)]) -> Credential {
        match auth {
            Some(provider) => Credential::Provider(provider.clone()),
            None => headers
                .iter()
                .find(|(name, _)| name.eq_ignore_ascii_case("authorization"))
                .map_or(Credential::None, |(_, value)| Credential::Fixed(value.clone())),
        }
    }

    /// The SHA-256 digest of the current credential, if there is one.
    pub(crate) async fn digest(&self) -> Option<[u8; 32]> {
        let value = match self {
            Credential::None => return None,
            Credential::Fixed(value) => value.clone(),
            #[cfg(any(feature = "http-client", feature = "websocket"))]
            Credential::Provider(provider) => provider.authorization().await.ok().flatten()?,
        };
        Some(Sha256::digest(value.as_bytes()).into())
    }
}
