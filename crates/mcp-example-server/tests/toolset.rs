//! The SDK's `Toolset` over three real servers at once, all children on
//! stdio: `mcp-example-server` (2026-07-28), the reference
//! `server-everything` (TypeScript SDK 1.x, 2025-11-25 only) and a Python
//! `mcp` 2.x server: one list of tools named
//! `<server>__<tool>`, calls routed to each, the definitions in the shapes
//! LLM APIs take (checked with the vendors' own SDK types); a list change
//! refreshes its server's part; a server killed mid-session leaves the toolset (its
//! tools vanish, the other's go on working) and comes back by itself.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcp_bridge_protocol::types::{CallToolResult, ContentBlock};
use mcp_bridge_sdk::toolset::{Toolset, ToolsetOptions, names};
use mcp_bridge_sdk::transport::stdio::{StdioCommand, spawn};
use mcp_bridge_sdk::{Client, ClientOptions, RequestOptions};
use serde_json::json;

fn text_of(result: &CallToolResult) -> String {
    result
        .content
        .iter()
        .filter_map(|c| match c {
            ContentBlock::Text(t) => Some(t.text.clone()),
            _ => None,
        })
        .collect()
}

/// Waits for the toolset's tools to satisfy `wanted`, on its change events.
async fn tools_when(toolset: &Toolset, wanted: impl Fn(&[String]) -> bool) -> Vec<String> {
    let mut changes = toolset.changes();
    let found = tokio::time::timeout(Duration::from_secs(30), async {
        loop {
            let names: Vec<String> = toolset.tools().into_iter().map(|t| t.name).collect();
            if wanted(&names) {
                return names;
            }
            changes.changed().await.expect("the toolset lives");
        }
    });
    found.await.expect("the tools changed as expected within 30 s")
}

#[tokio::test(flavor = "multi_thread")]
async fn three_servers_of_three_sdks_are_one_toolset_and_a_killed_one_comes_back() {
    // Every client the toolset made for `notes`, to kill its child.
    let made: Arc<Mutex<Vec<Client>>> = Arc::default();
    let notes_clients = made.clone();
    let options = ToolsetOptions::default().with_first_retry(Duration::from_millis(100));
    let started = std::time::Instant::now();
    let toolset = Toolset::builder()
        .server("notes", move || {
            let made = notes_clients.clone();
            async move {
                let transport = spawn(StdioCommand::new(env!("CARGO_BIN_EXE_mcp-example-server")))?;
                let client = Client::new(ClientOptions::new("toolset-test", "1"), transport);
                made.lock().unwrap().push(client.clone());
                Ok(client)
            }
        })
        .server("everything", || async {
            let mut command = StdioCommand::new("node");
            command.args = vec![test_support::server_everything().into(), "stdio".into()];
            Ok(Client::new(ClientOptions::new("toolset-test", "1"), spawn(command)?))
        })
        .server("python", || async {
            let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/python_server.py");
            let command = StdioCommand::new(test_support::python_peer()).args([script]);
            Ok(Client::new(ClientOptions::new("toolset-test", "1"), spawn(command)?))
        })
        .options(options)
        .start()
        .await;
    eprintln!("toolset: three servers started in {} ms", started.elapsed().as_millis());

    let states = toolset.servers();
    assert!(states.iter().all(|s| s.available && s.tools > 0), "{states:?}");
    let names: Vec<String> = toolset.tools().into_iter().map(|t| t.name).collect();
    assert!(names.contains(&"notes__echo".to_owned()) && names.contains(&"everything__echo".to_owned()), "{names:?}");
    assert!(names.iter().all(|n| names::is_valid(n)), "{names:?}");
    assert_eq!(names.len(), states.iter().map(|s| s.tools).sum::<usize>());

    let o = RequestOptions::default();
    let notes = toolset.call("notes__echo", json!({"text": "from the toolset"}), &o).await.unwrap();
    assert_eq!(text_of(&notes), "from the toolset");
    let everything = toolset.call("everything__echo", json!({"message": "legacy too"}), &o).await.unwrap();
    assert!(text_of(&everything).contains("legacy too"), "{everything:?}");
    let python = toolset.call("python__shout", json!({"text": "python"}), &o).await.unwrap();
    assert_eq!(text_of(&python), "PYTHON");
    let unknown = toolset.call("nobody__echo", json!({}), &o).await.unwrap_err();
    assert!(unknown.to_string().contains("-32602"), "{unknown}");

    // The definitions for LLM APIs: one per tool, with the toolset's names.
    let openai = toolset.openai_tools();
    let anthropic = toolset.anthropic_tools();
    assert_eq!((openai.len(), anthropic.len()), (names.len(), names.len()));
    assert!(openai.iter().all(|t| t["type"] == "function" && t["function"]["parameters"]["type"] == "object"));
    assert!(anthropic.iter().any(|t| t["name"] == "notes__echo" && t["input_schema"]["type"] == "object"));
    // ... as the vendors' own SDKs type them; one broken on purpose is caught.
    let checked = test_support::validate_llm_tools(&openai, &anthropic).unwrap();
    assert!(checked.starts_with("valid: "), "{checked}");
    let mut broken = anthropic.clone();
    broken[0]["inputSchema"] = broken[0]["input_schema"].take();
    let refused = test_support::validate_llm_tools(&openai, &broken).unwrap_err();
    assert!(refused.contains("input_schema"), "{refused}");

    // Prompts and resources keep their servers.
    assert!(toolset.prompts().iter().any(|p| p.name.starts_with("everything__")), "{:?}", toolset.prompts());
    let resources = toolset.resources();
    let (owner, resource) = resources.iter().find(|(owner, _)| owner == "notes").expect("a resource of notes");
    assert_eq!(owner, "notes");
    assert!(!toolset.read_resource(&resource.uri, &o).await.unwrap().contents.is_empty());

    // A list change of one server refreshes its part.
    toolset.call("notes__toggle_bonus", json!({}), &o).await.unwrap();
    tools_when(&toolset, |names| names.iter().any(|n| n == "notes__bonus")).await;
    assert!(toolset.tools().iter().any(|t| t.name == "everything__echo"), "the other's part stays");

    // The notes server dies: its tools vanish, everything's go on.
    let first = made.lock().unwrap()[0].clone();
    let pid = first.process().expect("a child").id();
    std::process::Command::new("kill").args(["-9", &pid.to_string()]).status().unwrap();
    tools_when(&toolset, |names| !names.iter().any(|n| n.starts_with("notes__"))).await;
    let state = toolset.servers().into_iter().find(|s| s.name == "notes").unwrap();
    assert!(!state.available && state.problem.is_some(), "{state:?}");
    let again = toolset.call("everything__echo", json!({"message": "still here"}), &o).await.unwrap();
    assert!(text_of(&again).contains("still here"));

    // ... and comes back by itself: a new child, its tools again.
    tools_when(&toolset, |names| names.iter().any(|n| n == "notes__echo")).await;
    assert!(made.lock().unwrap().len() >= 2, "a new client for the new child");
    let back = toolset.call("notes__echo", json!({"text": "back"}), &o).await.unwrap();
    assert_eq!(text_of(&back), "back");
    toolset.close().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_claude_desktop_configuration_becomes_a_toolset_and_a_broken_entry_stays_out() {
    use mcp_bridge_sdk::toolset::config;
    let text = json!({"mcpServers": {
        "notes": {"command": env!("CARGO_BIN_EXE_mcp-example-server"), "env": {"NOTES_LABEL": "${env:TOOLSET_TEST_LABEL}"}},
        "missing": {"command": "/nonexistent/mcp-server"},
        "off": {"command": "/nonexistent/other", "disabled": true}
    }})
    .to_string();
    let entries = config::parse(&text, |name| (name == "TOOLSET_TEST_LABEL").then(|| "from-env".to_owned())).unwrap();
    assert_eq!(entries.iter().map(|e| e.name.as_str()).collect::<Vec<_>>(), ["missing", "notes"]);
    let options = ToolsetOptions::default().with_first_retry(Duration::from_secs(3600));
    let toolset =
        Toolset::builder().configured(entries, &ClientOptions::new("toolset-test", "1")).options(options).start().await;
    let states = toolset.servers();
    let missing = states.iter().find(|s| s.name == "missing").unwrap();
    assert!(!missing.available && missing.problem.as_deref().is_some_and(|p| !p.is_empty()), "{missing:?}");
    assert!(states.iter().any(|s| s.name == "notes" && s.available), "{states:?}");
    let echoed = toolset.call("notes__echo", json!({"text": "configured"}), &RequestOptions::default()).await.unwrap();
    assert_eq!(text_of(&echoed), "configured");
    toolset.close().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_running_toolset_follows_a_new_configuration_and_keeps_the_servers_it_did_not_change() {
    use mcp_bridge_sdk::toolset::config;
    let server = env!("CARGO_BIN_EXE_mcp-example-server");
    let file =
        |servers: serde_json::Value| config::parse(&json!({"mcpServers": servers}).to_string(), |_| None).unwrap();
    let options = ClientOptions::new("toolset-test", "1");
    let entries = file(json!({"kept": {"command": server}, "gone": {"command": server}}));
    let toolset = Toolset::builder().configured(entries, &options).start().await;
    // State of the kept server's own: it lives as long as its process.
    toolset.call("kept__toggle_bonus", json!({}), &RequestOptions::default()).await.unwrap();
    tools_when(&toolset, |names| names.iter().any(|n| n == "kept__bonus")).await;

    let changed = toolset
        .reconfigure(file(json!({"kept": {"command": server}, "new": {"command": server}})), |_| options.clone())
        .await;
    assert_eq!((changed.added, changed.removed), (vec!["new".to_owned()], vec!["gone".to_owned()]));
    let names = tools_when(&toolset, |names| names.iter().any(|n| n == "new__echo")).await;
    assert!(!names.iter().any(|n| n.starts_with("gone__")), "{names:?}");
    assert!(names.iter().any(|n| n == "kept__bonus"), "the kept server was not started again: {names:?}");
    let gone = toolset.call("gone__echo", json!({"text": "x"}), &RequestOptions::default()).await.unwrap_err();
    assert!(gone.to_string().contains("Unknown tool"), "{gone}");
    assert_eq!(toolset.servers().iter().map(|s| s.name.as_str()).collect::<Vec<_>>(), ["kept", "new"]);

    // Only what is shown changes: the same connection, re-listed.
    let shown = json!({"kept": {"command": server, "prefix": "never", "tools": {"deny": ["echo"]}}, "new": {"command": server}});
    let changed = toolset.reconfigure(file(shown), |_| options.clone()).await;
    assert_eq!(changed.reshaped, ["kept"]);
    let names = tools_when(&toolset, |names| names.iter().any(|n| n == "bonus")).await;
    assert!(!names.iter().any(|n| n == "echo" || n.starts_with("kept__")), "{names:?}");
    let added = toolset.call("add", json!({"a": 2, "b": 3}), &RequestOptions::default()).await.unwrap();
    assert_eq!(text_of(&added), "5");

    // Another command: the server is started again (its state gone).
    let moved = json!({"kept": {"command": server, "env": {"TOOLSET_TEST": "moved"}}, "new": {"command": server}});
    let changed = toolset.reconfigure(file(moved), |_| options.clone()).await;
    assert_eq!(changed.restarted, ["kept"]);
    let names = tools_when(&toolset, |names| names.iter().any(|n| n == "kept__echo")).await;
    assert!(!names.iter().any(|n| n == "kept__bonus"), "a new process: {names:?}");
    toolset.close().await;
}
