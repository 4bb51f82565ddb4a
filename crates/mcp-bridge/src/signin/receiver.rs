//! The loopback receiver of a sign-in: a small HTTP server on 127.0.0.1 at
//! the redirect port. The browser gets a one-time start URL
//! (`/start/<token>`) that redirects to the authorization URL, so the
//! authorization URL itself never goes to another program; the
//! authorization server sends the browser back to `/callback`.
//!
//! Each connection is served by hyper, one request, and gets 16 KiB and
//! 10 s for its request head (431 beyond, 400 for one not HTTP/1); at most 16
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

use hyper::body::Incoming;
use hyper::header::{self, HeaderValue};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode, Uri};
use hyper_util::rt::{TokioIo, TokioTimer};
use mcp_bridge_sdk::auth::AuthorizationResponse;
use mcp_bridge_sdk::task_group::TaskGroup;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// The largest request head read.
pub const MAX_HEAD_BYTES: usize = 16 * 1024;
/// The time a connection gets to send its head.
pub const HEAD_TIMEOUT: Duration = Duration::from_secs(10);
/// Connections served at once (a newcomer closes the oldest).
pub const MAX_CONNECTIONS: usize = 16;

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
                () = serve(stream, shared) => {}
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

/// A small HTML page as the whole answer, with `extra` headers.
fn page(status: StatusCode, extra: &[(header::HeaderName, &str)], text: &str) -> Response<String> {
    let body = format!(
        "<!doctype html><html><head><meta charset=\"utf-8\"><title>mcp-bridge</title></head><body><p>{text}</p></body></html>"
    );
    let mut answer = Response::new(body);
    *answer.status_mut() = status;
    let headers = answer.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("text/html; charset=utf-8"));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    headers.insert(header::REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
    for (name, value) in extra {
        if let Ok(value) = HeaderValue::from_str(value) {
            headers.insert(name.clone(), value);
        }
    }
    answer
}

/// One connection, by hyper: its head within [`MAX_HEAD_BYTES`] (431
/// beyond, 400 for one that is not HTTP/1) and [`HEAD_TIMEOUT`], one
/// request answered, then closed.
async fn serve(stream: TcpStream, shared: Arc<Shared>) {
    let answer = service_fn(move |request: Request<Incoming>| {
        let shared = shared.clone();
        async move {
            let answer = if request.method() == Method::GET {
                route(request.uri(), &shared).await
            } else {
                page(StatusCode::METHOD_NOT_ALLOWED, &[(header::ALLOW, "GET")], "Only GET is served here.")
            };
            Ok::<_, std::convert::Infallible>(answer)
        }
    });
    let connection = http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(HEAD_TIMEOUT)
        .max_buf_size(MAX_HEAD_BYTES)
        .keep_alive(false)
        .title_case_headers(true)
        .serve_connection(TokioIo::new(stream), answer);
    if let Err(e) = connection.await {
        tracing::debug!("a connection to the sign-in receiver failed: {e}");
    }
}

async fn route(target: &Uri, shared: &Shared) -> Response<String> {
    let (path, query) = (target.path(), target.query().unwrap_or(""));
    if let Some(token) = path.strip_prefix("/start/") {
        if token != shared.token {
            return page(StatusCode::NOT_FOUND, &[], "Not found.");
        }
        if shared.started.swap(true, std::sync::atomic::Ordering::SeqCst) {
            let _ = shared.delivered.send(Delivery::StartReused).await;
            return page(
                StatusCode::GONE,
                &[],
                "This sign-in link was already used, so the sign-in was stopped. Start the sign-in again from your editor.",
            );
        }
        return page(
            StatusCode::SEE_OTHER,
            &[(header::LOCATION, &shared.authorization_url)],
            "Redirecting to sign in.",
        );
    }
    if path == "/callback" {
        let url = format!("http://127.0.0.1/callback?{query}");
        let Ok(response) = AuthorizationResponse::from_redirect(&url) else {
            return page(StatusCode::BAD_REQUEST, &[], "Bad request.");
        };
        if response.state.as_deref() != Some(shared.state.as_str()) {
            return page(StatusCode::BAD_REQUEST, &[], "This answer is not for the sign-in in progress.");
        }
        let done = response.error.is_none();
        let _ = shared.delivered.send(Delivery::Callback(response)).await;
        return if done {
            page(StatusCode::OK, &[], "Signed in. You can close this tab and go back to your editor.")
        } else {
            page(StatusCode::OK, &[], "The sign-in was not completed. You can close this tab.")
        };
    }
    page(StatusCode::NOT_FOUND, &[], "Not found.")
}
