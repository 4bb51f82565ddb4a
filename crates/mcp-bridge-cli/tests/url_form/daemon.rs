//! One sign-in per URL in the daemon: two clients attached to a server
//! behind OAuth share the daemon's one sign-in (the browser, at the
//! server's start, which no client's call caused); a step-up that one
//! client's call needs is asked of that client alone (a URL elicitation),
//! and the other client's calls then go through on the new token. The
//! `--config` gateway signs in to its servers at a URL the same way.

#![cfg(target_os = "linux")]

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcp_bridge_protocol::types::{ClientCapabilities, ContentBlock, ElicitResult};
use mcp_bridge_sdk::client::{Era, InputHooks};
use mcp_bridge_sdk::transport::stdio::{StdioCommand, spawn};
use mcp_bridge_sdk::{Client, ClientOptions, RequestOptions};
use serde_json::{Map, json};
use tokio::io::AsyncBufReadExt;

use super::{BRIDGE, World, assert_no_secrets, free_port, world};

/// How long the daemon may take to say it is ready.
const READY_WITHIN: Duration = Duration::from_secs(30);

/// The daemon of the test's file, run by the test (as a user's service
/// would) so that its redirect port is the test's own.
struct Daemon {
    child: tokio::process::Child,
    config: PathBuf,
    runtime: PathBuf,
    log: PathBuf,
}

impl Daemon {
    async fn start(w: &World) -> Daemon {
        let (config, runtime, log) = (w.dir.join("servers.json"), w.dir.join("run"), w.dir.join("daemon.log"));
        std::fs::create_dir_all(&runtime).unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&runtime, std::fs::Permissions::from_mode(0o700)).unwrap();
        std::fs::write(&config, json!({"mcpServers": {"notes": {"url": w.url}}}).to_string()).unwrap();
        let mut child = tokio::process::Command::new(BRIDGE)
            .args(["daemon", "run", "--config", config.to_str().unwrap(), "--log-level", "debug"])
            .args(["--redirect-port", &free_port().to_string()])
            .env("XDG_RUNTIME_DIR", &runtime)
            .env("HOME", w.dir.join("home"))
            .env_remove("XDG_STATE_HOME")
            .env_remove("XDG_CONFIG_HOME")
            .env("MCP_BRIDGE_TOKEN_STORE", "files")
            // The authorization server's certificate is the test CA's.
            .env("SSL_CERT_FILE", &w.pki.ca_file)
            // A secret in the daemon's environment must not reach the browser.
            .env("SERVICE_API_TOKEN", "tok-s3cret")
            .env("BROWSER", w.dir.join("browser.py"))
            .env("FAKE_BROWSER_CA", &w.pki.ca_file)
            .env("FAKE_BROWSER_LOG", w.dir.join("browser.log"))
            .stdout(std::process::Stdio::piped())
            .stderr(std::fs::File::create(&log).unwrap())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let mut lines = tokio::io::BufReader::new(child.stdout.take().unwrap()).lines();
        let ready = tokio::time::timeout(READY_WITHIN, lines.next_line()).await;
        assert!(matches!(&ready, Ok(Ok(Some(line))) if line == "ready"), "{ready:?}");
        Daemon { child, config, runtime, log }
    }

    fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

/// A client through `attach`, whose URL elicitations are counted and, when
/// `opens` is set, opened with the test browser (after accepting, as a
/// client that opens a browser does).
struct Attached {
    client: Client,
    asked: Arc<Mutex<Vec<String>>>,
}

impl Attached {
    async fn start(w: &World, daemon: &Daemon, name: &str, era: Era, opens: bool) -> Attached {
        let asked: Arc<Mutex<Vec<String>>> = Arc::default();
        let seen = asked.clone();
        let (browser, ca, browser_log) = (w.dir.join("browser.py"), w.pki.ca_file.clone(), w.dir.join("browser.log"));
        let mut options = ClientOptions::new(name, "1").with_era(era);
        options.capabilities = ClientCapabilities::builder().url_elicitation().build();
        options.hooks = InputHooks::new().on_url(move |params| {
            seen.lock().unwrap().push(params.url.clone());
            if opens {
                let mut open = tokio::process::Command::new(&browser);
                open.arg(&params.url).env("FAKE_BROWSER_CA", &ca).env("FAKE_BROWSER_LOG", &browser_log);
                tokio::spawn(async move { open.status().await });
            }
            async move {
                Ok::<_, std::convert::Infallible>(if opens {
                    ElicitResult::accept(Map::new())
                } else {
                    ElicitResult::decline()
                })
            }
        });
        let command = StdioCommand::new(BRIDGE)
            .args(["attach", "--config", daemon.config.to_str().unwrap(), "notes"])
            .env("XDG_RUNTIME_DIR", &daemon.runtime);
        Attached { client: Client::new(options, spawn(command).unwrap()), asked }
    }

    /// The name of the server's `echo` as this client sees it.
    async fn echo_tool(&self) -> String {
        let tools = self.client.list_all_tools(&RequestOptions::default()).await.unwrap();
        tools.into_iter().map(|t| t.name).find(|n| n.ends_with("echo")).expect("echo is listed")
    }

    async fn echo(&self, text: &str) -> String {
        let name = self.echo_tool().await;
        let result = self.client.call_tool(&name, json!({"text": text}), &RequestOptions::default()).await.unwrap();
        match result.content.first() {
            Some(ContentBlock::Text(t)) => t.text.clone(),
            other => panic!("no text: {other:?}"),
        }
    }

    fn asked(&self) -> Vec<String> {
        self.asked.lock().unwrap().clone()
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn the_daemon_signs_in_once_for_every_client_and_asks_a_step_up_of_the_client_that_needed_it() {
    let w = world("daemon").await;
    let mut daemon = Daemon::start(&w).await;

    // The first client names the server: it starts, and the daemon signs
    // in with the browser (no client's call asked for that).
    let first = Attached::start(&w, &daemon, "first", Era::Legacy, true).await;
    assert!(first.echo("one").await.contains("one"));
    let second = Attached::start(&w, &daemon, "second", Era::Modern, false).await;
    assert!(second.echo("two").await.contains("two"));
    assert_eq!(w.issued.lock().unwrap().authorizations, 1, "one sign-in for both clients");
    let browser_log = std::fs::read_to_string(w.dir.join("browser.log")).unwrap_or_default();
    assert_eq!(browser_log.lines().filter(|l| l.starts_with("http")).count(), 1, "{browser_log}");
    assert!(first.asked().is_empty() && second.asked().is_empty(), "no client was asked at the start");

    // A step-up: the first client's call needs a scope its token lacks.
    w.issued.lock().unwrap().step_up = Some(("echo".into(), "admin".into()));
    assert!(first.echo("three").await.contains("three"));
    let asked = first.asked();
    assert_eq!(asked.len(), 1, "{asked:?}");
    assert!(asked[0].starts_with(&format!("{}/authorize?", w.issuer)), "{asked:?}");
    assert!(asked[0].contains("admin"), "the step-up asks for the scope: {asked:?}");
    assert!(second.asked().is_empty(), "the other client is not asked");
    assert_eq!(w.issued.lock().unwrap().authorizations, 2);

    // The other client's call goes through on the stepped-up token.
    assert!(second.echo("four").await.contains("four"));
    assert!(second.asked().is_empty());
    assert_eq!(w.issued.lock().unwrap().authorizations, 2, "no sign-in more");

    let browser_log = std::fs::read_to_string(w.dir.join("browser.log")).unwrap_or_default();
    assert!(!browser_log.contains("leaked"), "{browser_log}");
    assert!(!browser_log.contains("failed"), "{browser_log}");
    // The clients leave first: an attach whose daemon vanished would start another.
    drop((first, second));
    let _ = daemon.child.kill().await;
    assert_no_secrets(&daemon.log());
}

#[tokio::test(flavor = "multi_thread")]
async fn the_config_gateway_signs_in_to_its_servers_at_a_url() {
    let w = world("config-gateway").await;
    let config = w.dir.join("servers.json");
    std::fs::write(&config, json!({"mcpServers": {"notes": {"url": w.url}}}).to_string()).unwrap();
    let mut command = tokio::process::Command::new(BRIDGE);
    command
        .env("HOME", w.dir.join("home"))
        .env_remove("XDG_STATE_HOME")
        .env_remove("XDG_CONFIG_HOME")
        .env("MCP_BRIDGE_TOKEN_STORE", "files")
        .env("SSL_CERT_FILE", &w.pki.ca_file)
        .env("BROWSER", w.dir.join("browser.py"))
        .env("FAKE_BROWSER_CA", &w.pki.ca_file)
        .env("FAKE_BROWSER_LOG", w.dir.join("browser.log"))
        .args(["--redirect-port", &free_port().to_string(), "--config", config.to_str().unwrap()])
        .stderr(std::process::Stdio::piped());
    let mut peer = test_support::RawPeer::start(command);
    test_support::legacy_initialize(&mut peer, json!({})).await;
    peer.send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#).await;
    peer.send(r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#).await;
    let tools = peer.recv_response(2).await;
    let names: Vec<&str> =
        tools["result"]["tools"].as_array().unwrap().iter().filter_map(|t| t["name"].as_str()).collect();
    let echo = names.iter().find(|n| n.ends_with("echo")).unwrap_or_else(|| panic!("{tools}"));
    let call = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": echo, "arguments": {"text": "hi"}}});
    peer.send(&call.to_string()).await;
    let answer = peer.recv_response(3).await;
    assert_eq!(answer["result"]["content"][0]["text"], "hi", "{answer}");
    assert_eq!(w.issued.lock().unwrap().authorizations, 1);
    let (_, stderr) = super::finish(peer).await;
    assert_no_secrets(&stderr);
}
