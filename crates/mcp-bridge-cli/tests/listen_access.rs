//! Who may reach `mcp-bridge --listen`: loopback admits every account of
//! the machine, so a TCP endpoint wants an access token (generated into a
//! file only its owner reads, or given in a variable), and a Unix domain
//! socket lives in a folder only its owner may enter. Another account is
//! played by `nobody` through `setpriv` (the tests run as root in CI).
#![cfg(target_os = "linux")]

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::Stdio;

use serde_json::{Value, json};
use test_support::workspace_binary;
use tokio::process::{Child, Command};

const BRIDGE: &str = env!("CARGO_BIN_EXE_mcp-bridge");

/// The account that plays another local user.
const NOBODY: &str = "65534";

/// A fresh folder others may enter (so that what refuses them is the
/// bridge's own folder or file, not this one).
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("mcp-listen-access-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    dir
}

/// Starts the bridge with `args` in front of the example server, its state
/// folder in `state`; returns it with its endpoint and the stderr lines
/// up to the one naming the endpoint.
async fn listening(args: &[&str], state: &Path, env: &[(&str, &str)]) -> (Child, String, Vec<String>) {
    let server = workspace_binary("mcp-example-server", "mcp-example-server");
    let mut child = Command::new(BRIDGE)
        .args(args)
        .arg("--")
        .arg(server)
        .env("XDG_STATE_HOME", state)
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut before = Vec::new();
    let endpoint = test_support::stderr_line(&mut child, "mcp-bridge", |line| {
        before.push(line.to_owned());
        line.split("serving MCP clients of both revisions at ").nth(1).map(|rest| rest.trim().to_owned())
    })
    .await;
    (child, endpoint, before)
}

/// Ends the bridge as Ctrl-C does and waits for it.
async fn interrupt(mut bridge: Child) {
    let pid = bridge.id().unwrap().to_string();
    std::process::Command::new("kill").args(["-INT", &pid]).status().unwrap();
    let status = tokio::time::timeout(std::time::Duration::from_secs(10), bridge.wait()).await.unwrap().unwrap();
    assert_eq!(status.code(), Some(0));
}

/// What `curl` run as `account` (this one when `None`) got for an
/// `initialize` POST: `{"status": N, "body": ...}` or `{"exit": N, "stderr": ...}`.
/// `to` is `["http://127.0.0.1:PORT/mcp"]` or `["--unix-socket", PATH, "http://localhost/mcp"]`.
fn curl_initialize(account: Option<&str>, to: &[&str], token: Option<&str>) -> Value {
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "curl", "version": "1"}}});
    let mut words: Vec<String> = [
        "-sS",
        "--max-time",
        "30",
        "-o",
        "-",
        "-w",
        "\n%{http_code}",
        "-H",
        "content-type: application/json",
        "-H",
        "accept: application/json, text/event-stream",
        "-H",
        "mcp-protocol-version: 2025-11-25",
        "--data",
    ]
    .map(str::to_owned)
    .to_vec();
    words.push(init.to_string());
    if let Some(token) = token {
        words.extend(["-H".to_owned(), format!("authorization: Bearer {token}")]);
    }
    words.extend(to.iter().map(|w| (*w).to_owned()));
    let output = as_account(account, "curl", &words);
    if !output.status.success() {
        return json!({"exit": output.status.code(), "stderr": String::from_utf8_lossy(&output.stderr)});
    }
    let text = String::from_utf8_lossy(&output.stdout).into_owned();
    let (body, status) = text.rsplit_once('\n').unwrap();
    json!({"status": status.parse::<u16>().unwrap(), "body": body})
}

/// Runs `program` as `account` (by `setpriv`, without root's groups) or as
/// this account.
fn as_account(account: Option<&str>, program: &str, args: &[String]) -> std::process::Output {
    let mut command = match account {
        None => std::process::Command::new(program),
        Some(uid) => {
            assert_eq!(
                std::fs::metadata("/proc/self").unwrap().uid(),
                0,
                "this test plays another local account with setpriv, which needs root (CI runs as root)"
            );
            let mut command = std::process::Command::new("setpriv");
            command.args([format!("--reuid={uid}"), format!("--regid={uid}"), "--clear-groups".into(), program.into()]);
            command
        }
    };
    command.args(args).output().unwrap_or_else(|e| panic!("{program} cannot be run ({e}): install it"))
}

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

#[tokio::test]
async fn a_tcp_endpoint_serves_only_requests_carrying_the_token_only_its_owner_can_read() {
    let dir = scratch("generated");
    let state = dir.join("state");
    std::fs::create_dir_all(state.join("mcp-bridge")).unwrap();
    std::fs::set_permissions(state.join("mcp-bridge"), std::fs::Permissions::from_mode(0o755)).unwrap();
    let (bridge, url, said) = listening(&["--listen", "127.0.0.1:0"], &state, &[]).await;
    let file = said
        .iter()
        .find_map(|line| line.split("clients send the access token in ").nth(1))
        .and_then(|rest| rest.split(" as ").next())
        .map(PathBuf::from)
        .unwrap_or_else(|| panic!("no line names the token file: {said:?}"));
    let token = std::fs::read_to_string(&file).unwrap();
    assert!(token.len() >= 32, "a token too short to guess: {} characters", token.len());
    assert_eq!(mode(&file), 0o600, "{}", file.display());
    assert_eq!(mode(file.parent().unwrap()), 0o700);
    assert!(!said.iter().any(|line| line.contains(token.trim())), "the token is in the log: {said:?}");
    let tcp = [url.as_str()];

    // The owner, with and without the token.
    let served = curl_initialize(None, &tcp, Some(&token));
    assert_eq!(served["status"], 200, "{served}");
    assert!(served["body"].as_str().unwrap().contains("mcp-example-server"), "{served}");
    for wrong in [None, Some("not-the-token"), Some(&token[1..])] {
        let refused = curl_initialize(None, &tcp, wrong);
        assert_eq!(refused["status"], 401, "{refused}");
        assert!(!refused["body"].as_str().unwrap().contains("serverInfo"), "{refused}");
    }
    // Another account reaches the port but cannot read the token.
    let other = curl_initialize(Some(NOBODY), &tcp, None);
    assert_eq!(other["status"], 401, "{other}");
    let read = as_account(Some(NOBODY), "cat", &[file.display().to_string()]);
    assert!(!read.status.success() && read.stdout.is_empty(), "another account read the token file");
    assert!(String::from_utf8_lossy(&read.stderr).contains("Permission denied"), "{read:?}");

    interrupt(bridge).await;
    assert!(!file.exists(), "the token file outlives the bridge");
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn a_token_given_in_a_variable_is_required_and_never_reaches_the_server_process() {
    let dir = scratch("variable");
    let secret = format!("listen-token-{}-abcdefghijklmnop", std::process::id());
    let args = ["--listen", "127.0.0.1:0", "--listen-token-env", "TEST_LISTEN_TOKEN"];
    let (bridge, url, _) = listening(&args, &dir, &[("TEST_LISTEN_TOKEN", &secret)]).await;
    assert_eq!(curl_initialize(None, &[&url], Some(&secret))["status"], 200);
    assert_eq!(curl_initialize(None, &[&url], None)["status"], 401);
    assert!(!dir.join("mcp-bridge/listen").exists(), "a token was generated although one was given");
    // The server the bridge started does not inherit the variable.
    let bridge_pid = bridge.id().unwrap();
    let children = std::fs::read_to_string(format!("/proc/{bridge_pid}/task/{bridge_pid}/children")).unwrap();
    let server_pid = children.split_whitespace().next().expect("the server process");
    let environ = std::fs::read(format!("/proc/{server_pid}/environ")).unwrap();
    let environ = String::from_utf8_lossy(&environ);
    assert!(environ.contains("XDG_STATE_HOME="), "not the server's environment");
    assert!(!environ.contains("TEST_LISTEN_TOKEN") && !environ.contains(&secret), "the server got the token");
    interrupt(bridge).await;
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn a_unix_socket_serves_its_owner_and_refuses_every_other_account() {
    let dir = scratch("socket");
    let socket = dir.join("private").join("mcp.sock");
    let listen = format!("unix:{}", socket.display());
    let (bridge, endpoint, _) = listening(&["--listen", &listen], &dir, &[]).await;
    assert!(endpoint.contains(&socket.display().to_string()), "{endpoint}");
    assert_eq!(mode(socket.parent().unwrap()), 0o700, "the socket's folder is created private");
    let to = ["--unix-socket", socket.to_str().unwrap(), "http://localhost/mcp"];

    let served = curl_initialize(None, &to, None);
    assert_eq!(served["status"], 200, "{served}");
    assert!(served["body"].as_str().unwrap().contains("mcp-example-server"), "{served}");
    let other = curl_initialize(Some(NOBODY), &to, None);
    assert!(other["status"].is_null(), "another account was answered: {other}");
    assert!(other["stderr"].as_str().unwrap().contains("onnect"), "{other}");

    interrupt(bridge).await;
    assert!(!socket.exists(), "the socket outlives the bridge");
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn a_socket_in_a_folder_others_may_enter_is_refused_with_exit_code_2() {
    let dir = scratch("open-folder");
    let open = dir.join("open");
    std::fs::create_dir_all(&open).unwrap();
    std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o777)).unwrap();
    let listen = format!("unix:{}", open.join("mcp.sock").display());
    let output = Command::new(BRIDGE).args(["--listen", &listen, "--", "true"]).output().await.unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("open to other users") && stderr.contains("chmod 700"), "{stderr}");
    assert!(!open.join("mcp.sock").exists());
    let _ = std::fs::remove_dir_all(&dir);
}
