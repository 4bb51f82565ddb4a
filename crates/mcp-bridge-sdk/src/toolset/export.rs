//! A toolset's tools in the shapes LLM APIs take them: OpenAI's function
//! tools (Chat Completions) and Anthropic's tools (Messages). No I/O here.

use mcp_bridge_protocol::types::Tool;
use serde_json::{Map, Value, json};

/// The tool's input schema as an object schema (the APIs want `type:
/// object` at the top; MCP tools have it, a sloppy server may not).
fn object_schema(tool: &Tool) -> Value {
    let mut schema: Map<String, Value> = tool.input_schema.clone();
    schema.entry("type").or_insert_with(|| json!("object"));
    Value::Object(schema)
}

/// The description the model reads: the tool's, else its title.
fn description(tool: &Tool) -> Option<&str> {
    tool.description.as_deref().or(tool.title.as_deref())
}

/// OpenAI's function tool: `{"type": "function", "function": {"name",
/// "description", "parameters"}}`.
pub(super) fn openai(tool: &Tool) -> Value {
    let mut function = json!({"name": tool.name, "parameters": object_schema(tool)});
    if let Some(text) = description(tool) {
        function["description"] = json!(text);
    }
    json!({"type": "function", "function": function})
}

/// Anthropic's tool: `{"name", "description", "input_schema"}`.
pub(super) fn anthropic(tool: &Tool) -> Value {
    let mut definition = json!({"name": tool.name, "input_schema": object_schema(tool)});
    if let Some(text) = description(tool) {
        definition["description"] = json!(text);
    }
    definition
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_shapes_carry_the_name_description_and_schema() {
        let tool: Tool = serde_json::from_value(json!({
            "name": "weather__forecast", "description": "The forecast",
            "inputSchema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
        }))
        .unwrap();
        assert_eq!(
            openai(&tool),
            json!({"type": "function", "function": {"name": "weather__forecast", "description": "The forecast",
                "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}})
        );
        assert_eq!(anthropic(&tool)["input_schema"]["required"], json!(["city"]));
        let bare: Tool = serde_json::from_value(json!({"name": "t", "title": "T", "inputSchema": {}})).unwrap();
        assert_eq!(anthropic(&bare), json!({"name": "t", "description": "T", "input_schema": {"type": "object"}}));
    }
}
