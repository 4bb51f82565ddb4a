//! The SDK's examples, each built and run as a user would run it, checked
//! by what it prints.

mod common;

use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use mcp_bridge_protocol::types::ContentBlock;
use mcp_bridge_sdk::server::http::HttpOptions;
use mcp_bridge_sdk::transport::http::{HttpConfig, connect};
use mcp_bridge_sdk::{Client, ClientOptions, RequestOptions};
use serde_json::json;
use test_support::oauth::{Issued, Shared, authorization_server, protected};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, Command};

/// Longest an example may take to print what is checked.
const DEADLINE: Duration = Duration::from_secs(30);

fn example(name: &str) -> PathBuf {
    test_support::workspace_example("mcp-bridge-sdk", name)
}

/// Runs an example to its end and returns its stdout.
async fn run(name: &str, args: &[&str]) -> String {
    let output = tokio::time::timeout(DEADLINE, Command::new(example(name)).args(args).kill_on_drop(true).output())
        .await
        .unwrap_or_else(|_| panic!("{name} did not end"))
        .unwrap();
    assert!(output.status.success(), "{name} failed:\n{}", String::from_utf8_lossy(&output.stderr));
    String::from_utf8(output.stdout).unwrap()
}

/// Starts an example with piped stdin, stdout and stderr.
fn start(name: &str, args: &[&str]) -> Child {
    Command::new(example(name))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap()
}

#[tokio::test]
async fn the_client_example_starts_the_quick_start_server_and_calls_its_tool() {
    let server = example("typed_tool_server");
    let printed = run("client", &[server.to_str().unwrap()]).await;
    assert_eq!(printed, "tool add: Adds two numbers\nadd(2, 3) = 5\n");
}

/// What the TypeScript SDK 1.x client (`tests/ts/quick_start_client.mjs`)
/// saw of the quick-start server, reached `how` (`stdio`, `http`) at `where_`.
async fn typescript_1x_uses_quick_start(how: &str, where_: &str) -> serde_json::Value {
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/ts/quick_start_client.mjs");
    let node = Command::new("node")
        .arg(script)
        .args([how, where_])
        .env("TS_SDK_DIR", test_support::ts_sdk_dir())
        .kill_on_drop(true)
        .output();
    let output = tokio::time::timeout(DEADLINE, node).await.expect("the client ended").unwrap();
    assert!(output.status.success(), "the client failed:\n{}", String::from_utf8_lossy(&output.stderr));
    serde_json::from_slice(&output.stdout).unwrap()
}

#[tokio::test]
async fn the_typescript_1x_client_uses_the_quick_start_server_on_stdio() {
    let server = example("typed_tool_server");
    let seen = typescript_1x_uses_quick_start("stdio", server.to_str().unwrap()).await;
    assert_eq!(seen, json!({"server": "calculator", "tools": ["add"], "add": "5"}));
}

#[tokio::test]
async fn the_typescript_1x_client_uses_the_quick_start_server_over_http() {
    let mut child = start("typed_tool_server", &["--http", "127.0.0.1:0"]);
    let mut stdout = BufReader::new(child.stdout.take().unwrap()).lines();
    let url = tokio::time::timeout(DEADLINE, stdout.next_line()).await.unwrap().unwrap().expect("the address");
    let seen = typescript_1x_uses_quick_start("http", &url).await;
    assert_eq!(seen, json!({"server": "calculator", "tools": ["add"], "add": "5"}));
}

#[tokio::test]
async fn the_http_server_example_serves_its_tool_at_the_address_it_prints() {
    let mut child = start("http_server", &[]);
    let mut stdout = BufReader::new(child.stdout.take().unwrap()).lines();
    let url = tokio::time::timeout(DEADLINE, stdout.next_line()).await.unwrap().unwrap().expect("the address");
    assert!(url.starts_with("http://127.0.0.1:") && url.ends_with("/mcp"), "{url}");

    let client = Client::new(ClientOptions::new("examples-test", "1"), connect(HttpConfig::new(&url)).unwrap());
    let result = client.call_tool("shout", json!({"text": "hello"}), &RequestOptions::default()).await.unwrap();
    assert!(matches!(&result.content[0], ContentBlock::Text(t) if t.text == "HELLO"));
    child.start_kill().unwrap();
    child.wait().await.unwrap();
}

#[tokio::test]
async fn the_ask_user_example_greets_the_name_its_hook_gave() {
    assert_eq!(run("ask_user", &[]).await, "Hello, Ada!\n");
}

#[tokio::test]
async fn the_listen_example_hears_the_change_and_lists_again() {
    let printed = run("listen", &[]).await;
    assert_eq!(
        printed,
        "heard notifications/subscriptions/acknowledged\nheard notifications/tools/list_changed\ntools now: grow, extra\n"
    );
}

#[tokio::test]
async fn the_oauth_example_signs_in_with_the_address_pasted_back() {
    let issued: Shared = Shared::new(std::sync::Mutex::new(Issued { expires_in: 3600, ..Issued::default() }));
    let issuer = authorization_server(issued.clone(), None).await;
    let url = protected(common::ping_server().http_router(HttpOptions::default()), issued.clone(), issuer).await;

    let mut child = start("oauth_client", &[&url]);
    let mut stderr = BufReader::new(child.stderr.take().unwrap()).lines();
    let sign_in_url = tokio::time::timeout(DEADLINE, async {
        while let Some(line) = stderr.next_line().await.unwrap() {
            if line.starts_with("http") {
                return line;
            }
        }
        panic!("the example ended without an address to open");
    })
    .await
    .unwrap();
    // The user's browser: the authorization server approves at once and
    // redirects; the address it redirects to is pasted back.
    let http = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().unwrap();
    let approved = http.get(&sign_in_url).send().await.unwrap();
    let redirect = approved.headers()["location"].to_str().unwrap().to_owned();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(format!("{redirect}\n").as_bytes()).await.unwrap();

    let output = tokio::time::timeout(DEADLINE, child.wait_with_output()).await.unwrap().unwrap();
    assert!(output.status.success());
    assert_eq!(String::from_utf8(output.stdout).unwrap(), "tool ping\n");
    assert_eq!(issued.lock().unwrap().grants, ["authorization_code"]);
}
