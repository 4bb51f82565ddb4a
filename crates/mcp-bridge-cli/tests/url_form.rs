//! The URL form end to end: `mcp-bridge [OPTIONS] URL` in front of the
//! example server behind OAuth, with an authorization server over HTTPS (a
//! test CA given with --ca-file). The "browser" is a small program in
//! `$BROWSER` that follows the start URL, the authorization server's
//! approval and the redirect back to the bridge's loopback receiver, as a
//! browser whose user approves does. (The real-browser test with Chromium
//! is the OAuth issue's next step.)

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use serde_json::json;
use test_support::oauth::{Issued, Shared, TestPki, authorization_server, protected};
use test_support::{RawPeer, legacy_initialize};
use tokio::io::AsyncReadExt;

const BRIDGE: &str = env!("CARGO_BIN_EXE_mcp-bridge");

/// A browser that opens its one argument and follows every redirect,
/// trusting the test CA.
const BROWSER: &str = r#"#!/usr/bin/env python3
import os, ssl, sys, urllib.request
context = ssl.create_default_context(cafile=os.environ["FAKE_BROWSER_CA"])
with open(os.environ["FAKE_BROWSER_LOG"], "a") as log:
    log.write(sys.argv[1] + "\n")
    try:
        urllib.request.urlopen(sys.argv[1], context=context, timeout=10).read()
    except Exception as e:
        log.write("failed: %r\n" % e)
"#;

struct World {
    dir: PathBuf,
    pki: TestPki,
    issued: Shared,
    url: String,
}

async fn world(name: &str) -> World {
    let dir = std::env::temp_dir().join(format!("mcp-url-form-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("home")).unwrap();
    let pki = TestPki::new(&dir);
    let issued: Shared = Arc::new(Mutex::new(Issued { expires_in: 3600, ..Issued::default() }));
    let issuer = authorization_server(issued.clone(), Some(&pki)).await;
    let server = mcp_example_server::build_server().http_router(Default::default());
    let url = protected(server, issued.clone(), issuer).await;
    let browser = dir.join("browser.py");
    std::fs::write(&browser, BROWSER).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&browser, std::fs::Permissions::from_mode(0o755)).unwrap();
    World { dir, pki, issued, url }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// The bridge in the URL form, with its own home (token store) and the
/// test browser; stderr is captured.
fn bridge(w: &World, browser: &Path, extra: &[&str]) -> RawPeer {
    let mut command = tokio::process::Command::new(BRIDGE);
    command
        .env("HOME", w.dir.join("home"))
        .env_remove("XDG_STATE_HOME")
        .env_remove("XDG_CONFIG_HOME")
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
    let answer = loop {
        let message = peer.recv().await;
        if message["id"] == 2 {
            break message;
        }
    };
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
    let out =
        std::process::Command::new(BRIDGE).env("HOME", w.dir.join("home")).args(["logout", &w.url]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stderr).contains("forgot 1"), "{}", String::from_utf8_lossy(&out.stderr));
    let out =
        std::process::Command::new(BRIDGE).env("HOME", w.dir.join("home")).args(["logout", "--all"]).output().unwrap();
    assert!(out.status.success());
    let tokens = w.dir.join("home/.local/state/mcp-bridge/tokens");
    let left: Vec<_> = std::fs::read_dir(&tokens).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert!(left.len() <= 1, "only the (empty) index may be left: {left:?}");
    let _ = std::fs::remove_dir_all(&w.dir);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_denied_sign_in_fails_the_initialize_and_the_bridge_stays() {
    let w = world("denied").await;
    w.issued.lock().unwrap().deny = true;
    let mut peer = bridge(&w, &w.dir.join("browser.py"), &[]);
    let init = legacy_initialize(&mut peer, json!({})).await;
    assert_eq!(init["error"]["data"]["cause"], "sign_in_denied", "{init}");
    assert_eq!(init["error"]["data"]["detail"]["http_status"], 401, "{init}");
    let (code, stderr) = finish(peer).await;
    assert_eq!(code, Some(0));
    assert_no_secrets(&stderr);
    let _ = std::fs::remove_dir_all(&w.dir);
}

#[tokio::test(flavor = "multi_thread")]
async fn an_answer_from_another_issuer_is_refused_before_the_code_is_used() {
    let w = world("wrong-iss").await;
    w.issued.lock().unwrap().iss_override = Some("https://evil.example.com".into());
    let mut peer = bridge(&w, &w.dir.join("browser.py"), &[]);
    let init = legacy_initialize(&mut peer, json!({})).await;
    assert_eq!(init["error"]["data"]["cause"], "sign_in_error", "{init}");
    let reason = init["error"]["data"]["detail"]["reason"].as_str().unwrap();
    assert!(reason.contains("another issuer"), "{reason}");
    assert!(!w.issued.lock().unwrap().grants.iter().any(|g| g == "authorization_code"), "the code was not exchanged");
    let (_, stderr) = finish(peer).await;
    assert_no_secrets(&stderr);
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
