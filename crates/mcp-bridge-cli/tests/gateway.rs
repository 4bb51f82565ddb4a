//! `mcp-bridge --config FILE`: three servers of three SDKs from one
//! Claude Desktop configuration (`mcp-example-server`, the reference
//! `server-everything` speaking only 2025-11-25, a Python `mcp` 2.x
//! server), served to one legacy client as one server: their tools as
//! `<server>__<tool>`, calls routed, an input request of a server relayed
//! to the client and its answer back, list changes passed on, a server
//! killed mid-session leaves (its tools vanish, the others go on) and comes
//! back by itself.

use std::path::Path;

use serde_json::{Value, json};
use test_support::{RawPeer, legacy_initialize, python_peer, server_everything, workspace_binary};

/// Reads until the message `pick` accepts; the others are dropped.
async fn recv_until(peer: &mut RawPeer, pick: impl Fn(&Value) -> bool) -> Value {
    loop {
        let message = peer.recv().await;
        if pick(&message) {
            return message;
        }
    }
}

async fn tool_names(peer: &mut RawPeer, id: i64) -> Vec<String> {
    peer.send(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/list"}).to_string()).await;
    let listed = recv_until(peer, |m| m["id"] == id).await;
    listed["result"]["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap().to_owned()).collect()
}

async fn call(peer: &mut RawPeer, id: i64, name: &str, arguments: Value) -> Value {
    let request =
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": name, "arguments": arguments}});
    peer.send(&request.to_string()).await;
    recv_until(peer, |m| m["id"] == id && m.get("method").is_none()).await
}

fn text(response: &Value) -> String {
    response["result"]["content"].as_array().into_iter().flatten().filter_map(|c| c["text"].as_str()).collect()
}

/// The processes whose environment holds `marker` (the `env` of one
/// configured server).
fn processes_marked(marker: &str) -> Vec<u32> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else { continue };
        let environ = std::fs::read(entry.path().join("environ")).unwrap_or_default();
        if environ.split(|b| *b == 0).any(|v| v == marker.as_bytes()) {
            found.push(pid);
        }
    }
    found
}

#[tokio::test(flavor = "multi_thread")]
async fn three_servers_of_three_sdks_are_one_server_for_a_legacy_client() {
    let dir = std::env::temp_dir().join(format!("mcp-gateway-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let marker = format!("GATEWAY_TEST_MARK=notes-{}", std::process::id());
    let python_server =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../mcp-example-server/tests/python/python_server.py");
    let config = json!({"mcpServers": {
        "notes": {"command": workspace_binary("mcp-example-server", "mcp-example-server"),
                  "env": {"GATEWAY_TEST_MARK": marker.split_once('=').unwrap().1}},
        "everything": {"command": "node", "args": [server_everything(), "stdio"]},
        "python": {"command": python_peer(), "args": [python_server]}
    }});
    let file = dir.join("claude_desktop_config.json");
    std::fs::write(&file, config.to_string()).unwrap();
    let bridge = workspace_binary("mcp-bridge-cli", "mcp-bridge");
    let mut peer = RawPeer::spawn(&bridge, &["--config", file.to_str().unwrap()]);
    let init = legacy_initialize(&mut peer, json!({"elicitation": {}})).await;
    assert!(init["result"]["capabilities"]["tools"]["listChanged"] == true, "{init}");
    peer.send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#).await;

    let names = tool_names(&mut peer, 1).await;
    for wanted in ["notes__echo", "everything__echo", "python__shout"] {
        assert!(names.iter().any(|n| n == wanted), "{wanted} in {names:?}");
    }
    assert_eq!(text(&call(&mut peer, 2, "notes__echo", json!({"text": "from notes"})).await), "from notes");
    assert!(text(&call(&mut peer, 3, "everything__echo", json!({"message": "legacy"})).await).contains("legacy"));
    assert_eq!(text(&call(&mut peer, 4, "python__shout", json!({"text": "py"})).await), "PY");

    // A server's input request reaches the client; the answer goes back to it.
    let request = json!({"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {"name": "notes__ask_name", "arguments": {}}});
    peer.send(&request.to_string()).await;
    let asked = recv_until(&mut peer, |m| m["method"] == "elicitation/create").await;
    let answer =
        json!({"jsonrpc": "2.0", "id": asked["id"], "result": {"action": "accept", "content": {"name": "Ada"}}});
    peer.send(&answer.to_string()).await;
    let named = recv_until(&mut peer, |m| m["id"] == 5).await;
    assert!(text(&named).contains("Ada"), "{named}");

    // A list change of one server reaches the client.
    call(&mut peer, 6, "notes__toggle_bonus", json!({})).await;
    recv_until(&mut peer, |m| m["method"] == "notifications/tools/list_changed").await;
    assert!(tool_names(&mut peer, 7).await.iter().any(|n| n == "notes__bonus"));

    // The notes server dies: its tools vanish, the others work on.
    let pids = processes_marked(&marker);
    assert_eq!(pids.len(), 1, "one notes server: {pids:?}");
    std::process::Command::new("kill").args(["-9", &pids[0].to_string()]).status().unwrap();
    let mut id = 8;
    loop {
        recv_until(&mut peer, |m| m["method"] == "notifications/tools/list_changed").await;
        id += 1;
        if !tool_names(&mut peer, id).await.iter().any(|n| n.starts_with("notes__")) {
            break;
        }
    }
    assert_eq!(text(&call(&mut peer, 50, "python__shout", json!({"text": "still"})).await), "STILL");
    let gone = call(&mut peer, 51, "notes__echo", json!({"text": "x"})).await;
    assert!(gone.get("error").is_some(), "{gone}");
    // ... and comes back by itself.
    loop {
        recv_until(&mut peer, |m| m["method"] == "notifications/tools/list_changed").await;
        id += 1;
        if tool_names(&mut peer, id).await.iter().any(|n| n == "notes__echo") {
            break;
        }
    }
    assert_eq!(text(&call(&mut peer, 60, "notes__echo", json!({"text": "back"})).await), "back");
    assert_eq!(peer.finish().await, Some(0));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_configuration_that_cannot_be_used_is_refused_at_start_naming_why() {
    let dir = std::env::temp_dir().join(format!("mcp-gateway-bad-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("config.json");
    std::fs::write(&file, r#"{"mcpServers": {"n": {"command": "x", "env": {"T": "${env:GATEWAY_UNSET_VARIABLE}"}}}}"#)
        .unwrap();
    let bridge = workspace_binary("mcp-bridge-cli", "mcp-bridge");
    for (args, wanted) in [
        (vec!["--config", "/nonexistent/config.json"], "--config /nonexistent/config.json: cannot be read"),
        (vec!["--config", file.to_str().unwrap()], "GATEWAY_UNSET_VARIABLE, which is not set"),
        (vec!["--config", file.to_str().unwrap(), "--", "x"], "--config"),
    ] {
        let out = std::process::Command::new(&bridge).args(&args).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(wanted), "{args:?}: {stderr}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn ctrl_c_while_the_servers_start_ends_the_gateway_and_its_servers() {
    let dir = std::env::temp_dir().join(format!("mcp-gateway-interrupt-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let marker = format!("GATEWAY_SLOW_SERVER={}", std::process::id());
    let (name, value) = marker.split_once('=').unwrap();
    // One server ready at once, one that never answers its first request.
    let config = json!({"mcpServers": {
        "example": {"command": workspace_binary("mcp-example-server", "mcp-example-server")},
        "slow": {"command": "python3", "args": ["-c", "import sys; sys.stdin.read()"], "env": {name: value}},
    }});
    let file = dir.join("config.json");
    std::fs::write(&file, config.to_string()).unwrap();
    let bridge = workspace_binary("mcp-bridge-cli", "mcp-bridge");
    // Started as `cmd &` in a script starts it: SIGINT ignored until the
    // process handles it.
    let line = format!("trap '' INT; exec {} --config {} --listen 127.0.0.1:0", bridge.display(), file.display());
    let mut child = tokio::process::Command::new("sh")
        .args(["-c", &line])
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    test_support::stderr_line(&mut child, "the gateway", |l| {
        l.contains("server available server=example").then_some(())
    })
    .await;
    assert!(!processes_marked(&marker).is_empty(), "the slow server is starting");
    let pid = child.id().unwrap().to_string();
    std::process::Command::new("kill").args(["-INT", &pid]).status().unwrap();
    let status = tokio::time::timeout(std::time::Duration::from_secs(5), child.wait())
        .await
        .expect("Ctrl-C while the servers start was ignored")
        .unwrap();
    assert_eq!(status.code(), Some(0));
    test_support::until("the slow server ends", || processes_marked(&marker).is_empty()).await;
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_2025_11_25_servers_roots_request_reaches_a_client_that_declared_roots() {
    let dir = std::env::temp_dir().join(format!("mcp-gateway-roots-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    // The reference server of the TypeScript SDK 1.x: its get-roots-list
    // tool asks the client for its roots during the call.
    let config = json!({"mcpServers": {"everything": {"command": "node", "args": [server_everything(), "stdio"]}}});
    let file = dir.join("config.json");
    std::fs::write(&file, config.to_string()).unwrap();
    let bridge = workspace_binary("mcp-bridge-cli", "mcp-bridge");
    for declares_roots in [true, false] {
        let mut peer = RawPeer::spawn(&bridge, &["--config", file.to_str().unwrap()]);
        let capabilities = if declares_roots { json!({"roots": {}}) } else { json!({}) };
        legacy_initialize(&mut peer, capabilities).await;
        peer.send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#).await;
        assert!(tool_names(&mut peer, 1).await.iter().any(|n| n == "everything__get-roots-list"));
        let request = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
            "params": {"name": "everything__get-roots-list", "arguments": {}}});
        peer.send(&request.to_string()).await;
        let answered = if declares_roots {
            let asked = recv_until(&mut peer, |m| m["method"] == "roots/list").await;
            let roots = json!({"roots": [{"uri": "file:///home/ada/project", "name": "project"}]});
            peer.send(&json!({"jsonrpc": "2.0", "id": asked["id"], "result": roots}).to_string()).await;
            let answered = recv_until(&mut peer, |m| m["id"] == 2).await;
            assert!(text(&answered).contains("file:///home/ada/project"), "{answered}");
            answered
        } else {
            let answered = recv_until(&mut peer, |m| m["id"] == 2 || m["method"] == "roots/list").await;
            assert_eq!(answered["id"], 2, "a client that declared no roots is not asked: {answered}");
            answered
        };
        assert!(answered.get("result").is_some(), "{answered}");
        assert_eq!(peer.finish().await, Some(0));
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test(flavor = "multi_thread")]
async fn filters_renames_and_prefixes_choose_what_each_server_shows() {
    let dir = std::env::temp_dir().join(format!("mcp-gateway-shown-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let example = workspace_binary("mcp-example-server", "mcp-example-server");
    let config = json!({"mcpServers": {
        "a": {"command": example, "prefix": "never", "tools": {"deny": ["echo"]}, "rename": {"add": "plus"}},
        "b": {"command": example, "tools": {"allow": ["echo", "add"]}},
        "c": {"command": example, "prefix": "on-collision", "tools": {"allow": ["add", "weather"]}},
        "d": {"command": example, "prefix": "never", "tools": {"allow": ["weather"]}}
    }});
    let file = dir.join("config.json");
    std::fs::write(&file, config.to_string()).unwrap();
    let log = dir.join("stderr.log");
    let mut command = tokio::process::Command::new(workspace_binary("mcp-bridge-cli", "mcp-bridge"));
    command.args(["--config", file.to_str().unwrap()]).stderr(std::fs::File::create(&log).unwrap());
    let mut peer = RawPeer::start(command);
    legacy_initialize(&mut peer, json!({})).await;
    peer.send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#).await;

    let names = tool_names(&mut peer, 1).await;
    for shown in ["plus", "weather", "slow", "b__echo", "b__add", "add", "c__weather"] {
        assert!(names.iter().any(|n| n == shown), "{shown} in {names:?}");
    }
    for hidden in ["echo", "a__echo", "add_", "b__weather", "c__echo", "d__weather"] {
        assert!(!names.iter().any(|n| n == hidden), "{hidden} not in {names:?}");
    }
    assert_eq!(names.iter().filter(|n| *n == "weather").count(), 1);
    assert_eq!(text(&call(&mut peer, 2, "plus", json!({"a": 2, "b": 3})).await), "5");
    assert_eq!(text(&call(&mut peer, 3, "b__echo", json!({"text": "hi"})).await), "hi");
    for (id, denied) in [(4, "echo"), (5, "b__weather"), (6, "a__echo")] {
        let refused = call(&mut peer, id, denied, json!({"text": "x"})).await;
        assert!(refused.get("error").is_some() || refused["result"]["isError"] == true, "{denied}: {refused}");
    }
    assert_eq!(peer.finish().await, Some(0));
    let logged = std::fs::read_to_string(&log).unwrap();
    assert!(logged.contains(r#"servers "a" and "d" both show the tool "weather""#), "{logged}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// `--tools-allow` and `--tools-deny` for the one server of the stdio form,
/// as a `tools` filter beside a server in --config: what is hidden is
/// neither listed nor callable.
#[tokio::test(flavor = "multi_thread")]
async fn the_one_servers_tools_are_filtered_by_the_tools_flags() {
    let example = workspace_binary("mcp-example-server", "mcp-example-server");
    let mut command = tokio::process::Command::new(workspace_binary("mcp-bridge-cli", "mcp-bridge"));
    command.args(["--tools-allow", "a*", "--tools-allow", "echo", "--tools-deny", "ask_*", "--"]).arg(&example);
    let mut peer = RawPeer::start(command);
    legacy_initialize(&mut peer, json!({})).await;
    peer.send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#).await;
    let mut names = tool_names(&mut peer, 1).await;
    names.sort_unstable();
    assert_eq!(names, ["add", "echo"]);
    assert_eq!(text(&call(&mut peer, 2, "add", json!({"a": 2, "b": 3})).await), "5");
    for (id, hidden) in [(3, "ask_name"), (4, "weather")] {
        let refused = call(&mut peer, id, hidden, json!({})).await;
        assert!(
            refused["error"]["message"].as_str().is_some_and(|m| m.contains("Unknown tool")),
            "{hidden}: {refused}"
        );
    }
    assert_eq!(peer.finish().await, Some(0));

    // The same through --listen, to a 2026-07-28 client.
    let (mut bridge, url) = test_support::listening_bridge(
        env!("CARGO_BIN_EXE_mcp-bridge"),
        &["--tools-deny", "add", "--", example.to_str().unwrap()],
    )
    .await;
    let options = mcp_bridge_sdk::ClientOptions::new("pinned", "1").with_era(mcp_bridge_sdk::client::Era::Modern);
    let transport =
        mcp_bridge_sdk::transport::http::connect(mcp_bridge_sdk::transport::http::HttpConfig::new(&url)).unwrap();
    let client = mcp_bridge_sdk::Client::new(options, transport);
    let o = mcp_bridge_sdk::RequestOptions::default();
    let listed = client.list_tools(None, &o).await.unwrap();
    assert!(listed.tools.iter().all(|t| t.name != "add") && listed.tools.iter().any(|t| t.name == "echo"));
    let refused = client.call_tool("add", json!({"a": 1, "b": 1}), &o).await.unwrap_err();
    assert!(refused.to_string().contains("Unknown tool: add"), "{refused}");
    bridge.start_kill().unwrap();
    bridge.wait().await.unwrap();
}

#[test]
fn the_tools_flags_and_a_config_file_do_not_go_together() {
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_mcp-bridge"))
        .args(["--config", "x.json", "--tools-deny", "add"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("--tools-deny"));
}

/// Writes `config` to `file` as an editor saves: a new file renamed over
/// the old one.
fn save(file: &Path, config: &Value) {
    let temporary = file.with_extension("json.tmp");
    std::fs::write(&temporary, config.to_string()).unwrap();
    std::fs::rename(&temporary, file).unwrap();
}

/// The `--config` file is followed: a saved change starts and stops the
/// servers it adds and removes, leaves the others running (their state
/// kept), re-lists one whose filter changed, and the client hears
/// `list_changed`; a broken version is refused in the log and changes
/// nothing.
#[tokio::test(flavor = "multi_thread")]
async fn a_saved_change_of_the_config_file_is_applied_and_a_broken_one_refused() {
    let dir = test_support::ScratchDir::new("gateway-reload");
    let example = workspace_binary("mcp-example-server", "mcp-example-server");
    let mark = |name: &str| format!("{name}-{}", std::process::id());
    let server = |name: &str| json!({"command": example, "env": {"GATEWAY_TEST_MARK": mark(name)}});
    let file = dir.path().join("config.json");
    save(&file, &json!({"mcpServers": {"kept": server("kept"), "gone": server("gone")}}));
    let log = dir.path().join("stderr.log");
    let mut command = tokio::process::Command::new(workspace_binary("mcp-bridge-cli", "mcp-bridge"));
    command.args(["--config", file.to_str().unwrap()]).stderr(std::fs::File::create(&log).unwrap());
    let mut peer = RawPeer::start(command);
    legacy_initialize(&mut peer, json!({})).await;
    peer.send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#).await;
    let logged = || std::fs::read_to_string(&log).unwrap_or_default();
    test_support::until("the file watched", || logged().contains("watched")).await;
    call(&mut peer, 1, "kept__toggle_bonus", json!({})).await;
    recv_until(&mut peer, |m| m["method"] == "notifications/tools/list_changed").await;
    let kept = processes_marked(&format!("GATEWAY_TEST_MARK={}", mark("kept")));
    assert_eq!(kept.len(), 1, "{kept:?}");

    save(&file, &json!({"mcpServers": {"kept": server("kept"), "new": server("new")}}));
    let mut id = 10;
    let names = loop {
        recv_until(&mut peer, |m| m["method"] == "notifications/tools/list_changed").await;
        id += 1;
        let names = tool_names(&mut peer, id).await;
        if names.iter().any(|n| n == "new__echo") && !names.iter().any(|n| n.starts_with("gone__")) {
            break names;
        }
    };
    assert!(names.iter().any(|n| n == "kept__bonus"), "the kept server's state is kept: {names:?}");
    assert_eq!(processes_marked(&format!("GATEWAY_TEST_MARK={}", mark("kept"))), kept, "the same process");
    test_support::until("the removed server's process ended", || {
        processes_marked(&format!("GATEWAY_TEST_MARK={}", mark("gone"))).is_empty()
    })
    .await;
    test_support::until("the change logged", || logged().contains("applied: added new; removed gone")).await;

    std::fs::write(&file, r#"{"mcpServers": {"kept": {"comand": "typo"}}}"#).unwrap();
    test_support::until("the broken file refused", || logged().contains("not applied")).await;
    assert!(logged().contains("comand"), "the reason is named: {}", logged());
    assert_eq!(text(&call(&mut peer, 50, "new__echo", json!({"text": "still"})).await), "still");

    let mut filtered = server("new");
    filtered["tools"] = json!({"deny": ["echo"]});
    save(&file, &json!({"mcpServers": {"kept": server("kept"), "new": filtered}}));
    loop {
        recv_until(&mut peer, |m| m["method"] == "notifications/tools/list_changed").await;
        id += 1;
        if !tool_names(&mut peer, id).await.iter().any(|n| n == "new__echo") {
            break;
        }
    }
    let refused = call(&mut peer, 60, "new__echo", json!({"text": "x"})).await;
    assert!(refused.get("error").is_some(), "{refused}");
    assert_eq!(peer.finish().await, Some(0));
}

/// The bytes of the `tools/list` result a legacy client gets now.
async fn tools_list_bytes(peer: &mut RawPeer, id: i64) -> usize {
    peer.send(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/list"}).to_string()).await;
    recv_until(peer, |m| m["id"] == id).await.get("result").map_or(0, |result| result.to_string().len())
}

/// `"discovery": "progressive"`: the list shows the gateway's
/// `search_tools` and `call_tool` and the pinned tools; a client finds a
/// tool it was never listed and calls it, by its name or through
/// `call_tool` (an input request of its server reaching the client through
/// it); the file switched back to full discovery lists everything again.
#[tokio::test(flavor = "multi_thread")]
async fn progressive_discovery_lists_a_few_tools_and_every_tool_stays_callable() {
    let dir = test_support::ScratchDir::new("gateway-progressive");
    let example = workspace_binary("mcp-example-server", "mcp-example-server");
    let file = dir.path().join("config.json");
    let servers = json!({"notes": {"command": example, "pinned": ["echo"]}, "more": {"command": example}});
    save(&file, &json!({"discovery": "progressive", "mcpServers": servers}));
    let mut peer =
        RawPeer::spawn(workspace_binary("mcp-bridge-cli", "mcp-bridge"), &["--config", file.to_str().unwrap()]);
    legacy_initialize(&mut peer, json!({"elicitation": {}})).await;
    peer.send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#).await;

    let mut names = tool_names(&mut peer, 1).await;
    names.sort();
    assert_eq!(names, ["call_tool", "notes__echo", "search_tools"]);
    let progressive_bytes = tools_list_bytes(&mut peer, 2).await;

    let found = call(&mut peer, 3, "search_tools", json!({"query": "add two numbers", "limit": 3})).await;
    let tools = found["result"]["structuredContent"]["tools"].as_array().cloned().unwrap_or_default();
    let add = tools.iter().find(|t| t["name"] == "more__add").unwrap_or_else(|| panic!("{found}"));
    assert!(add["inputSchema"]["properties"]["a"].is_object(), "{add}");
    assert!(tools.len() <= 3, "{found}");

    let sum = call(&mut peer, 4, "more__add", json!({"a": 2, "b": 3})).await;
    assert_eq!(sum["result"]["structuredContent"]["sum"], 5.0, "called by its name though never listed: {sum}");
    let sum = call(&mut peer, 5, "call_tool", json!({"name": "notes__add", "arguments": {"a": 1, "b": 2}})).await;
    assert_eq!(sum["result"]["structuredContent"]["sum"], 3.0, "{sum}");
    let unknown = call(&mut peer, 6, "call_tool", json!({"name": "nowhere__add"})).await;
    assert!(unknown.get("error").is_some(), "{unknown}");

    // A server's input request reaches the client through call_tool.
    let request = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
        "params": {"name": "call_tool", "arguments": {"name": "notes__ask_name"}}});
    peer.send(&request.to_string()).await;
    let asked = recv_until(&mut peer, |m| m["method"] == "elicitation/create").await;
    let answer =
        json!({"jsonrpc": "2.0", "id": asked["id"], "result": {"action": "accept", "content": {"name": "Ada"}}});
    peer.send(&answer.to_string()).await;
    let greeted = recv_until(&mut peer, |m| m["id"] == 7).await;
    assert!(text(&greeted).contains("Ada"), "{greeted}");

    // Back to full discovery: every tool listed, the gateway's own gone.
    save(&file, &json!({"mcpServers": servers}));
    let mut id = 10;
    let full = loop {
        recv_until(&mut peer, |m| m["method"] == "notifications/tools/list_changed").await;
        id += 1;
        let names = tool_names(&mut peer, id).await;
        if names.iter().any(|n| n == "more__add") && !names.iter().any(|n| n == "search_tools") {
            break names;
        }
    };
    assert!(full.len() > 20, "{full:?}");
    let full_bytes = tools_list_bytes(&mut peer, 50).await;
    eprintln!(
        "tools/list of two mcp-example-servers: full {full_bytes} bytes (~{} tokens), progressive {progressive_bytes} bytes (~{} tokens)",
        full_bytes / 4,
        progressive_bytes / 4
    );
    assert!(progressive_bytes * 4 < full_bytes, "progressive {progressive_bytes} B against full {full_bytes} B");
    assert_eq!(peer.finish().await, Some(0));
}
