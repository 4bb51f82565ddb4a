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

#[tokio::test(flavor = "multi_thread")]
async fn the_enterprise_single_sign_on_vouches_for_the_user_without_a_browser() {
    let w = world("enterprise").await;
    // The enterprise identity provider: a second authorization server,
    // whose token exchange answers identity assertion grants.
    let idp: Shared = Arc::new(Mutex::new(Issued { expires_in: 300, ..Issued::default() }));
    let idp_issuer = authorization_server(idp.clone(), Some(&w.pki)).await;
    let id_token_file = w.dir.join("id_token");
    std::fs::write(&id_token_file, "id-token-of-alice\n").unwrap();
    w.issued.lock().unwrap().without_refresh_tokens = true;
    let args = [
        "--client-id",
        "chat-at-mcp",
        "--client-secret-env",
        "STATIC_SECRET",
        "--idp-issuer",
        &idp_issuer,
        "--idp-client-id",
        "chat-at-idp",
        "--idp-id-token-file",
        id_token_file.to_str().unwrap(),
    ];
    let mut peer = bridge_with(&w, &w.dir.join("browser.py"), &[("STATIC_SECRET", "static-s3cret")], &args);
    let init = legacy_initialize(&mut peer, json!({})).await;
    assert_eq!(init["result"]["serverInfo"]["name"], "mcp-example-server", "{init}");
    let (code, stderr) = finish(peer).await;
    assert_eq!(code, Some(0));
    assert!(!stderr.contains("static-s3cret") && !stderr.contains("id-token-of-alice"), "{stderr}");
    assert!(!stderr.contains("jag-1"), "the grant is not logged:\n{stderr}");
    assert_no_secrets(&stderr);

    // At the identity provider: the ID token exchanged for a grant to the
    // server's authorization server, for the server, by the bridge's
    // client there.
    {
        let idp = idp.lock().unwrap();
        let exchange = &idp.forms[0];
        assert_eq!(idp.grants, [test_support::oauth::TOKEN_EXCHANGE]);
        assert_eq!(exchange["subject_token"], "id-token-of-alice");
        assert_eq!(exchange["subject_token_type"], "urn:ietf:params:oauth:token-type:id_token");
        assert_eq!(exchange["requested_token_type"], "urn:ietf:params:oauth:token-type:id-jag");
        assert_eq!(exchange["resource"], w.url);
        assert_eq!(exchange["audience"], w.issuer, "the audience is the server's authorization server");
        assert_eq!(idp.client_auth, ["none chat-at-idp"]);
        // At the server's authorization server: the grant, by the given client.
        let issued = w.issued.lock().unwrap();
        assert_eq!(issued.grants, ["urn:ietf:params:oauth:grant-type:jwt-bearer"]);
        assert_eq!(issued.assertions, ["jag-1"]);
        assert_eq!(issued.client_auth, ["basic chat-at-mcp:static-s3cret"]);
        assert_eq!((issued.authorizations, issued.registrations), (0, 0), "no browser, no registration");
    }
    assert!(!w.dir.join("browser.log").exists(), "no browser was opened");

    // A missing ID token is a clear error naming the file, never a token.
    std::fs::remove_file(&id_token_file).unwrap();
    let _ = std::fs::remove_dir_all(w.dir.join("home/.local/state"));
    let mut peer = bridge_with(&w, &w.dir.join("browser.py"), &[("STATIC_SECRET", "static-s3cret")], &args);
    let init = legacy_initialize(&mut peer, json!({})).await;
    let message = init["error"].to_string();
    assert!(message.contains("ID token") && message.contains("id_token"), "{init}");
    finish(peer).await;

    // --idp-issuer needs the rest, and the bridge's client at the server.
    for args in [
        vec!["--idp-issuer", "https://idp.example", "--idp-client-id", "x", "--client-id", "c"],
        vec!["--idp-issuer", "https://idp.example", "--idp-id-token-file", "/t", "--idp-client-id", "x"],
        vec!["--idp-client-id", "x"],
    ] {
        let out = std::process::Command::new(BRIDGE).args(&args).arg(&w.url).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    }
    let _ = std::fs::remove_dir_all(&w.dir);
}

/// The header and claims of a compact JWS, unverified.
fn jws_parts(jws: &str) -> (serde_json::Value, serde_json::Value) {
    use base64::Engine;
    let part = |i: usize| {
        let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(jws.split('.').nth(i).unwrap()).unwrap();
        serde_json::from_slice(&bytes).unwrap()
    };
    (part(0), part(1))
}

#[tokio::test(flavor = "multi_thread")]
async fn with_dpop_the_tokens_are_bound_to_a_key_kept_sealed_between_runs() {
    use base64::Engine;
    let w = world("dpop").await;
    let mut peer = bridge(&w, &w.dir.join("browser.py"), &["--dpop"]);
    let init = legacy_initialize(&mut peer, json!({})).await;
    assert_eq!(init["result"]["serverInfo"]["name"], "mcp-example-server", "{init}");
    peer.send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#).await;
    peer.send(r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}"#)
        .await;
    assert_eq!(peer.recv_response(2).await["result"]["content"][0]["text"], "hi");
    let (code, stderr) = finish(peer).await;
    assert_eq!(code, Some(0));
    assert_no_secrets(&stderr);
    assert!(!stderr.contains("DPoP at-"), "{stderr}");

    // A second run: the stored token, proved with the stored key.
    let mut peer = bridge(&w, Path::new("/bin/false"), &["--dpop"]);
    let init = legacy_initialize(&mut peer, json!({})).await;
    assert_eq!(init["result"]["serverInfo"]["name"], "mcp-example-server", "{init}");
    finish(peer).await;

    let issued = w.issued.lock().unwrap();
    assert_eq!((issued.authorizations, issued.token_proofs.len()), (1, 1), "one sign-in, with a proof");
    assert_eq!(issued.dpop_bound, ["at-1"]);
    let (token_header, token_claims) = jws_parts(&issued.token_proofs[0]);
    assert_eq!((token_claims["htm"].as_str(), token_claims["ath"].as_str()), (Some("POST"), None));
    assert!(token_claims["htu"].as_str().unwrap().ends_with("/token"), "{token_claims}");
    assert!(issued.resource_proofs.len() >= 4, "each request to the server carries a proof");
    let mut jtis = std::collections::HashSet::new();
    let ath = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(sha2::Sha256::digest(b"at-1"));
    for proof in &issued.resource_proofs {
        let (header, claims) = jws_parts(proof);
        assert_eq!(header["typ"], "dpop+jwt");
        assert_eq!(header["jwk"], token_header["jwk"], "one key, also after the restart");
        assert_eq!((claims["htm"].as_str(), claims["htu"].as_str()), (Some("POST"), Some(w.url.as_str())));
        assert_eq!(claims["ath"], ath.as_str(), "bound to the token");
        assert!(jtis.insert(claims["jti"].to_string()), "a fresh proof per request");
    }
    drop(issued);
    // The key is kept sealed with the tokens: no file shows it.
    let x = token_header["jwk"]["x"].as_str().unwrap().to_owned();
    let tokens = w.dir.join("home/.local/state/mcp-bridge/tokens");
    for entry in std::fs::read_dir(&tokens).unwrap() {
        let text = String::from_utf8_lossy(&std::fs::read(entry.unwrap().path()).unwrap()).into_owned();
        assert!(!text.contains("pkcs8") && !text.contains(&x) && !text.contains("at-1"), "{text}");
    }
    // Logout forgets the key with the tokens.
    logout(&w, &w.url);
    let left = record_files(&w);
    assert!(left.len() <= 2, "the client registration and the index may be left: {left:?}");
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

#[tokio::test(flavor = "multi_thread")]
async fn a_legacy_session_upstream_gets_the_sign_in_and_the_refresh_too() {
    // The example server's endpoint serves 2025-11-25 sessions; the bridge
    // is told to speak that revision to it.
    let dual_era = mcp_bridge::embed::http::http_router(
        &mcp_example_server::build_server(),
        Default::default(),
        Default::default(),
    );
    let w = world_serving("legacy-signin", dual_era).await;
    let mut peer = bridge(&w, &w.dir.join("browser.py"), &["--protocol", "2025-11-25"]);
    let init = legacy_initialize(&mut peer, json!({})).await;
    assert_eq!(init["result"]["serverInfo"]["name"], "mcp-example-server", "{init}");
    peer.send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#).await;
    let call = |id: i64, text: &str| {
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": "echo", "arguments": {"text": text}}})
            .to_string()
    };
    peer.send(&call(2, "in the session")).await;
    assert_eq!(peer.recv_response(2).await["result"]["content"][0]["text"], "in the session");
    // The access token is revoked: the refresh token gets a new one, and
    // the session's next POST goes through with it.
    w.issued.lock().unwrap().valid.clear();
    peer.send(&call(3, "after the refresh")).await;
    let answer = peer.recv_response(3).await;
    assert_eq!(answer["result"]["content"][0]["text"], "after the refresh", "{answer}");
    let grants = w.issued.lock().unwrap().grants.clone();
    assert_eq!(grants, ["authorization_code", "refresh_token"], "one sign-in, one refresh");
    let (code, stderr) = finish(peer).await;
    assert_eq!(code, Some(0));
    assert_no_secrets(&stderr);
    let _ = std::fs::remove_dir_all(&w.dir);
}

/// The world's token folder and the files of its records.
fn record_files(w: &World) -> Vec<PathBuf> {
    let tokens = w.dir.join("home/.local/state/mcp-bridge/tokens");
    let entries = std::fs::read_dir(tokens).map(|dir| dir.filter_map(Result::ok).map(|e| e.path()).collect());
    let files: Vec<PathBuf> = entries.unwrap_or_default();
    files.into_iter().filter(|p| p.extension().is_some_and(|e| e == "record")).collect()
}

/// The file of the sign-in index (named by the digest of its key).
fn index_file(w: &World) -> PathBuf {
    let name: String = sha2::Sha256::digest(b"index").iter().map(|b| format!("{b:02x}")).collect();
    w.dir.join(format!("home/.local/state/mcp-bridge/tokens/{name}.record"))
}

/// A bridge run that needs no sign-in (its browser fails): the stored
/// tokens are there and open.
async fn runs_on_stored_tokens(w: &World) -> bool {
    let mut peer = bridge(w, Path::new("/bin/false"), &[]);
    let init = tokio::time::timeout(std::time::Duration::from_secs(10), legacy_initialize(&mut peer, json!({}))).await;
    let ok = init.is_ok_and(|init| init["result"]["serverInfo"]["name"] == "mcp-example-server");
    let (_, stderr) = finish(peer).await;
    ok && !stderr.contains("sign in at")
}

#[tokio::test(flavor = "multi_thread")]
async fn a_damaged_sign_in_index_neither_stops_sign_ins_nor_logout() {
    let w = world("damaged-index").await;
    let browser = w.dir.join("browser.py");
    let sign_in = || async {
        let mut peer = bridge(&w, &browser, &[]);
        let init = legacy_initialize(&mut peer, json!({})).await;
        assert_eq!(init["result"]["serverInfo"]["name"], "mcp-example-server", "{init}");
        finish(peer).await
    };
    sign_in().await;
    let good = std::fs::read(index_file(&w)).unwrap();
    let mut flipped = good.clone();
    flipped[good.len() / 2] ^= 0x10;
    for damage in [flipped, good[..good.len() / 2].to_vec()] {
        // Forgetting one server and signing in again both write the index.
        std::fs::write(index_file(&w), &damage).unwrap();
        assert!(logout(&w, &w.url).contains("forgot 1"));
        std::fs::write(index_file(&w), &damage).unwrap();
        let (code, stderr) = sign_in().await;
        assert_eq!(code, Some(0), "{stderr}");
        assert_eq!(stderr.matches("index of the stored records").count(), 1, "said once: {stderr}");
        assert_no_secrets(&stderr);
        assert!(runs_on_stored_tokens(&w).await, "the new sign-in is stored");
    }
    std::fs::write(index_file(&w), b"\x00damaged").unwrap();
    logout(&w, "--all");
    assert_eq!(record_files(&w), Vec::<PathBuf>::new(), "logout --all leaves no record");
    assert!(!runs_on_stored_tokens(&w).await, "after logout --all a run signs in again");
    let _ = std::fs::remove_dir_all(&w.dir);
}

#[tokio::test(flavor = "multi_thread")]
async fn six_bridges_signing_in_at_once_keep_one_key_and_logout_all_leaves_nothing() {
    let w = world("six-at-once").await;
    let browser = w.dir.join("browser.py");
    let signing_in: Vec<_> = (0..6)
        .map(|_| {
            let mut peer = bridge(&w, &browser, &[]);
            tokio::spawn(async move {
                let init = legacy_initialize(&mut peer, json!({})).await;
                assert_eq!(init["result"]["serverInfo"]["name"], "mcp-example-server", "{init}");
                peer
            })
        })
        .collect();
    for peer in signing_in {
        let peer = peer.await.unwrap();
        let (code, stderr) = finish(peer).await;
        assert_eq!(code, Some(0), "{stderr}");
        assert!(!stderr.contains("cannot be opened") && !stderr.contains("damaged"), "{stderr}");
    }
    let keys: Vec<_> =
        std::fs::read_dir(w.dir.join("home/.config/mcp-bridge")).unwrap().filter_map(Result::ok).collect();
    let key_files: Vec<_> = keys.iter().filter(|e| e.file_name() == "token.key").collect();
    assert_eq!(key_files.len(), 1);
    assert!(runs_on_stored_tokens(&w).await, "the last sign-in's record opens with the one key");
    logout(&w, "--all");
    assert_eq!(record_files(&w), Vec::<PathBuf>::new(), "logout --all leaves no record");
    assert!(!runs_on_stored_tokens(&w).await, "after logout --all a run signs in again");
    let _ = std::fs::remove_dir_all(&w.dir);
}
