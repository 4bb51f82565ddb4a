//! The sign-in of the bridge through its public pieces: the loopback
//! receiver (one-time start URL, callback state, request limits) and the
//! authorize hook with its gate (browser before initialized, consent after,
//! the failures with their causes; a daemon's gate asking the client of
//! each request), and sign-ins taking turns at the redirect port.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcp_bridge::signin::receiver::{Delivery, MAX_HEAD_BYTES, Receiver};
use mcp_bridge::signin::{Consent, Failure, Gate, Opener, SignIn, SignInOptions};
use mcp_bridge_protocol::types::{ElicitAction, ElicitRequestParams, ElicitResult, InputRequest, InputResponse};
use mcp_bridge_sdk::auth::{AskUser, AuthorizationRequest};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const AUTH_URL: &str = "https://auth.example.com/authorize?client_id=c&state=st-1&redirect_uri=x";

/// A raw GET; returns the status line and the whole answer.
async fn get(addr: std::net::SocketAddr, target: &str) -> (String, String) {
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    stream.write_all(format!("GET {target} HTTP/1.1\r\nHost: {addr}\r\n\r\n").as_bytes()).await.unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).await.unwrap();
    (answer.lines().next().unwrap_or_default().to_owned(), answer)
}

fn path_of(url: &str) -> String {
    url.split_once("//").unwrap().1.split_once('/').map(|(_, p)| format!("/{p}")).unwrap()
}

#[tokio::test]
async fn the_start_url_redirects_once_and_a_second_use_stops_the_sign_in() {
    let mut receiver = Receiver::start(0, AUTH_URL, "st-1").await.unwrap();
    let start = path_of(&receiver.start_url());
    let (status, answer) = get(receiver.addr(), &start).await;
    assert!(status.contains("303"), "{status}");
    assert!(answer.contains(&format!("Location: {AUTH_URL}\r\n")), "{answer}");
    let (status, _) = get(receiver.addr(), "/start/not-the-token").await;
    assert!(status.contains("404"));
    let (status, _) = get(receiver.addr(), &start).await;
    assert!(status.contains("410"), "{status}");
    assert_eq!(receiver.wait().await, Some(Delivery::StartReused));
}

#[tokio::test]
async fn only_the_callback_with_the_expected_state_ends_the_wait() {
    let mut receiver = Receiver::start(0, AUTH_URL, "st-1").await.unwrap();
    let (status, _) = get(receiver.addr(), "/callback?code=c0de&state=forged").await;
    assert!(status.contains("400"), "{status}");
    let (status, answer) =
        get(receiver.addr(), "/callback?code=c0de&state=st-1&iss=https%3A%2F%2Fauth.example.com").await;
    assert!(status.contains("200") && answer.contains("Signed in"), "{answer}");
    let Some(Delivery::Callback(response)) = receiver.wait().await else { panic!("no callback") };
    assert_eq!(response.code.as_deref(), Some("c0de"));
    assert_eq!(response.iss.as_deref(), Some("https://auth.example.com"));
}

#[tokio::test]
async fn bad_requests_are_answered_and_change_nothing() {
    let receiver = Receiver::start(0, AUTH_URL, "st-1").await.unwrap();
    let addr = receiver.addr();
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let huge = format!("GET /callback HTTP/1.1\r\nX: {}\r\n\r\n", "a".repeat(MAX_HEAD_BYTES));
    let _ = stream.write_all(huge.as_bytes()).await;
    let mut answer = String::new();
    let _ = stream.read_to_string(&mut answer).await;
    assert!(answer.starts_with("HTTP/1.1 431"), "{answer}");
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    stream.write_all(b"POST /callback HTTP/1.1\r\n\r\n").await.unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).await.unwrap();
    assert!(answer.starts_with("HTTP/1.1 405"), "{answer}");
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    stream.write_all(b"garbage\r\n\r\n").await.unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).await.unwrap();
    assert!(answer.starts_with("HTTP/1.1 400"), "{answer}");
}

/// A browser whose user approves at once: opens the start URL, and plays
/// the authorization server by sending the callback with the state of the
/// authorization URL it was redirected to.
fn approving_browser(opened: Arc<AtomicUsize>) -> Opener {
    Arc::new(move |start_url: &str| {
        opened.fetch_add(1, Ordering::SeqCst);
        let start_url = start_url.to_owned();
        tokio::spawn(async move {
            let addr: std::net::SocketAddr =
                start_url.trim_start_matches("http://").split('/').next().unwrap().parse().unwrap();
            let (_, answer) = get(addr, &path_of(&start_url)).await;
            let location = answer.lines().find_map(|l| l.strip_prefix("Location: ")).unwrap().to_owned();
            let state = location.split("state=").nth(1).unwrap().split('&').next().unwrap().to_owned();
            get(addr, &format!("/callback?code=c0de&state={state}")).await;
        });
        Ok(())
    })
}

fn request(port: u16) -> AuthorizationRequest {
    AuthorizationRequest::new(AUTH_URL, format!("http://127.0.0.1:{port}/callback"), "st-1")
}

fn free_port() -> u16 {
    test_support::spare_port()
}

fn sign_in(gate: Gate, port: u16, timeout: Duration, lines: Arc<Mutex<Vec<String>>>) -> Arc<SignIn> {
    let announce = Arc::new(move |url: &str| lines.lock().unwrap().push(format!("mcp-bridge: sign in at {url}")));
    SignIn::new(SignInOptions::new(port, timeout), Arc::new(gate), announce)
}

#[tokio::test]
async fn before_initialized_the_browser_signs_in_and_the_line_is_written_once() {
    let opened = Arc::new(AtomicUsize::new(0));
    let lines = Arc::new(Mutex::new(Vec::new()));
    let port = free_port();
    let signin =
        sign_in(Gate::new(Some(approving_browser(opened.clone()))), port, Duration::from_secs(10), lines.clone());
    let authorize = signin.authorize();
    for _ in 0..2 {
        let response = authorize(request(port)).await.unwrap();
        assert_eq!(response.code.as_deref(), Some("c0de"));
    }
    assert_eq!(opened.load(Ordering::SeqCst), 2);
    assert_eq!(*lines.lock().unwrap(), [format!("mcp-bridge: sign in at {AUTH_URL}")]);
    assert_eq!(signin.last_failure(), None);
}

#[tokio::test]
async fn failures_keep_their_cause() {
    let lines = Arc::new(Mutex::new(Vec::new()));
    // Nobody signs in.
    let port = free_port();
    let signin = sign_in(Gate::new(None), port, Duration::from_millis(300), lines.clone());
    let err = signin.authorize()(request(port)).await.unwrap_err().to_string();
    assert!(err.contains("did not finish in time"), "{err}");
    assert_eq!(signin.last_failure(), Some(Failure::Timeout));
    // The redirect port is taken.
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port();
    let signin = sign_in(Gate::new(None), port, Duration::from_secs(1), lines.clone());
    let err = signin.authorize()(request(port)).await.unwrap_err().to_string();
    assert!(err.contains("redirect is in use"), "{err}");
    assert_eq!(signin.last_failure(), Some(Failure::RedirectPortUnavailable));
    // A URL that is not https.
    let signin = sign_in(Gate::new(None), free_port(), Duration::from_secs(1), lines.clone());
    let mut bad = request(0);
    bad.url = "http://auth.example.com/authorize".into();
    signin.authorize()(bad).await.unwrap_err();
    assert_eq!(signin.last_failure(), Some(Failure::InvalidUrl));
    // No browser can start.
    let port = free_port();
    let failing: Opener = Arc::new(|_url: &str| Err("no such program".into()));
    let signin = sign_in(Gate::new(Some(failing)), port, Duration::from_secs(1), lines);
    signin.authorize()(request(port)).await.unwrap_err();
    assert_eq!(signin.last_failure(), Some(Failure::BrowserLaunchFailed));
}

#[tokio::test]
async fn after_initialized_the_client_is_asked_and_a_refusal_cools_down() {
    let opened = Arc::new(AtomicUsize::new(0));
    let asked = Arc::new(Mutex::new(Vec::new()));
    let gate = Gate::new(Some(approving_browser(opened.clone())));
    let seen = asked.clone();
    let declining: Consent = Arc::new(move |prompt: mcp_bridge::signin::SignInPrompt| {
        seen.lock().unwrap().push(prompt.url);
        Box::pin(async { Ok(false) })
    });
    gate.client_initialized(Some(declining));
    let port = free_port();
    let signin = sign_in(gate, port, Duration::from_secs(2), Arc::default());
    signin.authorize()(request(port)).await.unwrap_err();
    assert_eq!(signin.last_failure(), Some(Failure::Denied));
    assert_eq!(*asked.lock().unwrap(), [AUTH_URL], "the client is shown the authorization URL");
    assert_eq!(opened.load(Ordering::SeqCst), 0, "no browser after initialized");
    signin.authorize()(request(port)).await.unwrap_err();
    assert_eq!(asked.lock().unwrap().len(), 1, "a declined sign-in is not asked again at once");
}

/// Another local process holding every connection of the receiver (and
/// opening more) does not keep the browser's redirect out: a newcomer
/// closes the oldest connection still waiting for its head. On the paused
/// clock: the head time limit passes without waiting for it.
#[tokio::test(start_paused = true)]
async fn connections_that_never_send_a_head_neither_block_the_redirect_nor_outlive_10_seconds() {
    use mcp_bridge::signin::receiver::{HEAD_TIMEOUT, MAX_CONNECTIONS};
    let mut receiver = Receiver::start(0, AUTH_URL, "st-1").await.unwrap();
    let addr = receiver.addr();
    let mut idle = Vec::new();
    for _ in 0..2 * MAX_CONNECTIONS {
        idle.push(tokio::net::TcpStream::connect(addr).await.unwrap());
    }
    // The redirect is answered at once, its connection among the newest.
    let answered = tokio::time::timeout(Duration::from_secs(5), get(addr, "/callback?code=c0de&state=st-1"));
    let (status, _) = answered.await.expect("the redirect waited behind idle connections");
    assert!(status.contains("200"), "{status}");
    let Some(Delivery::Callback(response)) = receiver.wait().await else { panic!("no callback") };
    assert_eq!(response.code.as_deref(), Some("c0de"));
    // The oldest idle connections were closed to make room.
    let mut rest = Vec::new();
    let closed = tokio::time::timeout(Duration::from_secs(1), idle[0].read_to_end(&mut rest)).await;
    assert!(matches!(closed, Ok(Ok(0)) | Ok(Err(_))), "the oldest idle connection is still open");
    // The newest idle one is closed after the head time limit.
    let mut last = idle.pop().unwrap();
    let closed = tokio::time::timeout(HEAD_TIMEOUT + Duration::from_secs(3), last.read_to_end(&mut rest)).await;
    assert!(matches!(closed, Ok(Ok(0)) | Ok(Err(_))), "an idle connection outlived the head time limit");
}

#[tokio::test]
async fn after_initialized_a_client_that_cannot_show_a_url_gets_reauthorization_required() {
    let opened = Arc::new(AtomicUsize::new(0));
    let gate = Gate::new(Some(approving_browser(opened.clone())));
    gate.client_initialized(None);
    let port = free_port();
    let signin = sign_in(gate, port, Duration::from_secs(30), Arc::default());
    // The sign-in's own limit is 30 s: it fails well before, at once.
    let refused = tokio::time::timeout(Duration::from_secs(5), signin.authorize()(request(port)));
    let err = refused.await.expect("no wait for a sign-in nobody can see").unwrap_err().to_string();
    assert_eq!(signin.last_failure(), Some(Failure::ReauthorizationRequired));
    assert!(err.contains("restart the server"), "{err}");
    assert_eq!(opened.load(Ordering::SeqCst), 0);
}

/// An asker whose user answers `action` to every URL elicitation (or that
/// cannot ask at all, for `None`); it keeps the URLs.
fn asker(action: Option<ElicitAction>, asked: Arc<Mutex<Vec<String>>>) -> AskUser {
    AskUser::new(move |request| {
        let asked = asked.clone();
        Box::pin(async move {
            let InputRequest::Elicit(call) = request else { panic!("not an elicitation: {request:?}") };
            let ElicitRequestParams::Url(params) = call.params else { panic!("not a URL elicitation") };
            asked.lock().unwrap().push(params.url);
            let action = action.ok_or_else(|| mcp_bridge_sdk::Error::UndeclaredInputRequest {
                key: "ask".into(),
                capability: "elicitation.url",
            })?;
            Ok(InputResponse::Elicit(ElicitResult { action, ..ElicitResult::decline() }))
        })
    })
}

#[tokio::test]
async fn per_request_the_client_whose_request_needed_the_sign_in_is_asked_else_the_browser_opens() {
    let opened = Arc::new(AtomicUsize::new(0));
    let asked = Arc::new(Mutex::new(Vec::new()));
    let port = free_port();
    let gate = Gate::per_request(Some(approving_browser(opened.clone())));
    let signin = sign_in(gate, port, Duration::from_secs(10), Arc::default());
    // No request behind the sign-in (a server's start): the browser.
    signin.authorize()(request(port)).await.unwrap();
    assert_eq!(opened.load(Ordering::SeqCst), 1);
    // A client that cannot be asked: the browser too.
    let mut cannot = request(port);
    cannot.ask_user = Some(asker(None, asked.clone()));
    signin.authorize()(cannot).await.unwrap();
    assert_eq!(opened.load(Ordering::SeqCst), 2);
    // A call that ended before its client answered: nobody to sign in for.
    let mut gone = request(port);
    gone.ask_user = Some(AskUser::new(|_| Box::pin(async { Err(mcp_bridge_sdk::Error::Closed) })));
    signin.authorize()(gone).await.unwrap_err();
    assert_eq!(opened.load(Ordering::SeqCst), 2, "no browser for a call gone");
    // A client that declines: no browser, and no asking again at once.
    let mut declines = request(port);
    declines.ask_user = Some(asker(Some(ElicitAction::Decline), asked.clone()));
    signin.authorize()(declines.clone()).await.unwrap_err();
    assert_eq!(signin.last_failure(), Some(Failure::Denied));
    signin.authorize()(declines).await.unwrap_err();
    assert_eq!(*asked.lock().unwrap(), [AUTH_URL, AUTH_URL], "the second decline was the cooldown's");
    assert_eq!(opened.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn sign_ins_sharing_a_redirect_port_take_turns() {
    let opened = Arc::new(AtomicUsize::new(0));
    let port = free_port();
    let options = SignInOptions::new(port, Duration::from_secs(10));
    let gate = Arc::new(Gate::per_request(Some(approving_browser(opened.clone()))));
    let quiet = Arc::new(|_: &str| {});
    let (one, two) = (SignIn::new(options.clone(), gate.clone(), quiet.clone()), SignIn::new(options, gate, quiet));
    let (a, b) = tokio::join!(one.authorize()(request(port)), two.authorize()(request(port)));
    assert_eq!((a.unwrap().code, b.unwrap().code), (Some("c0de".into()), Some("c0de".into())));
    assert_eq!(opened.load(Ordering::SeqCst), 2);
}
