//! The example server's extensions, through the SDK's client over real
//! stdio: its task tool (Tasks), its tour skill (Skills), and its weather
//! view (MCP Apps).

use std::sync::Arc;

use mcp_bridge_protocol::types::{ContentBlock, ElicitResult, SkillResources};
use mcp_bridge_sdk::client::ToolOutcome;
use mcp_bridge_sdk::transport::stdio::{StdioCommand, spawn};
use mcp_bridge_sdk::{Client, ClientOptions, RequestOptions, apps};
use serde_json::json;

const SERVER: &str = env!("CARGO_BIN_EXE_mcp-example-server");

/// A client that declares the Tasks extension, MCP Apps and form
/// elicitation, and accepts every confirmation.
fn client() -> Client {
    let mut options = ClientOptions::new("extensions-test", "1");
    options.capabilities = serde_json::from_value(json!({"elicitation": {},
        "extensions": {"io.modelcontextprotocol/tasks": {}}}))
    .unwrap();
    apps::declare(&mut options.capabilities);
    options.hooks.elicit_form = Some(Arc::new(|_params| {
        Box::pin(async {
            Ok(serde_json::from_value::<ElicitResult>(json!({"action": "accept", "content": {"run": true}})).unwrap())
        })
    }));
    Client::new(options, spawn(StdioCommand::new(SERVER)).unwrap())
}

fn text(content: &[ContentBlock]) -> String {
    match &content[0] {
        ContentBlock::Text(t) => t.text.clone(),
        other => panic!("not text: {other:?}"),
    }
}

#[tokio::test]
async fn the_example_server_offers_tasks_skills_and_a_view() {
    let client = client();
    let o = RequestOptions::default();
    let extensions = client.discover(&o).await.unwrap().capabilities.extensions.unwrap();
    assert!(extensions.contains_key("io.modelcontextprotocol/tasks"));
    assert_eq!(extensions["io.modelcontextprotocol/skills"], json!({"directoryRead": true}));

    // Tasks: a task to poll, and a confirmation through tasks/update.
    let outcome = client.call_tool_or_task("long_job", json!({"seconds": 0.2}), &o).await.unwrap();
    let ToolOutcome::Task(task) = outcome else { panic!("a task was expected: {outcome:?}") };
    let done = client.await_task(&task.task_id, &o).await.unwrap();
    assert_eq!(text(&mcp_bridge_sdk::client::task_result(&done).unwrap().content), "job done after 0.2 s");
    let confirmed = client.call_tool("long_job", json!({"seconds": 0, "confirm": true}), &o).await.unwrap();
    assert_eq!(text(&confirmed.content), "job done after 0 s");

    // Skills: the tour, verified file by file.
    let skills = client.list_all_skills(&o).await.unwrap();
    let tour = skills.iter().find(|s| s.name() == Some("example-tour")).expect("the tour skill");
    let SkillResources::Listed(files) = &tour.resources else { panic!() };
    for file in files {
        let bytes = client.read_skill_file(tour, &file.uri, &o).await.unwrap();
        assert!(String::from_utf8(bytes).unwrap().contains("long_job"));
    }
    let root = client.read_directory("skill://example-tour", None, &o).await.unwrap();
    let names: Vec<&str> = root.resources.iter().map(|r| r.name.as_str()).collect();
    assert_eq!(names, ["example-tour", "reference"]);

    // Apps: the weather tool's view.
    let tools = client.list_all_tools(&o).await.unwrap();
    let weather = tools.iter().find(|t| t.name == "weather").unwrap();
    let uri = apps::tool_ui(weather).unwrap().resource_uri.unwrap();
    let view = client.read_ui_resource(&uri, &o).await.unwrap();
    assert!(view.html.starts_with("<!DOCTYPE html>"));
    let forecast = client.call_tool("weather", json!({"city": "Lyon"}), &o).await.unwrap();
    assert_eq!(forecast.structured_content.unwrap()["city"], "Lyon");
    client.close().await;
}
