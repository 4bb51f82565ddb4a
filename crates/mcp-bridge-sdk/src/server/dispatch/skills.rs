//! `skills/list`, `skills/get` and `resources/directory/read` (Skills
//! extension).

use mcp_bridge_protocol::method::{Method, ResourcesDirectoryRead, SkillsGet, SkillsList};
use serde_json::{Map, Value, json};

use super::Outcome;
use crate::error::ServerFault;
use crate::server::Server;

/// The `uri` the params of `skills/get` and `resources/directory/read`
/// must have (their params have no type of their own in the schema).
fn required_uri(params: &Map<String, Value>) -> Result<String, ServerFault> {
    params
        .get("uri")
        .and_then(Value::as_str)
        .map(str::to_owned)
        .ok_or_else(|| ServerFault::InvalidParams { reason: "uri is required".into() })
}

impl Server {
    pub(super) fn skill_method(&self, method: &str, params: Map<String, Value>) -> Outcome {
        let catalog = self.inner.skills.as_ref().ok_or(ServerFault::MethodNotFound { method: method.to_owned() })?;
        match method {
            SkillsList::NAME => self.list_page(params, "skills", catalog.entries()),
            SkillsGet::NAME => {
                let skill = catalog.get(&required_uri(&params)?)?;
                let cache = self.inner.cache;
                Ok(
                    json!({ "resultType": "complete", "skill": skill, "ttlMs": cache.ttl_ms, "cacheScope": cache.scope }),
                )
            }
            ResourcesDirectoryRead::NAME => {
                let children = catalog.directory(&required_uri(&params)?)?;
                self.list_page(params, "resources", children)
            }
            _ => Err(ServerFault::MethodNotFound { method: method.to_owned() }),
        }
    }
}
