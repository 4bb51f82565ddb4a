//! Where the official MCP schemas are, and validators for their definitions.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use serde_json::Value;

use crate::workspace_root;

/// The folder of the official schemas and examples of `revision`, kept in
/// the repository's `spec/` (see its README for their source and license).
pub fn spec_dir(revision: &str) -> PathBuf {
    workspace_root().join("spec").join(revision)
}

/// Reads a JSON file, naming it in the panic when it cannot.
pub fn read_json(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Validators for the definitions of one schema file, compiled on demand.
pub struct Schema {
    root: Value,
    compiled: Mutex<HashMap<String, Arc<jsonschema::Validator>>>,
}

impl Schema {
    /// The schema of `revision` (`2026-07-28` or `2025-11-25`).
    pub fn load(revision: &str) -> Schema {
        Schema { root: read_json(&spec_dir(revision).join("schema.json")), compiled: Mutex::default() }
    }

    /// The raw schema.
    pub fn root(&self) -> &Value {
        &self.root
    }

    /// The validator of one definition.
    pub fn validator(&self, definition: &str) -> Arc<jsonschema::Validator> {
        let mut compiled = self.compiled.lock().unwrap();
        compiled
            .entry(definition.to_owned())
            .or_insert_with(|| {
                assert!(self.root["$defs"].get(definition).is_some(), "{definition} is not a schema definition");
                let mut root = self.root.clone();
                root["$ref"] = Value::String(format!("#/$defs/{definition}"));
                Arc::new(jsonschema::validator_for(&root).unwrap())
            })
            .clone()
    }

    /// The errors of `instance` against `definition`, as text.
    pub fn errors(&self, definition: &str, instance: &Value) -> Vec<String> {
        self.validator(definition).iter_errors(instance).map(|e| format!("{e} at {}", e.instance_path())).collect()
    }
}

/// The schema definition of the response to a 2026-07-28 method.
pub fn result_response_definition(method: &str) -> Option<&'static str> {
    Some(match method {
        "server/discover" => "DiscoverResultResponse",
        "tools/list" => "ListToolsResultResponse",
        "tools/call" => "CallToolResultResponse",
        "prompts/list" => "ListPromptsResultResponse",
        "prompts/get" => "GetPromptResultResponse",
        "resources/list" => "ListResourcesResultResponse",
        "resources/templates/list" => "ListResourceTemplatesResultResponse",
        "resources/read" => "ReadResourceResultResponse",
        "completion/complete" => "CompleteResultResponse",
        "subscriptions/listen" => "SubscriptionsListenResultResponse",
        _ => return None,
    })
}
