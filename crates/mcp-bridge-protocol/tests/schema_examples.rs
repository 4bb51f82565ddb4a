//! Ties the wire types to the official schemas: every official example of
//! revision 2026-07-28 is read into our type of the same name, written back,
//! compared with the original as JSON, and validated against the schema's
//! definition of that name. The legacy (2025-11-25) types get the same check
//! against hand-written fixtures in `tests/fixtures/2025-11-25/`.
//!
//! An example folder without a type in the table is a failure, not a skip.

use std::path::Path;

use mcp_bridge_protocol::method::envelopes::*;
use mcp_bridge_protocol::types::*;
use mcp_bridge_protocol::{ErrorObject, JsonRpcErrorResponse, legacy, method};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use test_support::{Schema, read_json, spec_dir};

/// Reads `value` as a `T` and writes it back.
type RoundTrip = fn(&Value) -> Result<Value, String>;

fn round_trip<T: Serialize + DeserializeOwned>(value: &Value) -> Result<Value, String> {
    let typed: T = serde_json::from_value(value.clone()).map_err(|e| format!("read: {e}"))?;
    serde_json::to_value(&typed).map_err(|e| format!("write: {e}"))
}

/// Our type for each schema type name that has official examples.
fn modern_type(name: &str) -> Option<RoundTrip> {
    Some(match name {
        "AudioContent" => round_trip::<AudioContent>,
        "BlobResourceContents" => round_trip::<BlobResourceContents>,
        "BooleanSchema" => round_trip::<BooleanSchema>,
        "CallToolRequest" => round_trip::<CallToolRequest>,
        "CallToolRequestParams" => round_trip::<CallToolRequestParams>,
        "CallToolResult" => round_trip::<CallToolResult>,
        "CallToolResultResponse" => round_trip::<CallToolResultResponse>,
        "CancelledNotification" => round_trip::<CancelledNotification>,
        "CancelledNotificationParams" => round_trip::<CancelledNotificationParams>,
        "ClientCapabilities" => round_trip::<ClientCapabilities>,
        "CompleteRequest" => round_trip::<CompleteRequest>,
        "CompleteRequestParams" => round_trip::<CompleteRequestParams>,
        "CompleteResult" => round_trip::<CompleteResult>,
        "CompleteResultResponse" => round_trip::<CompleteResultResponse>,
        "CreateMessageRequest" => round_trip::<CreateMessageRequest>,
        "CreateMessageRequestParams" => round_trip::<CreateMessageRequestParams>,
        "CreateMessageResult" => round_trip::<CreateMessageResult>,
        "DiscoverRequest" => round_trip::<DiscoverRequest>,
        "DiscoverResult" => round_trip::<DiscoverResult>,
        "DiscoverResultResponse" => round_trip::<DiscoverResultResponse>,
        "ElicitRequest" => round_trip::<ElicitRequest>,
        "ElicitRequestFormParams" => round_trip::<ElicitRequestFormParams>,
        "ElicitRequestURLParams" => round_trip::<ElicitRequestUrlParams>,
        "ElicitResult" => round_trip::<ElicitResult>,
        "EmbeddedResource" => round_trip::<EmbeddedResource>,
        "GetPromptRequest" => round_trip::<GetPromptRequest>,
        "GetPromptRequestParams" => round_trip::<GetPromptRequestParams>,
        "GetPromptResult" => round_trip::<GetPromptResult>,
        "GetPromptResultResponse" => round_trip::<GetPromptResultResponse>,
        "HeaderMismatchError" => round_trip::<JsonRpcErrorResponse>,
        "ImageContent" => round_trip::<ImageContent>,
        "InputRequests" => round_trip::<InputRequests>,
        "InputRequiredResult" => round_trip::<InputRequiredResult>,
        "InputResponses" => round_trip::<InputResponses>,
        "InternalError" => round_trip::<ErrorObject>,
        "InvalidParamsError" => round_trip::<ErrorObject>,
        "ListPromptsRequest" => round_trip::<ListPromptsRequest>,
        "ListPromptsResult" => round_trip::<ListPromptsResult>,
        "ListPromptsResultResponse" => round_trip::<ListPromptsResultResponse>,
        "ListResourceTemplatesRequest" => round_trip::<ListResourceTemplatesRequest>,
        "ListResourceTemplatesResult" => round_trip::<ListResourceTemplatesResult>,
        "ListResourceTemplatesResultResponse" => round_trip::<ListResourceTemplatesResultResponse>,
        "ListResourcesRequest" => round_trip::<ListResourcesRequest>,
        "ListResourcesResult" => round_trip::<ListResourcesResult>,
        "ListResourcesResultResponse" => round_trip::<ListResourcesResultResponse>,
        "ListRootsRequest" => round_trip::<ListRootsRequest>,
        "ListRootsResult" => round_trip::<ListRootsResult>,
        "ListToolsRequest" => round_trip::<ListToolsRequest>,
        "ListToolsResult" => round_trip::<ListToolsResult>,
        "ListToolsResultResponse" => round_trip::<ListToolsResultResponse>,
        "LoggingMessageNotification" => round_trip::<LoggingMessageNotification>,
        "LoggingMessageNotificationParams" => round_trip::<LoggingMessageNotificationParams>,
        "MethodNotFoundError" => round_trip::<ErrorObject>,
        "MissingRequiredClientCapabilityError" => round_trip::<JsonRpcErrorResponse>,
        "ModelPreferences" => round_trip::<ModelPreferences>,
        "NumberSchema" => round_trip::<NumberSchema>,
        "PaginatedRequestParams" => round_trip::<PaginatedRequestParams>,
        "ParseError" => round_trip::<ErrorObject>,
        "ProgressNotification" => round_trip::<ProgressNotification>,
        "ProgressNotificationParams" => round_trip::<ProgressNotificationParams>,
        "PromptListChangedNotification" => round_trip::<PromptListChangedNotification>,
        "ReadResourceRequest" => round_trip::<ReadResourceRequest>,
        "ReadResourceResult" => round_trip::<ReadResourceResult>,
        "ReadResourceResultResponse" => round_trip::<ReadResourceResultResponse>,
        "Resource" => round_trip::<Resource>,
        "ResourceLink" => round_trip::<ResourceLink>,
        "ResourceListChangedNotification" => round_trip::<ResourceListChangedNotification>,
        "ResourceUpdatedNotification" => round_trip::<ResourceUpdatedNotification>,
        "ResourceUpdatedNotificationParams" => round_trip::<ResourceUpdatedNotificationParams>,
        "Root" => round_trip::<Root>,
        "SamplingMessage" => round_trip::<SamplingMessage>,
        "ServerCapabilities" => round_trip::<ServerCapabilities>,
        "StringSchema" => round_trip::<StringSchema>,
        "SubscriptionsAcknowledgedNotification" => round_trip::<SubscriptionsAcknowledgedNotification>,
        "SubscriptionsListenRequest" => round_trip::<SubscriptionsListenRequest>,
        "SubscriptionsListenResult" => round_trip::<SubscriptionsListenResult>,
        "SubscriptionsListenResultResponse" => round_trip::<SubscriptionsListenResultResponse>,
        "TextContent" => round_trip::<TextContent>,
        "TextResourceContents" => round_trip::<TextResourceContents>,
        "TitledMultiSelectEnumSchema" => round_trip::<TitledMultiSelectEnumSchema>,
        "TitledSingleSelectEnumSchema" => round_trip::<TitledSingleSelectEnumSchema>,
        "Tool" => round_trip::<Tool>,
        "ToolListChangedNotification" => round_trip::<ToolListChangedNotification>,
        "ToolResultContent" => round_trip::<ToolResultContent>,
        "ToolUseContent" => round_trip::<ToolUseContent>,
        "UnsupportedProtocolVersionError" => round_trip::<JsonRpcErrorResponse>,
        "UntitledMultiSelectEnumSchema" => round_trip::<UntitledMultiSelectEnumSchema>,
        "UntitledSingleSelectEnumSchema" => round_trip::<UntitledSingleSelectEnumSchema>,
        _ => return None,
    })
}

/// Our legacy type for each 2025-11-25 schema type with a fixture.
fn legacy_type(name: &str) -> Option<RoundTrip> {
    Some(match name {
        "InitializeRequest" => round_trip::<legacy::InitializeRequest>,
        "InitializeResult" => round_trip::<legacy::InitializeResult>,
        "InitializedNotification" => round_trip::<legacy::InitializedNotification>,
        "PingRequest" => round_trip::<legacy::PingRequest>,
        "SetLevelRequest" => round_trip::<legacy::SetLevelRequest>,
        "SubscribeRequest" => round_trip::<legacy::SubscribeRequest>,
        "UnsubscribeRequest" => round_trip::<legacy::UnsubscribeRequest>,
        "ElicitRequest" => round_trip::<legacy::ElicitRequest>,
        "ElicitResult" => round_trip::<ElicitResult>,
        "CreateMessageRequest" => round_trip::<legacy::CreateMessageRequest>,
        "CreateMessageResult" => round_trip::<CreateMessageResult>,
        "ListRootsRequest" => round_trip::<legacy::ListRootsRequest>,
        "ListRootsResult" => round_trip::<ListRootsResult>,
        "EmptyResult" => round_trip::<MetaParams>,
        "ToolListChangedNotification" => round_trip::<ToolListChangedNotification>,
        "PromptListChangedNotification" => round_trip::<PromptListChangedNotification>,
        "ResourceListChangedNotification" => round_trip::<ResourceListChangedNotification>,
        "ResourceUpdatedNotification" => round_trip::<ResourceUpdatedNotification>,
        "LoggingMessageNotification" => round_trip::<LoggingMessageNotification>,
        "ProgressNotification" => round_trip::<ProgressNotification>,
        "CancelledNotification" => round_trip::<CancelledNotification>,
        "RootsListChangedNotification" => round_trip::<method::Notification<method::RootsListChanged>>,
        "URLElicitationRequiredError" => round_trip::<JsonRpcErrorResponse>,
        "JSONRPCErrorResponse" => round_trip::<JsonRpcErrorResponse>,
        _ => return None,
    })
}

/// Runs the check over `<dir>/<Type>/*.json`; returns (types, files) checked.
fn check_folder(dir: &Path, schema: &Schema, type_of: fn(&str) -> Option<RoundTrip>) -> (usize, usize) {
    let mut failures = Vec::new();
    let mut types = 0;
    let mut files = 0;
    let mut folders: Vec<_> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .collect();
    folders.sort();
    for folder in folders {
        let name = folder.file_name().unwrap().to_string_lossy().into_owned();
        let Some(round_trip) = type_of(&name) else {
            failures.push(format!("{name}: no type in the table"));
            continue;
        };
        let validator = schema.validator(&name);
        types += 1;
        let mut examples: Vec<_> = std::fs::read_dir(&folder).unwrap().map(|e| e.unwrap().path()).collect();
        examples.sort();
        for path in examples.into_iter().filter(|p| p.extension().is_some_and(|e| e == "json")) {
            files += 1;
            let file = format!("{name}/{}", path.file_name().unwrap().to_string_lossy());
            let original = read_json(&path);
            match round_trip(&original) {
                Err(e) => failures.push(format!("{file}: {e}")),
                Ok(written) => {
                    if written != original {
                        failures.push(format!("{file}: written back differs\n  in:  {original}\n  out: {written}"));
                    }
                    let errors: Vec<String> = validator.iter_errors(&written).map(|e| e.to_string()).collect();
                    if !errors.is_empty() {
                        failures.push(format!("{file}: output invalid: {}", errors.join("; ")));
                    }
                }
            }
        }
    }
    assert!(failures.is_empty(), "{} failure(s):\n{}", failures.len(), failures.join("\n"));
    (types, files)
}

#[test]
fn every_official_2026_example_round_trips_and_validates() {
    let schema = Schema::load("2026-07-28");
    let (types, files) = check_folder(&spec_dir("2026-07-28").join("examples"), &schema, modern_type);
    eprintln!("2026-07-28: {types} example types, {files} examples");
    assert!(types >= 88, "only {types} example types found");
}

#[test]
fn legacy_fixtures_round_trip_and_validate() {
    let schema = Schema::load("2025-11-25");
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/2025-11-25");
    let (types, files) = check_folder(&fixtures, &schema, legacy_type);
    eprintln!("2025-11-25: {types} fixture types, {files} fixtures");
    assert!(types >= 20, "only {types} legacy fixture types found");
}

/// A fixture that breaks its schema must also fail the validator, or the
/// validation above proves nothing.
#[test]
fn validator_rejects_a_broken_example() {
    let v = Schema::load("2026-07-28").validator("CallToolResult");
    assert!(v.is_valid(&serde_json::json!({"resultType":"complete","content":[]})));
    assert!(!v.is_valid(&serde_json::json!({"resultType":"complete"})));
    assert!(!v.is_valid(&serde_json::json!({"resultType":"complete","content":[{"type":"text"}]})));
}

#[test]
fn values_made_with_the_constructors_are_valid_in_both_revisions() {
    let mut schema_of_arguments = serde_json::Map::new();
    schema_of_arguments.insert("type".into(), "object".into());
    schema_of_arguments.insert("properties".into(), serde_json::json!({"text": {"type": "string"}}));
    let tool = Tool::new("echo")
        .with_title("Echo")
        .with_description("Says it back")
        .with_input_schema(schema_of_arguments)
        .with_annotations(ToolAnnotations { read_only_hint: Some(true), ..Default::default() });
    let results = [
        CallToolResult::text("hi"),
        CallToolResult::structured(serde_json::json!({"sum": 42})),
        CallToolResult::error("the database is down"),
        CallToolResult::of(vec![
            ContentBlock::image("aGk=", "image/png"),
            ContentBlock::audio("aGk=", "audio/wav"),
            ContentBlock::resource_link("note://a", "a"),
            ContentBlock::resource(ResourceContents::text("note://a", "text/plain", "a")),
            ContentBlock::resource(ResourceContents::blob("note://b", "image/png", "aGk=")),
        ]),
        CallToolResult::default(),
    ];
    let prompt = Prompt::new("greet").with_title("Greeting").with_description("Greets someone").with_arguments(vec![
        PromptArgument::new("name").with_description("Who").required(),
        PromptArgument::new("style"),
    ]);
    let filled = GetPromptResult::of(vec![PromptMessage::user("Hello"), PromptMessage::assistant("Hi")])
        .with_description("A greeting");
    for revision in ["2026-07-28", "2025-11-25"] {
        let schema = Schema::load(revision);
        let tool_value = serde_json::to_value(&tool).unwrap();
        assert_eq!(schema.errors("Tool", &tool_value), Vec::<String>::new(), "{revision}: {tool_value}");
        let bare = serde_json::to_value(Tool::new("ping")).unwrap();
        assert_eq!(schema.errors("Tool", &bare), Vec::<String>::new(), "{revision}: {bare}");
        let prompt_value = serde_json::to_value(&prompt).unwrap();
        assert_eq!(schema.errors("Prompt", &prompt_value), Vec::<String>::new(), "{revision}: {prompt_value}");
        let mut filled_value = serde_json::to_value(&filled).unwrap();
        if revision == "2025-11-25" {
            filled_value.as_object_mut().unwrap().remove("resultType");
        }
        assert_eq!(schema.errors("GetPromptResult", &filled_value), Vec::<String>::new(), "{revision}: {filled_value}");
        for result in &results {
            let mut value = serde_json::to_value(result).unwrap();
            if revision == "2025-11-25" {
                // 2025-11-25 has no resultType.
                value.as_object_mut().unwrap().remove("resultType");
            }
            assert_eq!(schema.errors("CallToolResult", &value), Vec::<String>::new(), "{revision}: {value}");
        }
    }
    let structured = serde_json::to_value(&results[1]).unwrap();
    assert_eq!(structured["structuredContent"], serde_json::json!({"sum": 42}));
    assert_eq!(structured["content"][0]["text"], r#"{"sum":42}"#, "the JSON text for clients that read only content");
    assert_eq!(serde_json::to_value(&results[2]).unwrap()["isError"], true);
}
