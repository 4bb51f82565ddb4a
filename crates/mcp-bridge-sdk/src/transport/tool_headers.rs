//! What a client transport mirrors of a tool call into headers (2026-07-28,
//! Custom Headers): the `x-mcp-header` annotations it learned from
//! `tools/list` results, by tool. One table for the Streamable HTTP and the
//! gRPC transports.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use mcp_bridge_protocol::headers::{HeaderError, HeaderParam, header_params, header_values};
use serde_json::Value;

/// Receives a tool's name and why its `x-mcp-header` annotations were
/// refused (the tool is removed from the `tools/list` result).
pub type RejectedToolHook = Arc<dyn Fn(&str, &str) + Send + Sync>;

/// The annotations of the tools a client listed, shared by its requests.
#[derive(Clone, Default)]
pub(crate) struct ToolHeaders(Arc<Mutex<HashMap<String, Vec<HeaderParam>>>>);

impl ToolHeaders {
    fn table(&self) -> MutexGuard<'_, HashMap<String, Vec<HeaderParam>>> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Learns the annotations of the tools of a `tools/list` result, and
    /// removes the tools whose annotations are not valid (with a warning,
    /// and `on_rejected` told), as the specification asks of clients.
    pub(crate) fn learn(&self, result: &mut Value, on_rejected: Option<&RejectedToolHook>) {
        let Some(tools) = result.get_mut("tools").and_then(Value::as_array_mut) else { return };
        let mut table = self.table();
        tools.retain(|tool| {
            let name = tool.get("name").and_then(Value::as_str).unwrap_or_default().to_owned();
            match header_params(tool.get("inputSchema").unwrap_or(&Value::Null)) {
                Ok(params) => {
                    if params.is_empty() {
                        table.remove(&name);
                    } else {
                        table.insert(name, params);
                    }
                    true
                }
                Err(reason) => {
                    tracing::warn!(tool = %name, "tool removed from tools/list: {reason}");
                    if let Some(hook) = on_rejected {
                        hook(&name, &reason.to_string());
                    }
                    false
                }
            }
        });
    }

    /// The `Mcp-Param-{Name}` headers of a `tools/call` with these params.
    ///
    /// # Errors
    /// An argument that cannot be mirrored (see [`header_values`]).
    pub(crate) fn of_call(&self, params: Option<&Value>) -> Result<Vec<(String, String)>, HeaderError> {
        let Some(name) = params.and_then(|p| p.get("name")).and_then(Value::as_str) else { return Ok(Vec::new()) };
        let annotated = self.table().get(name).cloned().unwrap_or_default();
        header_values(&annotated, params.and_then(|p| p.get("arguments")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_listed_tools_annotations_become_its_calls_headers_and_a_bad_one_is_removed() {
        let headers = ToolHeaders::default();
        let mut listed = json!({"tools": [
            {"name": "good", "inputSchema": {"properties": {"region": {"type": "string", "x-mcp-header": "Region"}}}},
            {"name": "bad", "inputSchema": {"properties": {"region": {"type": "string", "x-mcp-header": "Bad Name"}}}}
        ]});
        headers.learn(&mut listed, None);
        assert_eq!(listed["tools"].as_array().unwrap().len(), 1);
        let call = json!({"name": "good", "arguments": {"region": "eu-west"}});
        let mirrored = headers.of_call(Some(&call)).unwrap();
        assert_eq!(mirrored.len(), 1);
        assert!(mirrored[0].0.eq_ignore_ascii_case("Mcp-Param-Region") && mirrored[0].1 == "eu-west", "{mirrored:?}");
        assert!(headers.of_call(Some(&json!({"name": "unknown", "arguments": {}}))).unwrap().is_empty());
    }
}
