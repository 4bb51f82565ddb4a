//! MCP Apps (`io.modelcontextprotocol/ui`, SEP-1865), the client's side:
//! declaring the extension, reading a tool's UI metadata, and the checks
//! a `ui://` view must pass before a host renders it (in its own sandbox;
//! the SDK renders nothing).

pub use mcp_bridge_protocol::types::{APP_MIME_TYPE, UI_EXTENSION};
use mcp_bridge_protocol::types::{ClientCapabilities, Tool};
use serde_json::{Map, Value};

/// Declares the extension in a client's capabilities, for HTML views.
pub fn declare(capabilities: &mut ClientCapabilities) {
    capabilities
        .extensions
        .get_or_insert_with(Map::new)
        .insert(UI_EXTENSION.to_owned(), mcp_bridge_protocol::types::ui_extension_settings());
}

/// A tool's UI metadata (`_meta.ui`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolUi {
    /// The `ui://` resource that renders the tool's results.
    pub resource_uri: Option<String>,
    /// Who may call the tool: `model`, `app` (both when not said).
    pub visibility: Vec<String>,
}

impl ToolUi {
    /// Whether the model may see and call the tool.
    pub fn visible_to_model(&self) -> bool {
        self.visibility.iter().any(|v| v == "model")
    }

    /// Whether a view may call the tool.
    pub fn callable_by_app(&self) -> bool {
        self.visibility.iter().any(|v| v == "app")
    }
}

/// The UI metadata of a tool, when it has any: `_meta.ui`, or the
/// deprecated `_meta["ui/resourceUri"]`.
pub fn tool_ui(tool: &Tool) -> Option<ToolUi> {
    let meta = tool.meta.as_ref()?;
    let ui = meta.get("ui");
    let resource_uri = ui
        .and_then(|ui| ui.get("resourceUri"))
        .or_else(|| meta.get("ui/resourceUri"))
        .and_then(Value::as_str)
        .map(str::to_owned);
    if ui.is_none() && resource_uri.is_none() {
        return None;
    }
    let visibility = match ui.and_then(|ui| ui.get("visibility")).and_then(Value::as_array) {
        Some(list) => list.iter().filter_map(Value::as_str).map(str::to_owned).collect(),
        None => vec!["model".to_owned(), "app".to_owned()],
    };
    Some(ToolUi { resource_uri, visibility })
}

/// A view, checked and ready for a host's sandbox.
#[derive(Debug, Clone, PartialEq)]
pub struct UiResource {
    /// Its `ui://` URI.
    pub uri: String,
    /// The HTML document.
    pub html: String,
    /// `_meta.ui` of the contents: the CSP domains, permissions, border.
    pub ui_meta: Option<Value>,
}
