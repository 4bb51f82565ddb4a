//! Sign-ins after the session started: asked of the client, declined and
//! cooled down, without a browser, a start URL opened twice, a refused
//! listen stream.

use super::*;

#[tokio::test(flavor = "multi_thread")]
async fn an_initialized_notification_before_the_initialize_result_is_ignored() {
    let w = world("early-initialized").await;
    let mut peer = bridge(&w, &w.dir.join("browser.py"), &[]);
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {"elicitation": {"form": {}, "url": {}}},
        "clientInfo": {"name": "hasty", "version": "1"}}});
    peer.send(&init.to_string()).await;
    // Sent too early: the sign-in of the start still opens the browser, and
    // the client is asked nothing before its initialize result.
    peer.send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#).await;
    let first = peer.recv().await;
    assert_eq!(first["id"], 0, "the initialize result comes first, no request before it: {first}");
    assert_eq!(first["result"]["serverInfo"]["name"], "mcp-example-server", "{first}");
    let opened = std::fs::read_to_string(w.dir.join("browser.log")).unwrap();
    assert!(opened.contains("/start/"), "the browser got the start URL: {opened}");
    // The notification after the result counts: a new sign-in asks the client.
    peer.send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#).await;
    forget_every_token(&w);
    list_through_a_sign_in_the_client_approves(&mut peer, &w).await;
    let (code, stderr) = finish(peer).await;
    assert_eq!(code, Some(0));
    assert_no_secrets(&stderr);
    let _ = std::fs::remove_dir_all(&w.dir);
}

#[tokio::test(flavor = "multi_thread")]
async fn after_initialized_a_new_sign_in_asks_the_client_and_a_decline_cools_down() {
    let w = world("consent").await;
    let mut peer = bridge(&w, &w.dir.join("browser.py"), &[]);
    legacy_initialize(&mut peer, json!({"elicitation": {"form": {}, "url": {}}})).await;
    peer.send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#).await;
    // The server forgets every token and refresh token: a new sign-in.
    forget_every_token(&w);
    list_through_a_sign_in_the_client_approves(&mut peer, &w).await;
    assert_eq!(
        std::fs::read_to_string(w.dir.join("browser.log")).unwrap().lines().count(),
        1,
        "no browser after initialized"
    );
    // Once more, declined: the request fails with its cause, and the next
    // one is not asked again during the cool-down.
    w.issued.lock().unwrap().valid.clear();
    peer.send(r#"{"jsonrpc":"2.0","id":4,"method":"tools/list"}"#).await;
    let (declined, asked) = answer_until(&mut peer, &w, 4, false).await;
    assert_eq!((declined["error"]["data"]["cause"].clone(), asked), (json!("sign_in_denied"), 1), "{declined}");
    peer.send(r#"{"jsonrpc":"2.0","id":5,"method":"tools/list"}"#).await;
    let (again, asked) = answer_until(&mut peer, &w, 5, false).await;
    assert_eq!((again["error"]["data"]["cause"].clone(), asked), (json!("sign_in_denied"), 0), "{again}");
    let (code, stderr) = finish(peer).await;
    assert_eq!(code, Some(0));
    assert_no_secrets(&stderr);
    let _ = std::fs::remove_dir_all(&w.dir);
}

#[tokio::test(flavor = "multi_thread")]
async fn without_a_browser_the_sign_in_line_is_the_way_and_the_time_limit_holds() {
    let w = world("no-browser").await;
    let mut peer = bridge(&w, &w.dir.join("browser.py"), &["--no-browser", "--sign-in-timeout", "1"]);
    let init = legacy_initialize(&mut peer, json!({})).await;
    assert_eq!(init["error"]["data"]["cause"], "sign_in_timeout", "{init}");
    assert!(init["error"]["message"].as_str().unwrap().contains("--sign-in-timeout"));
    let (_, stderr) = finish(peer).await;
    assert!(stderr.contains("mcp-bridge: sign in at https://"), "{stderr}");
    assert!(!w.dir.join("browser.log").exists(), "no browser was started");
    let _ = std::fs::remove_dir_all(&w.dir);
}

/// A browser that opens its URL twice without following the redirect, as
/// when someone else opens the same link before the user finishes.
const TWICE: &str = r#"#!/usr/bin/env python3
import sys, urllib.request
class Stay(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args):
        return None
opener = urllib.request.build_opener(Stay)
for _ in range(2):
    try:
        opener.open(sys.argv[1], timeout=10).read()
    except Exception:
        pass
"#;

#[tokio::test(flavor = "multi_thread")]
async fn a_start_url_opened_twice_stops_the_sign_in() {
    let w = world("reused").await;
    let twice = w.dir.join("twice.py");
    std::fs::write(&twice, TWICE).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&twice, std::fs::Permissions::from_mode(0o755)).unwrap();
    let mut peer = bridge(&w, &twice, &["--sign-in-timeout", "20"]);
    let init = legacy_initialize(&mut peer, json!({})).await;
    assert_eq!(init["error"]["data"]["cause"], "sign_in_start_reused", "{init}");
    let message = init["error"]["message"].as_str().unwrap();
    assert!(message.contains("--no-browser"), "{message}");
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap();
    assert!(message.contains(&format!("mcp-bridge runs on {})", host.trim())), "the message names the host: {message}");
    assert_eq!(w.issued.lock().unwrap().authorizations, 0, "the authorization server was never reached");
    let (_, stderr) = finish(peer).await;
    assert_no_secrets(&stderr);
    let _ = std::fs::remove_dir_all(&w.dir);
}

/// Without a choice, the bridge keeps sign-ins in the keychain when the
/// keychain works here (macOS, Windows), else in encrypted files (Linux);
/// either way a second run uses them and logout clears them.
#[tokio::test(flavor = "multi_thread")]
async fn the_automatic_store_keeps_the_sign_in_between_runs_and_logout_clears_it() {
    use mcp_bridge_sdk::store::RecordStore;
    let w = world("auto-store").await;
    let service = format!("mcp-bridge-test-{}", std::process::id());
    let keychain = mcp_bridge_sdk::store::KeychainStore::new(&service);
    let keychain_works = keychain.works();
    let run = |browser: PathBuf| {
        let mut command = tokio::process::Command::new(BRIDGE);
        command
            .env("HOME", w.dir.join("home"))
            .env_remove("XDG_STATE_HOME")
            .env_remove("XDG_CONFIG_HOME")
            .env_remove("MCP_BRIDGE_TOKEN_STORE")
            .env("MCP_BRIDGE_KEYCHAIN_SERVICE", &service)
            .env("BROWSER", browser)
            .env("FAKE_BROWSER_CA", &w.pki.ca_file)
            .env("FAKE_BROWSER_LOG", w.dir.join("browser.log"))
            .args(["--ca-file", w.pki.ca_file.to_str().unwrap(), "--redirect-port", &free_port().to_string(), &w.url])
            .stderr(std::process::Stdio::piped());
        RawPeer::start(command)
    };
    let mut peer = run(w.dir.join("browser.py"));
    assert!(legacy_initialize(&mut peer, json!({})).await["result"].is_object());
    finish(peer).await;
    let mut peer = run(PathBuf::from("/bin/false"));
    assert!(legacy_initialize(&mut peer, json!({})).await["result"].is_object(), "the stored tokens were used");
    finish(peer).await;
    assert_eq!(w.issued.lock().unwrap().authorizations, 1);
    let key = mcp_bridge_sdk::auth::store::tokens_key(&w.url);
    let files = w.dir.join("home/.local/state/mcp-bridge/tokens");
    if keychain_works {
        assert!(keychain.load(&key).unwrap().is_some(), "the tokens are in the keychain");
        assert!(!files.exists(), "nothing went to files");
    } else {
        assert!(std::fs::read_dir(&files).unwrap().count() >= 2, "the tokens are in files");
    }
    let out = std::process::Command::new(BRIDGE)
        .env("HOME", w.dir.join("home"))
        .env_remove("MCP_BRIDGE_TOKEN_STORE")
        .env("MCP_BRIDGE_KEYCHAIN_SERVICE", &service)
        .args(["logout", "--all"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    if keychain_works {
        assert_eq!(keychain.load(&key).unwrap(), None, "logout removed the keychain entry");
        let _ = keychain.remove("index");
    } else {
        assert!(std::fs::read_dir(&files).unwrap().count() <= 1, "only the index is left");
    }
    // Asking for the keychain by name where it does not work is an error.
    if !keychain_works {
        let out = std::process::Command::new(BRIDGE)
            .env("MCP_BRIDGE_TOKEN_STORE", "keychain")
            .env("MCP_BRIDGE_KEYCHAIN_SERVICE", &service)
            .arg(&w.url)
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2));
        assert!(String::from_utf8_lossy(&out.stderr).contains("keychain does not work here"));
    }
    let _ = std::fs::remove_dir_all(&w.dir);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_refused_listen_stream_waits_for_the_next_sign_in_of_a_request() {
    let w = world("listen").await;
    let mut peer = bridge(&w, &w.dir.join("browser.py"), &[]);
    legacy_initialize(&mut peer, json!({"elicitation": {"form": {}, "url": {}}})).await;
    let before = test_support::initialized_and_listening(&mut peer).await;
    assert!(before.is_empty(), "{before:?}");
    // The server ends its streams; the tokens are revoked before the
    // listener comes back (0.5 s later), so its new stream is refused.
    peer.send(r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"end_streams","arguments":{}}}"#).await;
    let (ended, _) = answer_until(&mut peer, &w, 3, true).await;
    assert!(ended["result"].is_object(), "{ended}");
    forget_every_token(&w);
    // The refused stream asks nobody: nothing comes for a while.
    let quiet = tokio::time::timeout(std::time::Duration::from_millis(1500), peer.recv()).await;
    assert!(quiet.is_err(), "the listen stream started a sign-in: {quiet:?}");
    // A request signs in (through the client); then the stream comes back
    // and the gap events say what may have changed meanwhile.
    peer.send(r#"{"jsonrpc":"2.0","id":4,"method":"tools/list"}"#).await;
    let (listed, asked, mut seen) = answer_collecting(&mut peer, &w, 4, true).await;
    assert!(listed["result"]["tools"].is_array(), "{listed}");
    assert_eq!(asked, 1);
    // The gap events of the new stream come around the response.
    while !seen.iter().any(|m| m.ends_with("/list_changed")) {
        let event = tokio::time::timeout(std::time::Duration::from_secs(5), peer.recv()).await;
        let Ok(event) = event else { panic!("no event after the sign-in") };
        seen.extend(event["method"].as_str().map(str::to_owned));
    }
    let (_, stderr) = finish(peer).await;
    assert!(stderr.contains("waits for the next sign-in"), "{stderr}");
    assert_no_secrets(&stderr);
    let _ = std::fs::remove_dir_all(&w.dir);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_later_sign_in_with_a_client_that_cannot_show_urls_fails_fast() {
    let w = world("reauth").await;
    let mut peer = bridge(&w, &w.dir.join("browser.py"), &[]);
    let init = legacy_initialize(&mut peer, json!({"elicitation": {"form": {}}})).await;
    assert!(init["result"].is_object(), "{init}");
    peer.send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#).await;
    forget_every_token(&w);
    peer.send(r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#).await;
    let failed = peer.recv_response(2).await;
    assert_eq!(failed["error"]["data"]["cause"], "reauthorization_required", "{failed}");
    assert_eq!(std::fs::read_to_string(w.dir.join("browser.log")).unwrap().lines().count(), 1, "no second browser");
    let (_, stderr) = finish(peer).await;
    assert_no_secrets(&stderr);
    let _ = std::fs::remove_dir_all(&w.dir);
}
