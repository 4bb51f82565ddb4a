//! The loopback receiver of a sign-in: a small HTTP server on 127.0.0.1 at
//! the redirect port. The browser gets a one-time start URL
//! (`/start/<token>`) that redirects to the authorization URL, so the
//! authorization URL itself never goes to another program; the
//! authorization server sends the browser back to `/callback`.
//!
//! Each connection gets 16 KiB and 10 s for its request head; at most 16
//! are served at once, and a newcomer at that cap closes the oldest (which
//! is still waiting for its head: a request is answered at once), so
//! another local process holding connections cannot keep the browser's
//! redirect out. A callback with the wrong state is answered and
//! ignored (it does not end the sign-in); a second GET of the start URL
//! ends it: someone else may be signing in with it.

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcp_bridge_sdk::auth::AuthorizationResponse;
use mcp_bridge_sdk::task_group::TaskGroup;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// The largest request head read.
pub const MAX_HEAD_BYTES: usize = 16 * 1024;
/// The time a connection gets to send its head.
pub const HEAD_TIMEOUT: Duration = Duration::from_secs(10);
/// Connections served at once (a newcomer closes the oldest).
pub const MAX_CONNECTIONS: usize = 16;

/// Why a request head is refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HeadError {
    /// Over [`MAX_HEAD_BYTES`] without its end.
    TooLarge,
    /// Not `METHOD TARGET HTTP/1.x`.
    Malformed,
}

/// The method and target of a request head (everything up to the blank
/// line); headers are not needed.
///
/// # Errors
/// [`HeadError::Malformed`] for a request line that is not HTTP/1.
pub fn parse_request_line(head: &[u8]) -> Result<(String, String), HeadError> {
    let line_end = head.iter().position(|&b| b == b'\r' || b == b'\n').unwrap_or(head.len());
    let line = std::str::from_utf8(&head[..line_end]).map_err(|_| HeadError::Malformed)?;
    let mut parts = line.split(' ');
    match (parts.next(), parts.next(), parts.next(), parts.next()) {
        (Some(method), Some(target), Some(version), None)
            if !method.is_empty() && target.starts_with('/') && version.starts_with("HTTP/1.") =>
        {
            Ok((method.to_owned(), target.to_owned()))
        }
        _ => Err(HeadError::Malformed),
    }
}

/// What ended a sign-in at the receiver.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Delivery {
    /// The callback with the expected state.
    Callback(AuthorizationResponse),
    /// The start URL was opened a second time.
    StartReused,
}

/// A running receiver; stops when dropped.
#[derive(Debug)]
pub struct Receiver {
    addr: SocketAddr,
    token: String,
    delivered: mpsc::Receiver<Delivery>,
    /// The accept loop and each connection it serves.
    tasks: TaskGroup,
}

impl Drop for Receiver {
    fn drop(&mut self) {
        self.tasks.cancel();
    }
}

/// The state the connections share.
struct Shared {
    token: String,
    authorization_url: String,
    state: String,
    started: std::sync::atomic::AtomicBool,
    delivered: mpsc::Sender<Delivery>,
}

fn random_token() -> String {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).expect("invariant: the OS random source is available");
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

impl Receiver {
    /// Listens on 127.0.0.1:`port` for the sign-in whose authorization URL
    /// and state are given.
    ///
    /// # Errors
    /// The port cannot be bound (in use, not allowed).
    pub async fn start(port: u16, authorization_url: &str, state: &str) -> std::io::Result<Receiver> {
        let listener = bind(port).await?;
        let addr = listener.local_addr()?;
        let (tx, delivered) = mpsc::channel(4);
        let token = random_token();
        let shared = Arc::new(Shared {
            token: token.clone(),
            authorization_url: authorization_url.to_owned(),
            state: state.to_owned(),
            started: std::sync::atomic::AtomicBool::new(false),
            delivered: tx,
        });
        let tasks = TaskGroup::default();
        tasks.spawn(accept_loop(listener, shared, tasks.clone()));
        Ok(Receiver { addr, token, delivered, tasks })
    }

    /// The one-time URL for the browser.
    pub fn start_url(&self) -> String {
        format!("http://{}/start/{}", self.addr, self.token)
    }

    /// The address listened on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Waits for the callback, or for a reuse of the start URL.
    ///
    /// # Cancel safety
    /// Cancel safe.
    pub async fn wait(&mut self) -> Option<Delivery> {
        self.delivered.recv().await
    }
}

/// Binds 127.0.0.1:`port`. The receiver of the previous sign-in may still
/// be letting its port go: an address in use is tried again for a second.
async fn bind(port: u16) -> std::io::Result<TcpListener> {
    let mut tries = 0;
    loop {
        match TcpListener::bind(("127.0.0.1", port)).await {
            Err(e) if e.kind() == std::io::ErrorKind::AddrInUse && port != 0 && tries < 20 => {
                tries += 1;
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            other => return other,
        }
    }
}

/// The redirect URI of a receiver on `port`.
pub fn redirect_uri(port: u16) -> String {
    format!("http://127.0.0.1:{port}/callback")
}

async fn accept_loop(listener: TcpListener, shared: Arc<Shared>, tasks: TaskGroup) {
    let open = Arc::new(Mutex::new(Open::default()));
    loop {
        let (stream, _) = match listener.accept().await {
            Ok(accepted) => accepted,
            Err(_) => continue,
        };
        let (id, shed) = lock(&open).admit();
        let (shared, open) = (shared.clone(), open.clone());
        tasks.spawn(async move {
            tokio::select! {
                () = serve(stream, &shared) => {}
                () = shed.cancelled() => {}
            }
            lock(&open).leave(id);
        });
    }
}

/// The connections being served, oldest first.
#[derive(Default)]
struct Open {
    next: u64,
    connections: VecDeque<(u64, CancellationToken)>,
}

impl Open {
    /// A place for a new connection, after closing the oldest at the cap:
    /// its id and the token that closes it.
    fn admit(&mut self) -> (u64, CancellationToken) {
        if self.connections.len() >= MAX_CONNECTIONS
            && let Some((_, oldest)) = self.connections.pop_front()
        {
            oldest.cancel();
        }
        let (id, shed) = (self.next, CancellationToken::new());
        self.next += 1;
        self.connections.push_back((id, shed.clone()));
        (id, shed)
    }

    fn leave(&mut self, id: u64) {
        self.connections.retain(|(held, _)| *held != id);
    }
}

fn lock(open: &Mutex<Open>) -> std::sync::MutexGuard<'_, Open> {
    open.lock().unwrap_or_else(|e| e.into_inner())
}

/// Reads a request head: up to the blank line, at most [`MAX_HEAD_BYTES`].
async fn read_head(stream: &mut TcpStream) -> Result<Vec<u8>, HeadError> {
    let mut head = Vec::new();
    let mut chunk = [0u8; 2048];
    loop {
        let n = stream.read(&mut chunk).await.map_err(|_| HeadError::Malformed)?;
        if n == 0 {
            return Err(HeadError::Malformed);
        }
        let scanned_from = head.len().saturating_sub(3);
        head.extend_from_slice(&chunk[..n]);
        let end = head[scanned_from..]
            .windows(4)
            .position(|w| w == b"\r\n\r\n")
            .map(|at| scanned_from + at + 4)
            .or_else(|| head[scanned_from..].windows(2).position(|w| w == b"\n\n").map(|at| scanned_from + at + 2));
        match end {
            Some(end) if end <= MAX_HEAD_BYTES => return Ok(head),
            Some(_) => return Err(HeadError::TooLarge),
            None if head.len() > MAX_HEAD_BYTES => return Err(HeadError::TooLarge),
            None => {}
        }
    }
}

fn page(status: &str, extra_headers: &str, text: &str) -> Vec<u8> {
    let body = format!(
        "<!doctype html><html><head><meta charset=\"utf-8\"><title>mcp-bridge</title></head><body><p>{text}</p></body></html>"
    );
    format!(
        "HTTP/1.1 {status}\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: {}\r\nCache-Control: no-store\r\nReferrer-Policy: no-referrer\r\nConnection: close\r\n{extra_headers}\r\n{body}",
        body.len()
    )
    .into_bytes()
}

async fn serve(mut stream: TcpStream, shared: &Shared) {
    let head = match tokio::time::timeout(HEAD_TIMEOUT, read_head(&mut stream)).await {
        Ok(Ok(head)) => head,
        Ok(Err(HeadError::TooLarge)) => {
            let _ = stream.write_all(&page("431 Request Header Fields Too Large", "", "Request too large.")).await;
            return;
        }
        _ => return,
    };
    let answer = match parse_request_line(&head) {
        Ok((method, target)) if method == "GET" => route(&target, shared).await,
        Ok(_) => page("405 Method Not Allowed", "Allow: GET\r\n", "Only GET is served here."),
        Err(_) => page("400 Bad Request", "", "Bad request."),
    };
    let _ = stream.write_all(&answer).await;
    let _ = stream.shutdown().await;
}

async fn route(target: &str, shared: &Shared) -> Vec<u8> {
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    if let Some(token) = path.strip_prefix("/start/") {
        if token != shared.token {
            return page("404 Not Found", "", "Not found.");
        }
        if shared.started.swap(true, std::sync::atomic::Ordering::SeqCst) {
            let _ = shared.delivered.send(Delivery::StartReused).await;
            return page(
                "410 Gone",
                "",
                "This sign-in link was already used, so the sign-in was stopped. Start the sign-in again from your editor.",
            );
        }
        return page(
            "303 See Other",
            &format!("Location: {}\r\n", shared.authorization_url),
            "Redirecting to sign in.",
        );
    }
    if path == "/callback" {
        let url = format!("http://127.0.0.1/callback?{query}");
        let Ok(response) = AuthorizationResponse::from_redirect(&url) else {
            return page("400 Bad Request", "", "Bad request.");
        };
        if response.state.as_deref() != Some(shared.state.as_str()) {
            return page("400 Bad Request", "", "This answer is not for the sign-in in progress.");
        }
        let done = response.error.is_none();
        let _ = shared.delivered.send(Delivery::Callback(response)).await;
        return if done {
            page("200 OK", "", "Signed in. You can close this tab and go back to your editor.")
        } else {
            page("200 OK", "", "The sign-in was not completed. You can close this tab.")
        };
    }
    page("404 Not Found", "", "Not found.")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_lines_are_parsed_strictly() {
        assert_eq!(
            parse_request_line(b"GET /callback?code=x HTTP/1.1\r\nHost: a\r\n\r\n"),
            Ok(("GET".into(), "/callback?code=x".into()))
        );
        for bad in [
            &b"GET /x\r\n\r\n"[..],
            b"GET http://evil/ HTTP/1.1\r\n\r\n",
            b"GET /x HTTP/2\r\n",
            b"",
            b"\xff /x HTTP/1.1\r\n",
        ] {
            assert_eq!(parse_request_line(bad), Err(HeadError::Malformed), "{bad:?}");
        }
    }
}
