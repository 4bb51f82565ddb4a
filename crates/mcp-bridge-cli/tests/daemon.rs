//! `mcp-bridge attach`: four clients started at once against one
//! configuration file (the TypeScript SDK 1.x, Python `mcp` 1.x, and two of
//! this SDK's clients, one of each revision) share one daemon and one
//! process per server; each client's elicitation is answered by that
//! client; a list change reaches all of them; a client killed mid-call
//! has its call cancelled at the server; a server killed comes back and
//! the clients hear of it; the daemon killed leaves no server behind and
//! the clients' `attach` start a new one; `daemon stop` ends it all. A
//! saved change of the file applies to the running daemon.

#![cfg(target_os = "linux")]

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use mcp_bridge_protocol::types::{ClientCapabilities, ContentBlock, ElicitResult, SubscriptionFilter};
use mcp_bridge_sdk::client::{Era, InputHooks};
use mcp_bridge_sdk::transport::stdio::{StdioCommand, spawn};
use mcp_bridge_sdk::{Client, ClientOptions, RequestOptions};
use serde_json::{Map, Value, json};
use test_support::{ScratchDir, workspace_binary};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

const BRIDGE: &str = env!("CARGO_BIN_EXE_mcp-bridge");

/// How long anything the test waits for may take.
const DEADLINE: Duration = Duration::from_secs(60);

/// A 2026-07-28 server whose one tool, `wait`, never answers: it writes
/// `started ID` and, for a `notifications/cancelled`, `cancelled ID` in the
/// file named by its first argument.
const WAITER: &str = r#"
import json, sys
log = open(sys.argv[1], "a", buffering=1)
def out(obj):
    sys.stdout.write(json.dumps(obj) + "\n"); sys.stdout.flush()
for line in sys.stdin:
    msg = json.loads(line)
    method = msg.get("method")
    if method == "notifications/cancelled":
        log.write("cancelled %s\n" % json.dumps(msg["params"].get("requestId")))
    elif "id" not in msg:
        continue
    elif method == "server/discover":
        out({"jsonrpc": "2.0", "id": msg["id"], "result": {"resultType": "complete",
            "supportedVersions": ["2026-07-28"], "capabilities": {"tools": {}}}})
    elif method == "subscriptions/listen":
        out({"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged", "params": {
            "_meta": {"io.modelcontextprotocol/subscriptionId": msg["id"]},
            "notifications": msg["params"]["notifications"]}})
    elif method == "tools/list":
        out({"jsonrpc": "2.0", "id": msg["id"], "result": {"resultType": "complete",
            "tools": [{"name": "wait", "inputSchema": {"type": "object"}}]}})
    elif method == "tools/call":
        log.write("started %s\n" % json.dumps(msg["id"]))
    else:
        out({"jsonrpc": "2.0", "id": msg["id"], "error": {"code": -32601, "message": "Method not found"}})
"#;

/// The test's configuration file and folders.
struct Setup {
    _dir: ScratchDir,
    config: PathBuf,
    /// The XDG_RUNTIME_DIR of every process: the daemon's socket is here.
    runtime: PathBuf,
    /// The waiter's record of calls started and cancelled.
    waiter_log: PathBuf,
}

impl Setup {
    fn new() -> Setup {
        let dir = ScratchDir::new("daemon");
        let (config, runtime, waiter_log) = (dir.join("servers.json"), dir.join("run"), dir.join("waiter.log"));
        std::fs::create_dir(&runtime).unwrap();
        let example = workspace_binary("mcp-example-server", "mcp-example-server");
        let file = json!({"mcpServers": {
            "example": {"command": example, "idle": "1s"},
            "waiter": {"command": "python3", "args": ["-c", WAITER, waiter_log], "idle": "1s"},
        }});
        std::fs::write(&config, file.to_string()).unwrap();
        Setup { _dir: dir, config, runtime, waiter_log }
    }

    /// `mcp-bridge attach` with both servers.
    fn attach(&self) -> Vec<String> {
        ["attach", "--config", self.config.to_str().unwrap(), "example", "waiter"].map(str::to_owned).to_vec()
    }

    /// `mcp-bridge daemon ACTION --config FILE [--json]`: its exit code and
    /// stdout (with stderr after it when it failed).
    async fn daemon(&self, action: &[&str]) -> (Option<i32>, String) {
        let output = Command::new(BRIDGE)
            .arg("daemon")
            .args(action)
            .arg("--config")
            .arg(&self.config)
            .env("XDG_RUNTIME_DIR", &self.runtime)
            .output()
            .await
            .unwrap();
        let mut text = String::from_utf8_lossy(&output.stdout).into_owned();
        if !output.status.success() {
            text += &String::from_utf8_lossy(&output.stderr);
        }
        (output.status.code(), text)
    }

    async fn status(&self) -> Value {
        let (code, stdout) = self.daemon(&["status", "--json"]).await;
        assert_eq!(code, Some(0), "{stdout}");
        serde_json::from_str(&stdout).unwrap()
    }

    /// The daemon processes of this test's file.
    fn daemons(&self) -> Vec<u32> {
        let config = self.config.to_str().unwrap();
        processes()
            .into_iter()
            .filter(|(_, _, cmdline)| cmdline.contains("daemon\0run") && cmdline.contains(config))
            .map(|(pid, _, _)| pid)
            .collect()
    }

    fn waiter_log(&self) -> String {
        std::fs::read_to_string(&self.waiter_log).unwrap_or_default()
    }
}

/// Every living (not zombie) process: its id, its parent's and its command line.
fn processes() -> Vec<(u32, u32, String)> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else { continue };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else { continue };
        let fields: Vec<&str> = stat.rsplit(')').next().unwrap_or("").split_whitespace().collect();
        if fields.first() == Some(&"Z") {
            continue;
        }
        let parent = fields.get(1).and_then(|p| p.parse().ok()).unwrap_or(0);
        let cmdline = std::fs::read_to_string(entry.path().join("cmdline")).unwrap_or_default();
        found.push((pid, parent, cmdline));
    }
    found
}

fn alive(pid: u32) -> bool {
    processes().iter().any(|(p, _, _)| *p == pid)
}

fn kill(pid: u32) {
    // SAFETY: kill(2) on a process this test started (through the bridge).
    unsafe { libc::kill(pid as i32, libc::SIGKILL) };
}

/// The end of a wait for something that must happen within [`DEADLINE`].
struct Deadline(tokio::time::Instant, &'static str);

impl Deadline {
    fn new(what: &'static str) -> Deadline {
        Deadline(tokio::time::Instant::now() + DEADLINE, what)
    }

    /// Before the next look: panics once the deadline passed.
    async fn pause(&self) {
        assert!(tokio::time::Instant::now() < self.0, "not within {DEADLINE:?}: {}", self.1);
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// A client library's script, driven one command at a time.
struct Driven {
    name: &'static str,
    child: Child,
    input: ChildStdin,
    output: Lines<BufReader<ChildStdout>>,
}

impl Driven {
    async fn start(name: &'static str, mut command: Command) -> Driven {
        let mut child = command.stdin(Stdio::piped()).stdout(Stdio::piped()).kill_on_drop(true).spawn().unwrap();
        let (input, output) = (child.stdin.take().unwrap(), child.stdout.take().unwrap());
        let mut driven = Driven { name, child, input, output: BufReader::new(output).lines() };
        assert_eq!(driven.answer().await, json!({"ready": true}), "{name} connected");
        driven
    }

    async fn answer(&mut self) -> Value {
        let line = tokio::time::timeout(DEADLINE, self.output.next_line()).await;
        let line = line.unwrap_or_else(|_| panic!("{} did not answer", self.name)).unwrap();
        serde_json::from_str(&line.unwrap_or_else(|| panic!("{} ended", self.name))).unwrap()
    }

    async fn send(&mut self, command: Value) {
        self.input.write_all(format!("{command}\n").as_bytes()).await.unwrap();
    }

    async fn ask(&mut self, command: Value) -> Value {
        self.send(command).await;
        self.answer().await
    }

    async fn call(&mut self, name: &str, arguments: Value) -> String {
        let answer = self.ask(json!({"op": "call", "name": name, "arguments": arguments})).await;
        answer["text"].as_str().unwrap_or_else(|| panic!("{}: {answer}", self.name)).to_owned()
    }

    async fn changes(&mut self) -> u64 {
        self.ask(json!({"op": "changes"})).await["changes"].as_u64().unwrap()
    }

    async fn tools(&mut self) -> Vec<String> {
        serde_json::from_value(self.ask(json!({"op": "tools"})).await["tools"].clone()).unwrap()
    }
}

/// One of this SDK's clients through `attach`, with the tool list changes
/// it heard.
struct Ours {
    client: Client,
    changes: Arc<AtomicUsize>,
}

impl Ours {
    async fn start(setup: &Setup, name: &'static str, era: Era) -> Ours {
        let changes = Arc::new(AtomicUsize::new(0));
        let counted = changes.clone();
        let mut options = ClientOptions::new(name, "1").with_era(era);
        options.capabilities = ClientCapabilities::builder().form_elicitation().build();
        options.hooks = InputHooks::new().on_form(move |_| async move {
            Ok::<_, std::convert::Infallible>(ElicitResult::accept(Map::from_iter([("name".to_owned(), json!(name))])))
        });
        options.on_notification = Some(Arc::new(move |n| {
            if n.method == "notifications/tools/list_changed" {
                counted.fetch_add(1, Ordering::SeqCst);
            }
        }));
        let command = StdioCommand::new(BRIDGE).args(setup.attach()).env("XDG_RUNTIME_DIR", &setup.runtime);
        let client = Client::new(options, spawn(command).unwrap());
        let o = RequestOptions::default();
        client.list_all_tools(&o).await.unwrap();
        if era == Era::Modern {
            let listener = client.clone();
            let filter = SubscriptionFilter { tools_list_changed: Some(true), ..Default::default() };
            tokio::spawn(async move { listener.listen(filter, &RequestOptions::default()).await });
        }
        Ours { client, changes }
    }

    async fn call(&self, name: &str, arguments: Value) -> String {
        let result = self.client.call_tool(name, arguments, &RequestOptions::default()).await.unwrap();
        match result.content.first() {
            Some(ContentBlock::Text(text)) => text.text.clone(),
            other => panic!("no text: {other:?}"),
        }
    }

    async fn tools(&self) -> Vec<String> {
        self.client.list_all_tools(&RequestOptions::default()).await.unwrap().into_iter().map(|t| t.name).collect()
    }
}

fn node_client(setup: &Setup) -> Command {
    let script = format!("{}/tests/ts/driven_client.mjs", env!("CARGO_MANIFEST_DIR"));
    let mut command = Command::new("node");
    command.arg(script).arg("ts-client").arg(BRIDGE).args(setup.attach());
    command.env("TS_SDK_DIR", test_support::ts_sdk_dir()).env("XDG_RUNTIME_DIR", &setup.runtime);
    command
}

fn python_client(setup: &Setup) -> Command {
    let script = format!("{}/tests/python/driven_client.py", env!("CARGO_MANIFEST_DIR"));
    let mut command = Command::new(test_support::langchain_python());
    command.arg(script).arg("py-client").arg(BRIDGE).args(setup.attach());
    command.env("XDG_RUNTIME_DIR", &setup.runtime);
    command
}

/// The process id of the server `name` in a status.
fn server_pid(status: &Value, name: &str) -> Option<u32> {
    let servers = status["servers"].as_array().unwrap();
    let server = servers.iter().find(|s| s["name"] == name).unwrap();
    server["pid"].as_u64().filter(|_| server["available"] == true).map(|pid| pid as u32)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn four_clients_share_one_daemon_and_one_process_per_server() {
    let setup = Setup::new();

    // Four clients at once: they race to start the daemon.
    let (mut ts, mut py, modern, legacy) = tokio::join!(
        Driven::start("ts-client", node_client(&setup)),
        Driven::start("py-client", python_client(&setup)),
        Ours::start(&setup, "ours-modern", Era::Modern),
        Ours::start(&setup, "ours-legacy", Era::Legacy),
    );
    let daemons = setup.daemons();
    assert_eq!(daemons.len(), 1, "one daemon: {daemons:?}");
    let daemon = daemons[0];
    let status = setup.status().await;
    assert_eq!(status["pid"], daemon);
    assert_eq!(status["clients"].as_array().unwrap().len(), 4, "{status:#}");
    let (example, waiter) = (server_pid(&status, "example").unwrap(), server_pid(&status, "waiter").unwrap());
    let mut children: Vec<u32> =
        processes().into_iter().filter(|(_, parent, _)| *parent == daemon).map(|(pid, _, _)| pid).collect();
    children.sort_unstable();
    let mut servers = vec![example, waiter];
    servers.sort_unstable();
    assert_eq!(children, servers, "one process per server, none other");
    let (code, text) = setup.daemon(&["status"]).await;
    assert!(code == Some(0) && text.contains("clients: 4") && text.contains("example: running"), "{text}");

    // Each client's elicitation is answered by that client.
    let ask = json!({});
    let (a, b, c, d) = tokio::join!(
        ts.call("example__ask_name", ask.clone()),
        py.call("example__ask_name", ask.clone()),
        modern.call("example__ask_name", ask.clone()),
        legacy.call("example__ask_name", ask.clone()),
    );
    assert_eq!([a, b, c, d], ["ts-client", "py-client", "ours-modern", "ours-legacy"].map(|n| format!("Hello, {n}!")));

    // A list change reaches every client.
    let before = (
        ts.changes().await,
        py.changes().await,
        modern.changes.load(Ordering::SeqCst),
        legacy.changes.load(Ordering::SeqCst),
    );
    assert_eq!(ts.call("example__toggle_bonus", json!({})).await, "bonus added");
    let deadline = Deadline::new("every client heard the list change");
    while !(ts.changes().await > before.0
        && py.changes().await > before.1
        && modern.changes.load(Ordering::SeqCst) > before.2
        && legacy.changes.load(Ordering::SeqCst) > before.3)
    {
        deadline.pause().await;
    }
    assert!(py.tools().await.contains(&"example__bonus".to_owned()));
    assert!(legacy.tools().await.contains(&"example__bonus".to_owned()));

    // A client killed mid-call: its call is cancelled at the server.
    py.send(json!({"op": "call", "name": "waiter__wait", "arguments": {}})).await;
    let deadline = Deadline::new("the waiter got the call");
    while !(setup.waiter_log().contains("started")) {
        deadline.pause().await;
    }
    py.child.start_kill().unwrap();
    let deadline = Deadline::new("the call was cancelled at the server");
    while !(setup.waiter_log().contains("cancelled")) {
        deadline.pause().await;
    }
    let deadline = Deadline::new("the daemon lets the killed client go");
    while setup.status().await["clients"].as_array().unwrap().len() != 3 {
        deadline.pause().await;
    }

    // A server killed: it comes back, and the clients hear its tools went and came.
    let before = (ts.changes().await, legacy.changes.load(Ordering::SeqCst));
    kill(example);
    let deadline = Deadline::new("the server is back");
    while server_pid(&setup.status().await, "example").is_none_or(|pid| pid == example) {
        deadline.pause().await;
    }
    let deadline = Deadline::new("the clients heard");
    while !(ts.changes().await > before.0 && legacy.changes.load(Ordering::SeqCst) > before.1) {
        deadline.pause().await;
    }
    assert_eq!(ts.call("example__add", json!({"a": 19, "b": 23})).await, "42");
    assert_eq!(modern.call("example__add", json!({"a": 1, "b": 2})).await, "3");

    // The daemon killed: its servers go with it, and the next request
    // reaches a new daemon that a client's attach started.
    let status = setup.status().await;
    let servers = [server_pid(&status, "example").unwrap(), server_pid(&status, "waiter").unwrap()];
    kill(daemon);
    let deadline = Deadline::new("the daemon and its servers are gone");
    while alive(daemon) || servers.iter().any(|&pid| alive(pid)) {
        deadline.pause().await;
    }
    assert_eq!(legacy.call("example__add", json!({"a": 2, "b": 3})).await, "5");
    assert_eq!(ts.call("example__add", json!({"a": 3, "b": 4})).await, "7");
    assert_eq!(modern.call("example__add", json!({"a": 4, "b": 5})).await, "9");
    let daemons = setup.daemons();
    assert!(daemons.len() == 1 && daemons[0] != daemon, "one new daemon: {daemons:?}");

    // `daemon stop` ends the daemon and its servers; the clients' attach end.
    let new_daemon = daemons[0];
    let status = setup.status().await;
    let servers = [server_pid(&status, "example").unwrap(), server_pid(&status, "waiter").unwrap()];
    let (code, text) = setup.daemon(&["stop"]).await;
    assert_eq!(code, Some(0), "{text}");
    assert!(!alive(new_daemon), "stop returns once the daemon ended");
    let deadline = Deadline::new("its servers are gone");
    while !(servers.iter().all(|&pid| !alive(pid))) {
        deadline.pause().await;
    }
    drop((ts, modern, legacy));
}

/// A `"sharing": "per-session"` server runs once per attached client, a
/// shared one once for all.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_per_session_server_runs_once_per_client() {
    let setup = Setup::new();
    // Its tool `pid` answers with the process id of the instance.
    let script = test_support::python_tool_server(&["pid"], "str(os.getpid())", "False");
    let server = json!({"command": "python3", "args": ["-c", script], "idle": "1s"});
    let mut own = server.clone();
    own["sharing"] = json!("per-session");
    std::fs::write(&setup.config, json!({"mcpServers": {"shared": server, "own": own}}).to_string()).unwrap();
    let attach = |name: &str| {
        let options = ClientOptions::new(name, "1").with_era(Era::Legacy);
        let command = StdioCommand::new(BRIDGE)
            .args(["attach", "--config", setup.config.to_str().unwrap(), "--all"])
            .env("XDG_RUNTIME_DIR", &setup.runtime);
        Client::new(options, spawn(command).unwrap())
    };
    let (first, second) = (attach("first"), attach("second"));
    let pid = |client: Client, tool: &'static str| async move {
        let result = client.call_tool(tool, json!({}), &RequestOptions::default()).await.unwrap();
        let Some(ContentBlock::Text(text)) = result.content.first() else { panic!("{result:?}") };
        text.text.parse::<u32>().unwrap()
    };
    let (own_first, own_second) = (pid(first.clone(), "own__pid").await, pid(second.clone(), "own__pid").await);
    assert_ne!(own_first, own_second, "an instance for each client");
    assert_eq!(pid(first.clone(), "own__pid").await, own_first, "each keeps its own");
    assert_eq!(pid(first.clone(), "shared__pid").await, pid(second.clone(), "shared__pid").await, "one for both");
    let (code, text) = setup.daemon(&["stop"]).await;
    assert_eq!(code, Some(0), "{text}");
    for instance in [own_first, own_second] {
        let deadline = Deadline::new("the instances end with the daemon");
        while alive(instance) {
            deadline.pause().await;
        }
    }
}

#[tokio::test]
async fn attach_names_the_servers_a_file_has_when_asked_for_another() {
    let setup = Setup::new();
    let output = Command::new(BRIDGE)
        .args(["attach", "--config", setup.config.to_str().unwrap(), "nosuch"])
        .env("XDG_RUNTIME_DIR", &setup.runtime)
        .stdin(Stdio::null())
        .output()
        .await
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("\"nosuch\"") && stderr.contains("\"example\"") && stderr.contains("\"waiter\""),
        "{stderr}"
    );
    let (code, text) = setup.daemon(&["stop"]).await;
    assert_eq!(code, Some(0), "{text}");
}

/// The daemon ends by itself once no client and no server is left.
#[tokio::test]
async fn the_daemon_ends_when_its_last_client_left_and_its_servers_idled() {
    let setup = Setup::new();
    let client = Ours::start(&setup, "ours", Era::Legacy).await;
    assert_eq!(client.call("example__add", json!({"a": 1, "b": 1})).await, "2");
    let daemon = setup.daemons()[0];
    client.client.close().await;
    // Servers idle 1 s, then the daemon's 10 s with nothing to do.
    let deadline = Deadline::new("the daemon ended");
    while alive(daemon) {
        deadline.pause().await;
    }
    let socket_files: Vec<PathBuf> = std::fs::read_dir(setup.runtime.join("mcp-bridge"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "sock"))
        .collect();
    assert!(socket_files.is_empty(), "the socket is removed: {socket_files:?}");
    let _ = Path::new("");
}

/// A saved change of the file applies to the running daemon: a server
/// added can be attached to at once, without a new daemon.
#[tokio::test]
async fn a_saved_change_of_the_file_applies_to_the_running_daemon() {
    let setup = Setup::new();
    let first = Ours::start(&setup, "first", Era::Legacy).await;
    let daemon = setup.daemons();
    let mut file: Value = serde_json::from_str(&std::fs::read_to_string(&setup.config).unwrap()).unwrap();
    file["mcpServers"]["extra"] = file["mcpServers"]["example"].clone();
    std::fs::write(&setup.config, file.to_string()).unwrap();
    let deadline = Deadline::new("the daemon knew the server added");
    while !setup.status().await["servers"].as_array().unwrap().iter().any(|s| s["name"] == "extra") {
        deadline.pause().await;
    }
    let command = StdioCommand::new(BRIDGE)
        .args(["attach", "--config", setup.config.to_str().unwrap(), "extra"])
        .env("XDG_RUNTIME_DIR", &setup.runtime);
    let second = Client::new(ClientOptions::new("second", "1"), spawn(command).unwrap());
    let sum = second.call_tool("extra__add", json!({"a": 2, "b": 3}), &RequestOptions::default()).await.unwrap();
    assert!(matches!(sum.content.first(), Some(ContentBlock::Text(t)) if t.text == "5"), "{sum:?}");
    assert_eq!(first.call("example__add", json!({"a": 1, "b": 1})).await, "2", "the first client went on");
    assert_eq!(setup.daemons(), daemon, "the same daemon");
    let (code, text) = setup.daemon(&["stop"]).await;
    assert_eq!(code, Some(0), "{text}");
}
