//! The URL form end to end: `mcp-bridge [OPTIONS] URL` in front of the
//! example server behind OAuth, with an authorization server over HTTPS (a
//! test CA given with --ca-file). The "browser" is a small program in
//! `$BROWSER` that follows the start URL, the authorization server's
//! approval and the redirect back to the bridge's loopback receiver, as a
//! browser whose user approves does. (The real-browser test with Chromium
//! is the OAuth issue's next step.)
// The "browser" is an executable script run through its #! line: Unix only.
#![cfg(unix)]

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use serde_json::json;
use sha2::Digest;
use test_support::oauth::{Issued, Shared, TestPki, authorization_server, protected};
use test_support::{RawPeer, legacy_initialize};
use tokio::io::AsyncReadExt;

mod daemon;
mod grants;
mod later_sign_ins;
mod stored;

const BRIDGE: &str = env!("CARGO_BIN_EXE_mcp-bridge");

/// A browser that opens its one argument and follows every redirect,
/// trusting the test CA.
const BROWSER: &str = r#"#!/usr/bin/env python3
import os, ssl, sys, urllib.request
context = ssl.create_default_context(cafile=os.environ["FAKE_BROWSER_CA"])
with open(os.environ["FAKE_BROWSER_LOG"], "a") as log:
    log.write(sys.argv[1] + "\n")
    for name, value in os.environ.items():
        if "s3cret" in value:
            log.write("leaked: " + name + "\n")
    try:
        urllib.request.urlopen(sys.argv[1], context=context, timeout=10).read()
    except Exception as e:
        log.write("failed: %r\n" % e)
"#;

struct World {
    dir: PathBuf,
    pki: TestPki,
    issued: Shared,
    /// The authorization server's issuer.
    issuer: String,
    url: String,
}

async fn world(name: &str) -> World {
    world_serving(name, mcp_example_server::build_server().http_router(Default::default())).await
}

/// The OAuth world in front of `server` (an MCP endpoint at `/mcp`).
async fn world_serving(name: &str, server: axum::Router) -> World {
    let dir = std::env::temp_dir().join(format!("mcp-url-form-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("home")).unwrap();
    let pki = TestPki::new(&dir);
    let issued: Shared = Arc::new(Mutex::new(Issued { expires_in: 3600, ..Issued::default() }));
    let issuer = authorization_server(issued.clone(), Some(&pki)).await;
    let url = protected(server, issued.clone(), issuer.clone()).await;
    let browser = dir.join("browser.py");
    std::fs::write(&browser, BROWSER).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&browser, std::fs::Permissions::from_mode(0o755)).unwrap();
    World { dir, pki, issued, issuer, url }
}

fn free_port() -> u16 {
    test_support::spare_port()
}

/// The bridge in the URL form, with its own home (token store) and the
/// test browser; stderr is captured.
fn bridge(w: &World, browser: &Path, extra: &[&str]) -> RawPeer {
    bridge_with(w, browser, &[], extra)
}

/// [`bridge`] with more environment variables.
fn bridge_with(w: &World, browser: &Path, env: &[(&str, &str)], extra: &[&str]) -> RawPeer {
    let mut command = tokio::process::Command::new(BRIDGE);
    command.envs(env.iter().copied());
    command
        .env("HOME", w.dir.join("home"))
        // A secret in the bridge's environment must not reach the browser.
        .env("SERVICE_API_TOKEN", "tok-s3cret")
        .env_remove("XDG_STATE_HOME")
        .env_remove("XDG_CONFIG_HOME")
        .env("MCP_BRIDGE_TOKEN_STORE", "files")
        .env("BROWSER", browser)
        .env("FAKE_BROWSER_CA", &w.pki.ca_file)
        .env("FAKE_BROWSER_LOG", w.dir.join("browser.log"))
        .args(["--ca-file", w.pki.ca_file.to_str().unwrap(), "--redirect-port", &free_port().to_string()])
        .args(extra)
        .arg(&w.url)
        .stderr(std::process::Stdio::piped());
    RawPeer::start(command)
}

async fn finish(mut peer: RawPeer) -> (Option<i32>, String) {
    let mut stderr = peer.child.stderr.take().unwrap();
    let code = peer.finish().await;
    let mut text = String::new();
    stderr.read_to_string(&mut text).await.unwrap();
    (code, text)
}

/// `mcp-bridge logout ARG` with the world's home; its stderr, once it
/// succeeded.
fn logout(w: &World, arg: &str) -> String {
    let out = std::process::Command::new(BRIDGE)
        .env("HOME", w.dir.join("home"))
        .env("MCP_BRIDGE_TOKEN_STORE", "files")
        .args(["logout", arg])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{stderr}");
    stderr
}

fn assert_no_secrets(text: &str) {
    for secret in ["at-1", "rt-1", "code-1", "Bearer "] {
        assert!(!text.contains(secret), "{secret:?} appears in:\n{text}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_sign_in_in_the_browser_lets_the_pending_initialize_and_later_calls_through() {
    let w = world("signin").await;
    let started = Instant::now();
    let mut peer = bridge(&w, &w.dir.join("browser.py"), &[]);
    let init = legacy_initialize(&mut peer, json!({})).await;
    let signed_in_after = started.elapsed();
    assert_eq!(init["result"]["serverInfo"]["name"], "mcp-example-server", "{init}");
    peer.send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#).await;
    peer.send(r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}"#)
        .await;
    let answer = peer.recv_response(2).await;
    assert_eq!(answer["result"]["content"][0]["text"], "hi", "{answer}");
    let (code, stderr) = finish(peer).await;
    assert_eq!(code, Some(0));
    let lines: Vec<&str> = stderr.lines().filter(|l| l.starts_with("mcp-bridge: sign in at https://")).collect();
    assert_eq!(lines.len(), 1, "the sign-in line, once:\n{stderr}");
    let opened = std::fs::read_to_string(w.dir.join("browser.log")).unwrap();
    assert!(
        opened.starts_with("http://127.0.0.1:") && opened.contains("/start/"),
        "the browser got the start URL: {opened}"
    );
    assert_eq!(w.issued.lock().unwrap().authorizations, 1);
    assert_no_secrets(&stderr);
    eprintln!("sign-in: spawn to initialize result in {} ms", signed_in_after.as_millis());

    // A second run uses the stored tokens: no browser (one that fails).
    let mut peer = bridge(&w, Path::new("/bin/false"), &[]);
    let init = legacy_initialize(&mut peer, json!({})).await;
    assert_eq!(init["result"]["serverInfo"]["name"], "mcp-example-server", "{init}");
    let (_, stderr) = finish(peer).await;
    assert!(!stderr.contains("sign in at"), "{stderr}");
    assert_eq!(w.issued.lock().unwrap().authorizations, 1, "no second sign-in");

    // Logout forgets them; the files go too.
    assert!(logout(&w, &w.url).contains("forgot 1"));
    logout(&w, "--all");
    assert_eq!(record_files(&w), Vec::<PathBuf>::new(), "logout --all leaves no record");
    let _ = std::fs::remove_dir_all(&w.dir);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_client_id_given_by_the_administrator_is_used_instead_of_registering() {
    let w = world("static-client").await;
    let browser = w.dir.join("browser.py");
    for (method, expected) in [
        ("client_secret_post", "post admin-given:static-s3cret"),
        ("client_secret_basic", "basic admin-given:static-s3cret"),
    ] {
        let _ = std::fs::remove_dir_all(w.dir.join("home/.local/state"));
        let mut peer = bridge_with(
            &w,
            &browser,
            &[("STATIC_SECRET", "static-s3cret")],
            &["--client-id", "admin-given", "--client-secret-env", "STATIC_SECRET", "--client-auth-method", method],
        );
        let init = legacy_initialize(&mut peer, json!({})).await;
        assert_eq!(init["result"]["serverInfo"]["name"], "mcp-example-server", "{init}");
        let (code, stderr) = finish(peer).await;
        assert_eq!(code, Some(0));
        assert!(!stderr.contains("static-s3cret"), "the secret is not logged:\n{stderr}");
        assert_no_secrets(&stderr);
        assert_eq!(w.issued.lock().unwrap().client_auth.last().map(String::as_str), Some(expected));
    }
    // A private key: a client assertion naming the client, for the issuer.
    let (pem, _) = test_support::oidc::es256_client_key();
    let key_file = w.dir.join("client-key.pem");
    std::fs::write(&key_file, &pem).unwrap();
    let _ = std::fs::remove_dir_all(w.dir.join("home/.local/state"));
    let mut peer =
        bridge(&w, &browser, &["--client-id", "admin-given", "--client-key-file", key_file.to_str().unwrap()]);
    let init = legacy_initialize(&mut peer, json!({})).await;
    assert_eq!(init["result"]["serverInfo"]["name"], "mcp-example-server", "{init}");
    let (_, stderr) = finish(peer).await;
    assert!(!stderr.contains(pem.lines().nth(1).unwrap()), "the key is not logged:\n{stderr}");
    let last = w.issued.lock().unwrap().client_auth.last().cloned().unwrap();
    let claims: serde_json::Value = serde_json::from_str(last.strip_prefix("jwt admin-given ").expect(&last)).unwrap();
    assert_eq!(
        (claims["iss"].as_str(), claims["sub"].as_str()),
        (Some("admin-given"), Some("admin-given")),
        "{claims}"
    );

    let issued = w.issued.lock().unwrap();
    assert_eq!(issued.registrations, 0, "no registration with a given client id");
    drop(issued);
    let browsed = std::fs::read_to_string(w.dir.join("browser.log")).unwrap();
    assert!(!browsed.contains("leaked"), "{browsed}");

    // The options are checked before anything starts; no secret is echoed.
    for (args, wanted) in [
        (vec!["--client-id", "a", "--client-secret-env", "UNSET_VARIABLE_X"], "--client-secret-env UNSET_VARIABLE_X"),
        (vec!["--client-id", "a", "--client-auth-method", "client_secret_post"], "needs the secret"),
        (vec!["--client-id", "a", "--client-auth-method", "magic"], "--client-auth-method must be"),
        (
            vec!["--client-id", "a", "--client-key-file", "/nonexistent/key.pem"],
            "--client-key-file /nonexistent/key.pem",
        ),
        (vec!["--client-secret-env", "STATIC_SECRET"], "--client-id"),
    ] {
        let out = std::process::Command::new(BRIDGE)
            .env("STATIC_SECRET", "static-s3cret")
            .args(&args)
            .arg(&w.url)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(wanted) && !stderr.contains("static-s3cret"), "{args:?}: {stderr}");
    }
    let _ = std::fs::remove_dir_all(&w.dir);
}

#[tokio::test(flavor = "multi_thread")]
async fn the_browser_gets_no_variable_the_bridge_was_told_holds_a_secret() {
    let w = world("browser-env").await;
    // Names that do not look secret: only the options say they are.
    let env = [("OKTA_CS", "static-s3cret"), ("EXTRA_VALUE", "header-s3cret")];
    let args = [
        "--client-id",
        "admin-given",
        "--client-secret-env",
        "OKTA_CS",
        "--client-auth-method",
        "client_secret_post",
        "--header-env",
        "X-Extra=EXTRA_VALUE",
    ];
    let mut peer = bridge_with(&w, &w.dir.join("browser.py"), &env, &args);
    let init = legacy_initialize(&mut peer, json!({})).await;
    assert_eq!(init["result"]["serverInfo"]["name"], "mcp-example-server", "{init}");
    let (code, stderr) = finish(peer).await;
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(w.issued.lock().unwrap().client_auth.last().map(String::as_str), Some("post admin-given:static-s3cret"));
    let browsed = std::fs::read_to_string(w.dir.join("browser.log")).unwrap();
    assert!(browsed.contains("/start/"), "the browser was opened: {browsed}");
    assert!(!browsed.contains("leaked"), "{browsed}");
    let _ = std::fs::remove_dir_all(&w.dir);
}

#[tokio::test]
async fn url_form_arguments_are_checked() {
    let run = |args: &[&str]| std::process::Command::new(BRIDGE).args(args).env_remove("MISSING_VAR").output().unwrap();
    let out = run(&["--header-env", "Authorization=MISSING_VAR", "https://mcp.example.com/mcp"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("MISSING_VAR is not set"));
    let out = run(&["--ca-file", "/nonexistent/ca.pem", "https://mcp.example.com/mcp"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("CA file"));
    let out = run(&["https://mcp.example.com/mcp", "--", "server"]);
    assert_eq!(out.status.code(), Some(2));
    let out = run(&["ftp://mcp.example.com/mcp"]);
    assert_eq!(out.status.code(), Some(2));
}

/// Runs the test browser on `url` (as the client would open a URL it was
/// asked to).
fn open_in_browser(w: &World, url: &str) {
    let status = std::process::Command::new(w.dir.join("browser.py"))
        .arg(url)
        .env("FAKE_BROWSER_CA", &w.pki.ca_file)
        .env("FAKE_BROWSER_LOG", w.dir.join("client-browser.log"))
        .status()
        .unwrap();
    assert!(status.success());
}

/// The authorization server forgets every token and refuses every refresh
/// token: the next request needs a new sign-in.
fn forget_every_token(w: &World) {
    let mut issued = w.issued.lock().unwrap();
    issued.valid.clear();
    issued.refuse_refresh = true;
}

/// `tools/list` (id 3) after [`forget_every_token`]: the client is asked
/// once to sign in, approves, and gets the tools.
async fn list_through_a_sign_in_the_client_approves(peer: &mut RawPeer, w: &World) {
    peer.send(r#"{"jsonrpc":"2.0","id":3,"method":"tools/list"}"#).await;
    let (listed, asked) = answer_until(peer, w, 3, true).await;
    assert!(listed["result"]["tools"].is_array(), "{listed}");
    assert_eq!(asked, 1, "the client was asked once");
}

/// Reads messages until the response to `id`, answering the bridge's URL
/// elicitation with `accept` (after opening the URL) or a decline.
async fn answer_until(peer: &mut RawPeer, w: &World, id: i64, accept: bool) -> (serde_json::Value, usize) {
    let (response, asked, _) = answer_collecting(peer, w, id, accept).await;
    (response, asked)
}

/// [`answer_until`], also returning the methods of the notifications seen
/// on the way.
async fn answer_collecting(
    peer: &mut RawPeer,
    w: &World,
    id: i64,
    accept: bool,
) -> (serde_json::Value, usize, Vec<String>) {
    let mut asked = 0;
    let mut notifications = Vec::new();
    loop {
        let message = peer.recv().await;
        if message["method"] == "elicitation/create" {
            asked += 1;
            assert_eq!(message["params"]["mode"], "url", "{message}");
            let answer = if accept {
                open_in_browser(w, message["params"]["url"].as_str().unwrap());
                json!({"action": "accept"})
            } else {
                json!({"action": "decline"})
            };
            let reply = json!({"jsonrpc": "2.0", "id": message["id"], "result": answer});
            peer.send(&reply.to_string()).await;
        } else if message["id"] == id {
            return (message, asked, notifications);
        } else if let Some(method) = message["method"].as_str() {
            notifications.push(method.to_owned());
        }
    }
}

/// The world's token folder and the files of its records.
fn record_files(w: &World) -> Vec<PathBuf> {
    let tokens = w.dir.join("home/.local/state/mcp-bridge/tokens");
    let entries = std::fs::read_dir(tokens).map(|dir| dir.filter_map(Result::ok).map(|e| e.path()).collect());
    let files: Vec<PathBuf> = entries.unwrap_or_default();
    files.into_iter().filter(|p| p.extension().is_some_and(|e| e == "record")).collect()
}
