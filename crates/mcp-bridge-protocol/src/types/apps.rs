//! MCP Apps (`io.modelcontextprotocol/ui`, SEP-1865): the names a client
//! and a server agree on for tool views.

/// The extension's identifier.
pub const UI_EXTENSION: &str = "io.modelcontextprotocol/ui";

/// The media type of an HTML view.
pub const APP_MIME_TYPE: &str = "text/html;profile=mcp-app";

/// The settings a client declares the extension with: HTML views.
pub fn ui_extension_settings() -> serde_json::Value {
    serde_json::json!({ "mimeTypes": [APP_MIME_TYPE] })
}
