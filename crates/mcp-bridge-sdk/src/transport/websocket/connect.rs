//! The client's WebSocket transport: TCP, TLS for `wss`, the upgrade with
//! its credentials, then one JSON-RPC message per text message.

use std::sync::Arc;
use std::time::Duration;

use futures_util::StreamExt;
use mcp_bridge_protocol::{Message, decode_message};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;
use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;
use tokio_rustls::TlsConnector;
use tokio_rustls::rustls::pki_types::ServerName;
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::http::{HeaderName, HeaderValue, header};
use tokio_tungstenite::tungstenite::{Error as WsError, handshake::client::Request};

use crate::error::Error;
use crate::limits::{CLOSE_GRACE, OUTGOING_QUEUE};
use crate::task_group::TaskGroup;
use crate::transport::credentials::{AuthProvider, AuthRefusal, DEFAULT_MAX_RESPONSE_BYTES, without_credentials};
use crate::transport::{Credential, Incoming, TlsClientOptions, Transport};

use super::SUBPROTOCOL;
use super::frames::{self, Received};

/// The longest time to open a connection (TCP, TLS and the upgrade).
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(30);

/// Where and how to reach a WebSocket server.
#[derive(Clone)]
#[non_exhaustive]
pub struct WebSocketConfig {
    /// The endpoint URL, `ws://` or `wss://`.
    pub url: String,
    /// The largest message accepted from the server.
    pub max_message_bytes: usize,
    /// Headers added to the upgrade request.
    pub headers: Vec<(String, String)>,
    /// The trust anchors, revocation lists and client certificate of `wss`.
    pub tls: TlsClientOptions,
    /// Credentials of the upgrade request; asked once more when the server
    /// refuses them with 401 or 403.
    pub auth: Option<Arc<dyn AuthProvider>>,
    /// The longest time to open the connection.
    pub connect_timeout: Duration,
}

crate::transport::tls::tls_file_setters!(WebSocketConfig);

crate::setters::with_setters! {
    WebSocketConfig {
        value with_max_message_bytes => max_message_bytes: usize,
        value with_headers => headers: Vec<(String, String)>,
        value with_tls => tls: TlsClientOptions,
        some with_auth => auth: Arc<dyn AuthProvider>,
        value with_connect_timeout => connect_timeout: Duration,
    }
}

impl WebSocketConfig {
    /// A configuration with the default limits and no credentials.
    pub fn new(url: impl Into<String>) -> Self {
        WebSocketConfig {
            url: url.into(),
            max_message_bytes: DEFAULT_MAX_RESPONSE_BYTES,
            headers: Vec::new(),
            tls: TlsClientOptions::default(),
            auth: None,
            connect_timeout: DEFAULT_CONNECT_TIMEOUT,
        }
    }
}

impl std::fmt::Debug for WebSocketConfig {
    /// The configuration with header names only: values may be secrets.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<&str> = self.headers.iter().map(|(name, _)| name.as_str()).collect();
        f.debug_struct("WebSocketConfig")
            .field("url", &without_credentials(&self.url))
            .field("max_message_bytes", &self.max_message_bytes)
            .field("headers", &names)
            .field("tls", &self.tls)
            .field("auth", &self.auth)
            .field("connect_timeout", &self.connect_timeout)
            .finish()
    }
}

/// Connects a client transport to the WebSocket server at `config.url`.
///
/// # Errors
/// [`Error::InvalidRequest`] for a URL that is not `ws://` or `wss://`, a
/// header that cannot be sent, or a CA or identity file that cannot be
/// used; [`Error::Connect`] when the server cannot be reached (or TLS
/// fails); [`Error::Upgrade`] when it refuses the upgrade.
pub async fn connect(config: WebSocketConfig) -> Result<Transport, Error> {
    let timeout = config.connect_timeout;
    let stream = tokio::time::timeout(timeout, open(&config)).await.map_err(|_| Error::Connect {
        source: std::io::Error::new(
            std::io::ErrorKind::TimedOut,
            format!("no WebSocket connection within {} ms", timeout.as_millis()),
        ),
    })??;
    let credential = Credential::of(config.auth.as_ref(), &config.headers);
    let mut transport = start(stream, config.max_message_bytes, credential);
    transport.endpoint = Some(config.url);
    Ok(transport)
}

/// A byte stream that is plain TCP or TLS over it.
trait Socket: AsyncRead + AsyncWrite + Unpin + Send {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send> Socket for T {}

/// The parts of the endpoint URL a connection needs.
struct Endpoint {
    host: String,
    port: u16,
    tls: bool,
}

fn endpoint(url: &str) -> Result<Endpoint, Error> {
    let invalid = |reason: &str| Error::InvalidRequest { reason: reason.to_owned() };
    let parsed: http::Uri = url.parse().map_err(|_| invalid("the WebSocket URL is not a valid URL"))?;
    let tls = match parsed.scheme_str() {
        Some("ws") => false,
        Some("wss") => true,
        _ => return Err(invalid("a WebSocket URL starts with ws:// or wss://")),
    };
    let authority = parsed.authority().ok_or_else(|| invalid("the WebSocket URL has no host"))?;
    if authority.as_str().contains('@') {
        return Err(invalid("a WebSocket URL carries no user name or password: use a header or auth"));
    }
    let host = authority.host().trim_start_matches('[').trim_end_matches(']');
    if host.is_empty() {
        return Err(invalid("the WebSocket URL has no host"));
    }
    let port = authority.port_u16().unwrap_or(if tls { 443 } else { 80 });
    Ok(Endpoint { host: host.to_owned(), port, tls })
}

/// TCP, then TLS for `wss`, then the upgrade; once more when the server
/// refuses the credentials and the provider has new ones.
async fn open(config: &WebSocketConfig) -> Result<WebSocketStream<Box<dyn Socket>>, Error> {
    let endpoint = endpoint(&config.url)?;
    let tls = match endpoint.tls {
        true => {
            let settings = crate::transport::tls::client_config(&config.tls, &[b"http/1.1"])?;
            let name = ServerName::try_from(endpoint.host.clone())
                .map_err(|_| Error::InvalidRequest { reason: "the WebSocket URL's host is not a valid name".into() })?;
            Some((TlsConnector::from(Arc::new(settings)), name))
        }
        false => None,
    };
    let mut asked_again = false;
    loop {
        let tcp = TcpStream::connect((endpoint.host.as_str(), endpoint.port))
            .await
            .map_err(|source| Error::Connect { source })?;
        let _ = tcp.set_nodelay(true);
        let socket: Box<dyn Socket> = match &tls {
            Some((connector, name)) => {
                Box::new(connector.connect(name.clone(), tcp).await.map_err(|source| Error::Connect { source })?)
            }
            None => Box::new(tcp),
        };
        let request = upgrade_request(config).await?;
        let sent_at = Instant::now();
        let limits = frames::protocol_limits(config.max_message_bytes);
        let refused = match tokio_tungstenite::client_async_with_config(request, socket, Some(limits)).await {
            Ok((stream, _)) => return Ok(stream),
            Err(WsError::Http(response)) => response,
            Err(e) => return Err(Error::Upgrade { status: None, reason: e.to_string() }),
        };
        let status = refused.status().as_u16();
        if let (Some(auth), 401 | 403, false) = (&config.auth, status, asked_again) {
            asked_again = true;
            let refusal = AuthRefusal {
                status,
                www_authenticate: refused
                    .headers()
                    .get(header::WWW_AUTHENTICATE)
                    .and_then(|v| v.to_str().ok())
                    .map(str::to_owned),
                sent_at,
                method: "websocket/upgrade".into(),
                dpop_nonce: None,
                // The upgrade is the connection's, not one request's.
                ask_user: None,
            };
            if auth.refused(refusal).await {
                continue;
            }
        }
        return Err(Error::Upgrade { status: Some(status), reason: format!("the server answered HTTP {status}") });
    }
}

/// The upgrade request: the URL, the `mcp` subprotocol, the configured
/// headers and the credentials (marked sensitive).
async fn upgrade_request(config: &WebSocketConfig) -> Result<Request, Error> {
    let invalid = |reason: String| Error::InvalidRequest { reason };
    let mut request = config
        .url
        .as_str()
        .into_client_request()
        .map_err(|_| invalid("the WebSocket URL cannot be requested".into()))?;
    let headers = request.headers_mut();
    headers.insert(header::SEC_WEBSOCKET_PROTOCOL, HeaderValue::from_static(SUBPROTOCOL));
    for (name, value) in &config.headers {
        let name =
            HeaderName::try_from(name.as_str()).map_err(|_| invalid(format!("{name:?} is not a header name")))?;
        let value = HeaderValue::try_from(value.as_str())
            .map_err(|_| invalid(format!("the value of header {name} is not a valid header value")))?;
        headers.append(name, value);
    }
    if let Some(auth) = &config.auth {
        // A DPoP proof names the upgrade as the HTTP request it is.
        let http_url = match config.url.split_once("://") {
            Some((scheme, rest)) if scheme.eq_ignore_ascii_case("wss") => format!("https://{rest}"),
            Some((_, rest)) => format!("http://{rest}"),
            None => config.url.clone(),
        };
        let credentials = auth.credentials("GET", &http_url).await.map_err(|e| invalid(e.to_string()))?;
        headers.extend(credentials.into_headers().map_err(|e| invalid(e.into()))?);
    }
    Ok(request)
}

/// Runs an open connection as a client transport: a reader task decoding
/// each text message for the client's router, a writer task sending the
/// client's messages and, when either side ends, the close frame.
fn start<S>(stream: WebSocketStream<S>, max_message_bytes: usize, credential: Credential) -> Transport
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let (sink, mut messages_in) = stream.split();
    let (outgoing, out_rx) = mpsc::channel::<Message>(OUTGOING_QUEUE);
    let (to_client, incoming) = mpsc::channel::<Incoming>(OUTGOING_QUEUE);
    let (close, close_rx) = oneshot::channel();
    let tasks = TaskGroup::default();
    tasks.spawn_to_finish(CLOSE_GRACE, frames::write_messages(sink, out_rx, close_rx));
    let closed = tasks.stopping();
    tasks.spawn_to_finish(CLOSE_GRACE, async move {
        let why_closed = loop {
            let received = tokio::select! {
                received = frames::receive(&mut messages_in, max_message_bytes) => received,
                () = closed.cancelled() => break None,
            };
            let text = match received {
                Received::Text(text) => text,
                Received::End => break None,
                Received::Fatal(frame) => break Some(frame),
            };
            let item = match decode_message(text.as_bytes(), mcp_bridge_protocol::UPSTREAM_MAX_DEPTH) {
                Ok(message) => Incoming::Message(message),
                Err(e) => Incoming::Undecodable { id: e.reply_id(text.as_bytes()), reason: e.to_string() },
            };
            if to_client.send(item).await.is_err() {
                break None;
            }
        };
        // The writer stops too; with `to_client` dropped here the client's
        // waiting requests fail with Closed.
        let _ = close.send(why_closed);
    });
    Transport { credential, ..Transport::remote(outgoing, incoming, tasks) }
}
