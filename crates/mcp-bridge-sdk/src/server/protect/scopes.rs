//! What a request needs scopes for beyond its endpoint: the tool it calls,
//! the prompt it gets, the resource it reads, and the scopes declared for
//! each. No I/O here.

use serde_json::Value;

use super::Caller;

/// What a scope is required for, beyond the endpoint itself: a tool by
/// name, a prompt by name, a resource by URI.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ScopeTarget {
    /// `tools/call` of this tool.
    Tool(String),
    /// `prompts/get` of this prompt.
    Prompt(String),
    /// `resources/read` of this URI.
    Resource(String),
}

impl ScopeTarget {
    /// The tool `name`.
    pub fn tool(name: impl Into<String>) -> Self {
        ScopeTarget::Tool(name.into())
    }

    /// The prompt `name`.
    pub fn prompt(name: impl Into<String>) -> Self {
        ScopeTarget::Prompt(name.into())
    }

    /// The resource at `uri`.
    pub fn resource(uri: impl Into<String>) -> Self {
        ScopeTarget::Resource(uri.into())
    }

    /// What the request `method` with `params` is for, when it is one.
    fn of_request(method: &str, params: Option<&Value>) -> Option<ScopeTarget> {
        use mcp_bridge_protocol::method::{Method, PromptsGet, ResourcesRead, ToolsCall};
        let member = |name: &str| params.and_then(|p| p.get(name)).and_then(Value::as_str).map(str::to_owned);
        match method {
            ToolsCall::NAME => member("name").map(ScopeTarget::Tool),
            PromptsGet::NAME => member("name").map(ScopeTarget::Prompt),
            ResourcesRead::NAME => member("uri").map(ScopeTarget::Resource),
            _ => None,
        }
    }
}

/// The scopes declared for tools, prompts and resources at registration
/// ([`ServerBuilder::require_scopes`](crate::ServerBuilder::require_scopes))
/// or later ([`Server::set_required_scopes`](crate::Server::set_required_scopes)).
#[derive(Debug, Clone, Default)]
pub(crate) struct RequiredScopes(std::collections::HashMap<ScopeTarget, Vec<String>>);

impl RequiredScopes {
    pub(crate) fn insert(&mut self, target: ScopeTarget, scopes: Vec<String>) {
        self.0.entry(target).or_default().extend(scopes);
    }

    /// Makes `scopes` the ones `target` needs (none: only the endpoint's).
    pub(crate) fn set(&mut self, target: ScopeTarget, scopes: Vec<String>) {
        if scopes.is_empty() {
            self.0.remove(&target);
        } else {
            self.0.insert(target, scopes);
        }
    }

    /// Whether no target needs a scope of its own.
    pub(crate) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The scopes a request needs beyond the endpoint's: those of the tool
    /// it calls, the prompt it gets or the resource it reads.
    pub(crate) fn of_request(&self, method: &str, params: Option<&Value>) -> Vec<String> {
        ScopeTarget::of_request(method, params).and_then(|target| self.0.get(&target)).cloned().unwrap_or_default()
    }

    /// Whether `caller` may use `target`: it has every scope the target
    /// needs. What a caller may not use is left out of its lists.
    pub(crate) fn grants(&self, caller: &Caller, target: &ScopeTarget) -> bool {
        self.0.get(target).is_none_or(|needed| caller.has_scopes(needed))
    }
}
