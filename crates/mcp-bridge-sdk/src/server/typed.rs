//! Typed tools and prompts: the arguments are a Rust type whose JSON
//! Schema is derived with `schemars`, and the handler returns anything that
//! converts into a result ([`IntoToolResult`], [`IntoPromptResult`]).
//! [`super::ServerBuilder::typed_tool`] and
//! [`super::ServerBuilder::typed_prompt`] build on the untyped
//! registrations; everything here is pure.

use std::fmt::Display;

use mcp_bridge_protocol::types::{CallToolResult, GetPromptResult, Prompt, PromptArgument, PromptMessage, Tool};
use schemars::JsonSchema;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use super::Reply;
use crate::error::HandlerError;

/// A tool result that is a value: `T` goes into `structuredContent` (and,
/// as JSON text, into the content for clients that read only that), and
/// the tool's output schema is derived from `T`. `T` must serialize as a
/// JSON object, as `structuredContent` is one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Json<T>(pub T);

/// The arguments of a tool or prompt that takes none.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Deserialize, JsonSchema)]
pub struct NoArguments {}

/// What a typed tool's handler may return: text (`String`, `&str`), a
/// [`Json`] value, a [`CallToolResult`], a [`Reply`] (to ask for input or
/// run as a task), or a `Result` of one of these whose error, shown with
/// `Display`, becomes an `isError` result for the model.
pub trait IntoToolResult {
    /// The output schema a tool returning this declares, when it has one.
    fn output_schema() -> Option<Map<String, Value>> {
        None
    }

    /// The reply sent for this value; an `Err` is a JSON-RPC error.
    fn into_tool_reply(self) -> Result<Reply<CallToolResult>, HandlerError>;
}

impl IntoToolResult for String {
    fn into_tool_reply(self) -> Result<Reply<CallToolResult>, HandlerError> {
        Ok(Reply::Complete(CallToolResult::text(self)))
    }
}

impl IntoToolResult for &str {
    fn into_tool_reply(self) -> Result<Reply<CallToolResult>, HandlerError> {
        Ok(Reply::Complete(CallToolResult::text(self)))
    }
}

impl IntoToolResult for CallToolResult {
    fn into_tool_reply(self) -> Result<Reply<CallToolResult>, HandlerError> {
        Ok(Reply::Complete(self))
    }
}

impl IntoToolResult for Reply<CallToolResult> {
    fn into_tool_reply(self) -> Result<Reply<CallToolResult>, HandlerError> {
        Ok(self)
    }
}

impl<T: Serialize + JsonSchema> IntoToolResult for Json<T> {
    fn output_schema() -> Option<Map<String, Value>> {
        Some(schema_for::<T>())
    }

    fn into_tool_reply(self) -> Result<Reply<CallToolResult>, HandlerError> {
        match serde_json::to_value(&self.0) {
            Ok(value @ Value::Object(_)) => Ok(Reply::Complete(CallToolResult::structured(value))),
            Ok(_) => Err(HandlerError::internal("a Json tool result must serialize as a JSON object")),
            Err(e) => Err(HandlerError::internal(format!("the tool result could not be serialized: {e}"))),
        }
    }
}

impl<T: IntoToolResult, E: Display> IntoToolResult for Result<T, E> {
    fn output_schema() -> Option<Map<String, Value>> {
        T::output_schema()
    }

    fn into_tool_reply(self) -> Result<Reply<CallToolResult>, HandlerError> {
        match self {
            Ok(value) => value.into_tool_reply(),
            Err(e) => Ok(Reply::Complete(CallToolResult::error(e.to_string()))),
        }
    }
}

/// What a typed prompt's handler may return: one user message (`String`),
/// messages, a [`GetPromptResult`], a [`Reply`], or a `Result` of one of
/// these whose error becomes a JSON-RPC internal error with its text.
pub trait IntoPromptResult {
    /// The reply sent for this value.
    fn into_prompt_reply(self) -> Result<Reply<GetPromptResult>, HandlerError>;
}

impl IntoPromptResult for String {
    fn into_prompt_reply(self) -> Result<Reply<GetPromptResult>, HandlerError> {
        Ok(Reply::Complete(GetPromptResult::of(vec![PromptMessage::user(self)])))
    }
}

impl IntoPromptResult for Vec<PromptMessage> {
    fn into_prompt_reply(self) -> Result<Reply<GetPromptResult>, HandlerError> {
        Ok(Reply::Complete(GetPromptResult::of(self)))
    }
}

impl IntoPromptResult for GetPromptResult {
    fn into_prompt_reply(self) -> Result<Reply<GetPromptResult>, HandlerError> {
        Ok(Reply::Complete(self))
    }
}

impl IntoPromptResult for Reply<GetPromptResult> {
    fn into_prompt_reply(self) -> Result<Reply<GetPromptResult>, HandlerError> {
        Ok(self)
    }
}

impl<T: IntoPromptResult, E: Display> IntoPromptResult for Result<T, E> {
    fn into_prompt_reply(self) -> Result<Reply<GetPromptResult>, HandlerError> {
        self.map_err(|e| HandlerError::internal(e.to_string()))?.into_prompt_reply()
    }
}

/// The JSON Schema (2020-12) of `T`, as a tool's input or output schema:
/// what [`super::ServerBuilder::typed_tool`] derives, for a tool built by
/// hand ([`Tool::with_output_schema`]). `$schema` is left out: 2020-12 is
/// the specification's default dialect, and validators of older drafts in
/// clients refuse the keyword's URL. The root `title` (the Rust type's
/// name) means nothing to a model.
pub fn schema_for<T: JsonSchema>() -> Map<String, Value> {
    let schema = schemars::generate::SchemaSettings::draft2020_12().into_generator().into_root_schema_for::<T>();
    let mut map = match schema.to_value() {
        Value::Object(map) => map,
        // `true`/`false` schemas: any object, as MCP needs an object schema.
        _ => Map::new(),
    };
    map.remove("$schema");
    map.remove("title");
    map
}

/// `tool` with its input schema derived from `A` and its output schema
/// from what the handler returns (`R`).
///
/// # Panics
/// When `A`'s schema is not an object schema: tool arguments are a JSON
/// object. This is a mistake in the program, found at start-up.
pub(crate) fn describe_tool<A: JsonSchema, R: IntoToolResult>(tool: Tool) -> Tool {
    let input = object_schema::<A>(&tool.name);
    let tool = tool.with_input_schema(input);
    match R::output_schema() {
        Some(output) => tool.with_output_schema(output),
        None => tool,
    }
}

/// `prompt` with its arguments read off `A`'s properties: their names,
/// descriptions and which are required. The required ones come first, in
/// the order of `A`'s fields; then the others, by name (a schema's
/// properties are a map and keep no order).
///
/// # Panics
/// As [`describe_tool`], when `A`'s schema is not an object schema.
pub(crate) fn describe_prompt<A: JsonSchema>(prompt: Prompt) -> Prompt {
    let schema = object_schema::<A>(&prompt.name);
    let required: Vec<&str> =
        schema.get("required").and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str).collect();
    let properties = schema.get("properties").and_then(Value::as_object).cloned().unwrap_or_default();
    let argument = |name: &str, is_required: bool| {
        let argument = PromptArgument::new(name);
        let argument = match properties.get(name).and_then(|p| p.get("description")).and_then(Value::as_str) {
            Some(description) => argument.with_description(description),
            None => argument,
        };
        if is_required { argument.required() } else { argument }
    };
    let optional = properties.keys().map(String::as_str).filter(|name| !required.contains(name));
    let arguments =
        required.iter().map(|name| argument(name, true)).chain(optional.map(|name| argument(name, false))).collect();
    prompt.with_arguments(arguments)
}

fn object_schema<A: JsonSchema>(name: &str) -> Map<String, Value> {
    let schema = schema_for::<A>();
    let is_object = schema.get("type").is_some_and(|t| t == "object");
    assert!(
        is_object,
        "the arguments of {name} must be a struct or map (a JSON object schema), not {}",
        std::any::type_name::<A>()
    );
    schema
}

/// The arguments of a call as `A`; a mismatch is -32602 naming where in
/// the arguments it is (`items[2].name: invalid type: ...`).
pub(crate) fn arguments<A: DeserializeOwned>(name: &str, arguments: Map<String, Value>) -> Result<A, HandlerError> {
    serde_path_to_error::deserialize(Value::Object(arguments)).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner();
        if path == "." {
            HandlerError::invalid_params(format!("arguments of {name}: {inner}"))
        } else {
            HandlerError::invalid_params(format!("arguments of {name}: {path}: {inner}"))
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;
    use serde_json::json;

    /// Two numbers to add.
    #[derive(Debug, Deserialize, JsonSchema)]
    #[allow(dead_code)]
    struct Add {
        /// The first.
        a: f64,
        b: Option<f64>,
        items: Vec<Item>,
    }

    #[derive(Debug, Deserialize, JsonSchema)]
    #[allow(dead_code)]
    struct Item {
        name: String,
    }

    #[derive(Serialize, JsonSchema)]
    struct Sum {
        sum: f64,
    }

    #[test]
    fn the_input_schema_is_derived_without_dialect_or_type_name() {
        let tool = describe_tool::<Add, String>(Tool::new("add"));
        let schema = Value::Object(tool.input_schema);
        assert_eq!(schema["type"], "object");
        assert_eq!(schema["description"], "Two numbers to add.");
        assert_eq!(schema["properties"]["a"]["description"], "The first.");
        assert_eq!(schema["required"], json!(["a", "items"]));
        assert!(schema.get("$schema").is_none() && schema.get("title").is_none());
        assert!(schema["$defs"]["Item"].is_object(), "nested types are 2020-12 $defs: {schema}");
        assert!(tool.output_schema.is_none());
    }

    #[test]
    fn a_json_result_declares_its_output_schema_and_fills_structured_content() {
        let tool = describe_tool::<Add, Result<Json<Sum>, String>>(Tool::new("add"));
        assert_eq!(Value::Object(tool.output_schema.unwrap_or_default())["properties"]["sum"]["type"], "number");
        let Ok(Reply::Complete(result)) = Json(Sum { sum: 3.0 }).into_tool_reply() else { panic!("not complete") };
        assert_eq!(result.structured_content, Some(json!({"sum": 3.0})));
    }

    #[test]
    fn a_json_result_that_is_not_an_object_is_an_internal_error() {
        let Err(e) = Json(3).into_tool_reply() else { panic!("accepted") };
        assert_eq!(e.code, mcp_bridge_protocol::error_code::INTERNAL_ERROR);
    }

    #[test]
    fn an_err_becomes_an_is_error_result() {
        let outcome: Result<String, std::io::Error> = Err(std::io::Error::other("disk full"));
        let Ok(Reply::Complete(result)) = outcome.into_tool_reply() else { panic!("not complete") };
        assert_eq!(result.is_error, Some(true));
        assert_eq!(result, CallToolResult::error("disk full"));
    }

    #[test]
    fn bad_arguments_name_the_path_of_the_error() {
        let args = json!({"a": 1, "items": [{"name": "x"}, {"name": 2}]});
        let Value::Object(args) = args else { unreachable!() };
        let e = arguments::<Add>("add", args).unwrap_err();
        assert_eq!(e.code, mcp_bridge_protocol::error_code::INVALID_PARAMS);
        assert!(e.message.starts_with("arguments of add: items[1].name: invalid type: integer `2`"), "{}", e.message);
        let e = arguments::<Add>("add", Map::new()).unwrap_err();
        assert_eq!(e.message, "arguments of add: missing field `a`");
    }

    #[test]
    fn prompt_arguments_are_read_off_the_type() {
        /// What to write.
        #[derive(Deserialize, JsonSchema)]
        #[allow(dead_code)]
        struct Poem {
            /// The subject.
            topic: String,
            mood: Option<String>,
        }
        let prompt = describe_prompt::<Poem>(Prompt::new("poem"));
        let arguments = prompt.arguments.unwrap_or_default();
        assert_eq!(arguments.len(), 2);
        assert_eq!(arguments[0], PromptArgument::new("topic").with_description("The subject.").required());
        assert_eq!(arguments[1], PromptArgument::new("mood"));
    }

    #[test]
    #[should_panic(expected = "must be a struct or map")]
    fn arguments_that_are_not_an_object_are_refused_at_start_up() {
        describe_tool::<u32, String>(Tool::new("n"));
    }
}
