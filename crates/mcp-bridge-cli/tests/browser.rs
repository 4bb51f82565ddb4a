//! The sign-in in a real browser: headless Chromium (Debian's `chromium`,
//! which `scripts/test` installs) is the `$BROWSER` of `mcp-bridge URL`. It
//! opens the bridge's start URL, follows the redirect to the test
//! authorization server, which approves, and the redirect back to the
//! bridge's loopback receiver; the legacy client's pending initialize and
//! its tools/list then succeed.
// The browser is a shell-script wrapper: Unix only.
#![cfg(unix)]

use std::sync::{Arc, Mutex};
use std::time::Instant;

use serde_json::json;
use test_support::oauth::{Issued, Shared, TestPki, authorization_server, protected};
use test_support::{RawPeer, legacy_initialize};
use tokio::io::AsyncReadExt;

const BRIDGE: &str = env!("CARGO_BIN_EXE_mcp-bridge");

#[tokio::test(flavor = "multi_thread")]
async fn chromium_signs_in_and_the_pending_requests_succeed() {
    let chromium = test_support::chromium();
    let dir = test_support::ScratchDir::new("browser");
    std::fs::create_dir_all(dir.join("home")).unwrap();
    let pki = TestPki::new(&dir);
    let issued: Shared = Arc::new(Mutex::new(Issued { expires_in: 3600, ..Issued::default() }));
    let issuer = authorization_server(issued.clone(), Some(&pki)).await;
    let url =
        protected(mcp_example_server::build_server().http_router(Default::default()), issued.clone(), issuer).await;
    // The browser wrapper: Chromium trusts the test CA's server by
    // ignoring certificate errors (the bridge checks it with --ca-file).
    let wrapper = dir.join("chromium.sh");
    std::fs::write(
        &wrapper,
        format!(
            "#!/bin/sh\nexec {chromium} --headless=new --no-sandbox --disable-gpu --ignore-certificate-errors \
             --user-data-dir={} --dump-dom \"$1\" >{} 2>/dev/null\n",
            dir.join("profile").display(),
            dir.join("page.html").display()
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755)).unwrap();
    let command = test_support::bridge_signing_in(BRIDGE.as_ref(), &dir.join("home"), &wrapper, &pki.ca_file, &url);
    let mut peer = RawPeer::start(command);
    let started = Instant::now();
    let init = legacy_initialize(&mut peer, json!({})).await;
    let signed_in = started.elapsed();
    assert_eq!(init["result"]["serverInfo"]["name"], "mcp-example-server", "{init}");
    peer.send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#).await;
    peer.send(r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#).await;
    let listed = peer.recv_response(2).await;
    let listed_after = started.elapsed();
    assert!(listed["result"]["tools"].as_array().unwrap().iter().any(|t| t["name"] == "echo"), "{listed}");
    let mut stderr = peer.child.stderr.take().unwrap();
    assert_eq!(peer.finish().await, Some(0));
    let mut text = String::new();
    stderr.read_to_string(&mut text).await.unwrap();
    for secret in ["at-1", "rt-1", "code-1", "Bearer "] {
        assert!(!text.contains(secret), "{secret:?} in stderr:\n{text}");
    }
    // The browser writes the page it ended on when it closes, which may
    // be after the bridge's exit.
    let page_file = dir.join("page.html");
    test_support::until("the browser's page", || std::fs::metadata(&page_file).is_ok_and(|m| m.len() > 0)).await;
    let page = std::fs::read_to_string(&page_file).unwrap_or_default();
    assert!(page.contains("Signed in"), "the browser ended on the bridge's page: {page}");
    assert_eq!(issued.lock().unwrap().authorizations, 1);
    eprintln!(
        "chromium sign-in: first 401 to initialize result {} ms, to tools/list {} ms",
        signed_in.as_millis(),
        listed_after.as_millis()
    );
    let _ = std::fs::remove_dir_all(&dir);
}
