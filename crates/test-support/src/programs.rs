//! The workspace's own programs: where they are built, started listening,
//! and what they say on stderr.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};

use tokio::io::{AsyncBufReadExt, BufReader, Lines};
use tokio::process::{Child, Command};

use crate::{LINE_DEADLINE, spare_port, workspace_root};

/// A binary of the workspace, built on demand when a test of another
/// package needs it (cargo only exposes a package's own binaries to its
/// tests).
pub fn workspace_binary(package: &str, name: &str) -> PathBuf {
    built(package, "--bin", name, Path::new(name))
}

/// An example of a workspace package, built on demand (cargo gives tests
/// no path to examples).
pub fn workspace_example(package: &str, name: &str) -> PathBuf {
    built(package, "--example", name, &Path::new("examples").join(name))
}

fn built(package: &str, kind: &str, name: &str, under_debug: &Path) -> PathBuf {
    static BUILD: Mutex<()> = Mutex::new(());
    let _one_at_a_time = BUILD.lock().unwrap_or_else(|e| e.into_inner());
    let target =
        std::env::var_os("CARGO_TARGET_DIR").map(PathBuf::from).unwrap_or_else(|| workspace_root().join("target"));
    let path = target.join("debug").join(under_debug);
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let status = std::process::Command::new(cargo)
        .args(["build", "--quiet", "-p", package, kind, name])
        .current_dir(workspace_root())
        .status()
        .unwrap();
    assert!(status.success(), "cannot build {name}");
    assert!(path.is_file(), "{} was not built", path.display());
    path
}

/// Starts `mcp-bridge --listen 127.0.0.1:0 --listen-no-auth ARGS` (the
/// binary at `bridge`) and returns it with the endpoint URL it logs.
pub async fn listening_bridge(bridge: &str, args: &[&str]) -> (Child, String) {
    let mut open = vec!["--listen-no-auth"];
    open.extend_from_slice(args);
    bridge_on_loopback(tokio::process::Command::new(bridge), &open).await
}

/// Starts `bridge` (the `mcp-bridge` binary, with the environment its
/// caller gave it) as `--listen 127.0.0.1:0 ARGS` (ARGS say who may use
/// it) and returns it with the endpoint URL it logs.
pub async fn bridge_on_loopback(mut bridge: tokio::process::Command, args: &[&str]) -> (Child, String) {
    let mut child = bridge
        .args(["--listen", "127.0.0.1:0"])
        .args(args)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let url = stderr_line(&mut child, "mcp-bridge", |line| {
        line.split("serving MCP clients of both revisions at ").nth(1).map(|url| url.trim().to_owned())
    })
    .await;
    (child, url)
}

/// Reads the piped stderr of `child` until `pick` takes a line, within
/// [`LINE_DEADLINE`]; the rest is drained on a task, so the child's writes
/// never block. `who` names the child in the panic.
pub async fn stderr_line<T>(child: &mut Child, who: &str, pick: impl FnMut(&str) -> Option<T>) -> T {
    stderr_line_and_log(child, who, pick).await.0
}

/// [`stderr_line`], and every line the child writes from then on, kept.
pub async fn stderr_line_and_log<T>(
    child: &mut Child,
    who: &str,
    mut pick: impl FnMut(&str) -> Option<T>,
) -> (T, Arc<Mutex<String>>) {
    let mut lines = BufReader::new(child.stderr.take().expect("stderr is piped")).lines();
    let found = tokio::time::timeout(LINE_DEADLINE, async {
        while let Some(line) = lines.next_line().await.unwrap() {
            if let Some(found) = pick(&line) {
                return found;
            }
        }
        panic!("{who} ended before it said it was ready");
    })
    .await
    .unwrap_or_else(|_| panic!("{who} was not ready in time"));
    (found, kept_lines(lines))
}

/// Reads `lines` to their end on a task, keeping them, so the writer
/// never blocks on a full pipe.
pub fn kept_lines<R>(mut lines: Lines<R>) -> Arc<Mutex<String>>
where
    R: tokio::io::AsyncBufRead + Unpin + Send + 'static,
{
    let log = Arc::new(Mutex::new(String::new()));
    let kept = log.clone();
    tokio::spawn(async move {
        while let Ok(Some(line)) = lines.next_line().await {
            let mut log = kept.lock().unwrap_or_else(|e| e.into_inner());
            log.push_str(&line);
            log.push('\n');
        }
    });
    log
}

/// A running `mcp-example-server --http`: ended on drop.
pub struct ExampleServer {
    /// The process.
    pub child: Child,
    /// The endpoint it serves (`http://127.0.0.1:PORT/mcp`).
    pub url: String,
    /// What it wrote on stderr after it started serving.
    pub log: Arc<Mutex<String>>,
}

/// `mcp-example-server --http 127.0.0.1:0` started by `command` (its
/// binary, with any other arguments and variables).
pub async fn example_server_http(mut command: tokio::process::Command) -> ExampleServer {
    let mut child = command
        .args(["--http", "127.0.0.1:0"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let (url, log) = stderr_line_and_log(&mut child, "mcp-example-server", |line| {
        line.strip_prefix("mcp-example-server: serving ").map(str::to_owned)
    })
    .await;
    ExampleServer { child, url, log }
}

/// `mcp-bridge` (at `bridge`) for `url`, signing in through the `$BROWSER`
/// `browser`: its home, tokens in files there, the sign-in redirected to a
/// free loopback port, the authorization server trusted through `ca_file`;
/// its stderr piped.
pub fn bridge_signing_in(bridge: &Path, home: &Path, browser: &Path, ca_file: &Path, url: &str) -> Command {
    let port = spare_port();
    let mut command = Command::new(bridge);
    command
        .env("HOME", home)
        .env_remove("XDG_STATE_HOME")
        .env_remove("XDG_CONFIG_HOME")
        .env("MCP_BRIDGE_TOKEN_STORE", "files")
        .env("BROWSER", browser)
        .args(["--ca-file", ca_file.to_str().unwrap(), "--redirect-port", &port.to_string(), url])
        .stderr(Stdio::piped());
    command
}
