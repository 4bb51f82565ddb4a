//! The list methods: one page of a list, by the request's cursor.

use mcp_bridge_protocol::types::{CacheScope, PaginatedRequestParams, Prompt, Resource, ResourceTemplate, Tool};
use serde::Serialize;
use serde_json::{Map, Value, json};

use super::{Outcome, parse, to_value};
use crate::error::ServerFault;
use crate::server::protect::{Caller, ScopeTarget};
use crate::server::{Server, read};

/// A list's entries as one caller sees them, and whether the list is that
/// caller's own (some entries left out for it).
pub(super) struct Listed<T> {
    entries: Vec<T>,
    own: bool,
}

impl<T> From<Vec<T>> for Listed<T> {
    /// Entries every caller sees.
    fn from(entries: Vec<T>) -> Self {
        Listed { entries, own: false }
    }
}

impl Server {
    /// `entries` as `caller` sees them: on a protected endpoint (a caller
    /// known) of a server that lists only what callers may use, those
    /// whose scopes it lacks are left out (`target` names what each entry
    /// needs scopes as).
    pub(super) fn listed<T>(
        &self,
        mut entries: Vec<T>,
        caller: Option<&Caller>,
        target: fn(&T) -> ScopeTarget,
    ) -> Listed<T> {
        let rules = read(&self.inner.scopes);
        let Some(caller) = caller.filter(|_| self.inner.scoped_lists && !rules.is_empty()) else {
            return entries.into();
        };
        entries.retain(|entry| rules.grants(caller, &target(entry)));
        Listed { entries, own: true }
    }

    /// The page at the request's cursor of `listed`, under `key`, with the
    /// cursor of the next page when there is one; a caller's own list is
    /// `private`.
    pub(super) fn list_page<T: Serialize>(
        &self,
        params: Map<String, Value>,
        key: &str,
        listed: impl Into<Listed<T>>,
    ) -> Outcome {
        let request: PaginatedRequestParams = parse(params)?;
        let invalid = || ServerFault::InvalidParams { reason: "invalid cursor".into() };
        let start = match request.cursor {
            None => 0,
            Some(cursor) => cursor.parse::<usize>().map_err(|_| invalid())?,
        };
        let Listed { entries: all, own } = listed.into();
        let scope = if own { CacheScope::Private } else { self.inner.cache.scope };
        if start > all.len() {
            return Err(invalid());
        }
        let end = (start + self.inner.page_size).min(all.len());
        let mut result = json!({
            "resultType": "complete",
            key: to_value(&all[start..end])?,
            "ttlMs": self.inner.cache.ttl_ms,
            "cacheScope": scope,
        });
        if end < all.len() {
            result["nextCursor"] = json!(end.to_string());
        }
        Ok(result)
    }
}

impl Server {
    /// The tools `caller` sees.
    pub(super) fn tools_for(&self, caller: Option<&Caller>) -> Listed<Tool> {
        let unlisted = read(&self.inner.unlisted);
        let listed = read(&self.inner.tools);
        let tools = listed.iter().filter(|t| !unlisted.contains(&t.tool.name)).map(|t| t.tool.clone()).collect();
        self.listed(tools, caller, |t| ScopeTarget::tool(&t.name))
    }

    /// The prompts `caller` sees.
    pub(super) fn prompts_for(&self, caller: Option<&Caller>) -> Listed<Prompt> {
        let prompts = read(&self.inner.prompts).iter().map(|p| p.prompt.clone()).collect();
        self.listed(prompts, caller, |p| ScopeTarget::prompt(&p.name))
    }

    /// The resources `caller` sees.
    pub(super) fn resources_for(&self, caller: Option<&Caller>) -> Listed<Resource> {
        let resources = read(&self.inner.resources).iter().map(|r| r.resource.clone()).collect();
        self.listed(resources, caller, |r| ScopeTarget::resource(&r.uri))
    }

    /// The resource templates, which need no scopes of their own.
    pub(super) fn templates(&self) -> Vec<ResourceTemplate> {
        read(&self.inner.templates).iter().map(|t| t.template.clone()).collect()
    }
}
