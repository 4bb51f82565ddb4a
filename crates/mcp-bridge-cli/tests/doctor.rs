//! `mcp-bridge doctor`: the report of a server, through the command line,
//! against real servers: the example server on stdio and over HTTPS with a
//! test CA, server-everything (2025-11-25) in its three modes, a server
//! behind a sign-in (a loopback authorization server) before and after a
//! sign-in is stored, and a URL nothing answers. Nothing secret reaches
//! the report.

use std::path::Path;
use std::sync::{Arc, Mutex};

use mcp_bridge_sdk::auth::TokenRecord;
use mcp_bridge_sdk::store::{FileStore, RecordStore};
use serde_json::Value;
use test_support::oauth::{Issued, Shared, TestPki, authorization_server, protected, serve};
use test_support::{ScratchDir, server_everything, server_everything_http, workspace_binary};

const BRIDGE: &str = env!("CARGO_BIN_EXE_mcp-bridge");

/// A home of its own for each test: the token store the doctor reads.
fn home(name: &str) -> ScratchDir {
    ScratchDir::new(&format!("doctor-{name}"))
}

/// Runs the doctor with `args` in `home`; its exit code, stdout.
async fn doctor(home: &Path, args: &[&str]) -> (i32, String) {
    doctor_with(home, &[], args).await
}

/// [`doctor`] with more environment variables.
async fn doctor_with(home: &Path, env: &[(&str, &Path)], args: &[&str]) -> (i32, String) {
    let output = tokio::process::Command::new(BRIDGE)
        .arg("doctor")
        .args(args)
        .envs(env.iter().copied())
        .env("HOME", home)
        .env_remove("XDG_STATE_HOME")
        .env_remove("XDG_CONFIG_HOME")
        .env("MCP_BRIDGE_TOKEN_STORE", "files")
        .env("DOCTOR_API_KEY", "key-s3cret")
        .output()
        .await
        .unwrap();
    (output.status.code().unwrap_or(-1), String::from_utf8(output.stdout).unwrap())
}

async fn doctor_json(home: &Path, args: &[&str]) -> (i32, Value) {
    let mut all = vec!["--json"];
    all.extend(args);
    let (code, out) = doctor(home, &all).await;
    (code, serde_json::from_str(&out).unwrap_or_else(|e| panic!("not JSON ({e}): {out}")))
}

#[tokio::test]
async fn a_stdio_server_is_reported_usable_with_what_it_offers() {
    let home = home("stdio");
    let server = workspace_binary("mcp-example-server", "mcp-example-server");
    let (code, report) = doctor_json(&home, &["--", server.to_str().unwrap()]).await;
    assert_eq!(code, 0, "{report}");
    assert_eq!(report["usable"], true);
    assert_eq!(report["transport"], "stdio");
    assert_eq!(report["mcp"]["era"], "2026-07-28");
    assert_eq!(report["mcp"]["server"], "mcp-example-server 0.1.0");
    assert!(report["mcp"]["tools"].as_u64().unwrap() > 0, "{report}");
    assert!(report["mcp"]["round_trip_ms"].as_f64().unwrap() > 0.0, "{report}");
    assert_eq!(report["problems"], serde_json::json!([]));
    let (code, text) = doctor(&home, &["--", server.to_str().unwrap()]).await;
    assert_eq!(code, 0);
    assert!(text.contains("revision                2026-07-28") && text.ends_with("usable: yes\n"), "{text}");
}

#[tokio::test]
async fn a_legacy_server_is_reported_in_each_of_its_modes() {
    let home = home("everything");
    let script = server_everything();
    let (code, report) = doctor_json(&home, &["--", "node", script.to_str().unwrap(), "stdio"]).await;
    assert_eq!((code, &report["mcp"]["era"], &report["mcp"]["legacy"]), (0, &"2025-11-25".into(), &true.into()));
    for (mode, transport) in
        [("streamableHttp", "streamable-http, a 2025-11-25 session"), ("sse", "http+sse (2024-11-05)")]
    {
        let (_server, url) = server_everything_http(mode).await;
        let (code, report) = doctor_json(&home, &[&url]).await;
        assert_eq!(code, 0, "{mode}: {report}");
        assert_eq!(report["transport"], transport, "{mode}");
        assert_eq!(report["mcp"]["server"], "mcp-servers/everything 2.0.0", "{mode}");
        assert!(report["mcp"]["tools"].as_u64().unwrap() > 0, "{mode}: {report}");
    }
}

#[tokio::test]
async fn the_certificate_of_an_https_server_is_reported_and_an_untrusted_one_named() {
    let home = home("tls");
    let pki = TestPki::new(&home.join("pki"));
    let router = mcp_example_server::build_server().http_router(Default::default());
    let url = format!("{}/mcp", serve(router, Some(&pki)).await);
    let ca = pki.ca_file.to_str().unwrap();
    let (code, report) = doctor_json(&home, &["--ca-file", ca, &url]).await;
    assert_eq!(code, 0, "{report}");
    assert_eq!(report["tls"]["issuer"], "CN=mcp-bridge test CA");
    assert!(report["tls"]["days_left"].as_i64().unwrap() > 30, "{report}");
    assert!(report["tls"]["trusted_by"].as_str().unwrap().contains("test-ca.pem"), "{report}");

    let (code, report) = doctor_json(&home, &[&url]).await;
    assert_eq!(code, 1, "{report}");
    let fixes: Vec<&str> = report["problems"].as_array().unwrap().iter().filter_map(|p| p["fix"].as_str()).collect();
    assert!(fixes.iter().any(|f| f.contains("--ca-file")), "{fixes:?}");
}

#[tokio::test]
async fn trust_can_be_limited_to_the_ca_file_and_revoked_certificates_are_refused() {
    let home = home("trust");
    let pki = TestPki::new(&home.join("pki"));
    let stranger = TestPki::new(&home.join("stranger"));
    let router = mcp_example_server::build_server().http_router(Default::default());
    let url = format!("{}/mcp", serve(router, Some(&pki)).await);
    // The test CA stands in for a public one: the system's trust is read from SSL_CERT_FILE.
    let run = async |args: Vec<&str>| {
        let mut all = vec!["--json"];
        all.extend(args);
        all.push(&url);
        let (code, out) = doctor_with(&home, &[("SSL_CERT_FILE", pki.ca_file.as_path())], &all).await;
        (code, serde_json::from_str::<Value>(&out).unwrap_or_else(|e| panic!("not JSON ({e}): {out}")))
    };
    let (code, report) = run(vec![]).await;
    assert_eq!(code, 0, "the system's roots vouch for the server: {report}");
    let other_ca = stranger.ca_file.to_str().unwrap();
    let (code, report) = run(vec!["--ca-file", other_ca]).await;
    assert_eq!(code, 0, "a CA file adds to the system's roots: {report}");
    let (code, report) = run(vec!["--ca-file", other_ca, "--ca-file-only"]).await;
    assert_eq!(code, 1, "only the CA file, which does not vouch for the server: {report}");
    assert!(report["reach"]["error"].as_str().unwrap().contains("invalid peer certificate"), "{report}");
    let own_ca = pki.ca_file.to_str().unwrap();
    let (code, report) = run(vec!["--ca-file", own_ca, "--ca-file-only"]).await;
    assert_eq!(code, 0, "{report}");
    assert!(report["tls"]["trusted_by"].as_str().unwrap().ends_with("test-ca.pem only"), "{report}");

    let revoked = pki.revocation_list(true);
    let (code, report) = run(vec!["--crl-file", revoked.to_str().unwrap()]).await;
    assert_eq!(code, 1, "{report}");
    assert!(report["reach"]["error"].as_str().unwrap().contains("Revoked"), "{report}");
    let current = pki.revocation_list(false);
    let (code, report) = run(vec!["--crl-file", current.to_str().unwrap()]).await;
    assert_eq!(code, 0, "{report}");
}

#[tokio::test]
async fn a_protected_server_needs_a_sign_in_until_one_is_stored() {
    let home = home("protected");
    let pki = TestPki::new(&home.join("pki"));
    let issued: Shared = Arc::new(Mutex::new(Issued { expires_in: 3600, ..Issued::default() }));
    let issuer = authorization_server(issued.clone(), Some(&pki)).await;
    let router = mcp_example_server::build_server().http_router(Default::default());
    let url = protected(router, issued.clone(), issuer.clone()).await;
    let ca = pki.ca_file.to_str().unwrap();
    let with_secret_in_query = format!("{url}?key=query-s3cret");
    let args = ["--ca-file", ca, "--header-env", "X-Api-Key=DOCTOR_API_KEY", &with_secret_in_query];

    let (code, report) = doctor_json(&home, &args).await;
    assert_eq!(code, 1, "{report}");
    assert_eq!(report["auth"]["required"], true);
    assert_eq!(report["auth"]["resource"], url);
    assert_eq!(report["auth"]["authorization_servers"], serde_json::json!([issuer]));
    assert_eq!(report["auth"]["authorization_server"]["dynamic_registration"], true);
    assert_eq!(report["auth"]["authorization_server"]["pkce_s256"], true);
    assert!(report["auth"]["stored_sign_in"].is_null());
    let fixes: Vec<&str> = report["problems"].as_array().unwrap().iter().filter_map(|p| p["fix"].as_str()).collect();
    assert!(fixes.iter().any(|f| f.contains("mcp-bridge URL")), "{fixes:?}");

    // A sign-in stored as the bridge stores it: the doctor uses it.
    issued.lock().unwrap().valid.push("at-s3cret".into());
    let store =
        FileStore::open(home.join(".local/state/mcp-bridge/tokens"), &home.join(".config/mcp-bridge/token.key"))
            .unwrap();
    let expires_at = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs() + 3600;
    let record = TokenRecord {
        issuer: issuer.clone(),
        client_id: "client-1".into(),
        access_token: "at-s3cret".into(),
        refresh_token: Some("rt-s3cret".into()),
        expires_at: Some(expires_at),
        issued_at: None,
        scope: Some("mcp".into()),
        resource: Some(url.clone()),
        token_type: None,
    };
    let record = serde_json::to_string(&record).unwrap();
    store.save(&mcp_bridge_sdk::auth::store::tokens_key(&url), &record).unwrap();
    let (code, text) = doctor(&home, &args).await;
    assert_eq!(code, 0, "{text}");
    assert!(text.contains("  stored sign-in        yes, valid until"), "{text}");
    assert!(text.contains("tools "), "the session worked: {text}");
    for secret in ["at-s3cret", "rt-s3cret", "key-s3cret", "query-s3cret"] {
        assert!(!text.contains(secret), "{secret} in the report: {text}");
    }
}

#[tokio::test]
async fn a_url_nothing_answers_is_named_with_its_fix() {
    let home = home("closed");
    let port = test_support::spare_port();
    let (code, text) = doctor(&home, &[&format!("http://127.0.0.1:{port}/mcp")]).await;
    assert_eq!(code, 1);
    assert!(text.contains("error: the server cannot be reached"), "{text}");
    assert!(text.contains("fix: check the URL and the network"), "{text}");
    assert!(text.ends_with("usable: no\n"), "{text}");
}

/// A 2025-11-25 stdio server whose name and version carry an escape
/// sequence (clear the screen) and a fake line of the report.
const HOSTILE_NAME_SERVER: &str = r#"
import json, sys
for line in sys.stdin:
    message = json.loads(line)
    if "id" not in message:
        continue
    method = message["method"]
    if method == "initialize":
        result = {"protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
                  "serverInfo": {"name": "evil\u001b[2J\nusable: yes", "version": "1\u001b]0;owned\u0007"}}
    elif method == "tools/list":
        result = {"tools": []}
    elif method == "ping":
        result = {}
    else:
        answer = {"jsonrpc": "2.0", "id": message["id"], "error": {"code": -32601, "message": "no \u001b[31m" + method}}
        print(json.dumps(answer), flush=True)
        continue
    print(json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result}), flush=True)
"#;

#[tokio::test]
async fn what_a_server_names_itself_cannot_drive_the_terminal_or_fake_a_line_of_the_report() {
    let home = home("hostile-name");
    let (code, text) = doctor(&home, &["--", "python3", "-u", "-c", HOSTILE_NAME_SERVER]).await;
    assert!(!text.chars().any(|c| c.is_control() && c != '\n'), "a control character reached the terminal: {text:?}");
    assert!(text.contains(r"evil\u{1b}[2J\nusable: yes 1\u{1b}]0;owned\u{7}"), "{text}");
    let verdicts: Vec<_> = text.lines().filter(|line| line.starts_with("usable:")).collect();
    assert_eq!(verdicts.len(), 1, "{text}");
    assert_eq!(code, 0, "{text}");
    let (_, report) = doctor_json(&home, &["--", "python3", "-u", "-c", HOSTILE_NAME_SERVER]).await;
    assert_eq!(
        report["mcp"]["server"], "evil\u{1b}[2J\nusable: yes 1\u{1b}]0;owned\u{7}",
        "JSON keeps it exact, escaped"
    );
}
