//! The client's result cache (2026-07-28, Caching): discovery, list and
//! read results the server gave a positive `ttlMs`, served again until
//! they expire. Off unless [`CacheOptions::enabled`].
//!
//! A `private` result, and one without `cacheScope`, belongs to the
//! credential it was fetched with: it is kept with the SHA-256 digest of
//! that credential (never the credential) and served only for the same
//! one; a new credential drops them all.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use mcp_bridge_protocol::JsonRpcNotification;
use mcp_bridge_protocol::method::{
    Method, PromptsList, PromptsListChanged, ResourcesList, ResourcesListChanged, ResourcesRead,
    ResourcesTemplatesList, ResourcesUpdated, ToolsList, ToolsListChanged,
};
use mcp_bridge_protocol::rounds::{INPUT_RESPONSES, REQUEST_STATE};
use serde_json::{Map, Value};
use tokio::time::Instant;

/// The SHA-256 digest of a transport's credential.
pub(crate) type CredentialDigest = [u8; 32];

/// Whether and how much a client caches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct CacheOptions {
    /// Keep results with a positive `ttlMs`; off by default.
    pub enabled: bool,
    /// The most results kept; the one that expires first goes when full.
    pub max_entries: usize,
}

crate::setters::with_setters! {
    CacheOptions {
        value with_enabled => enabled: bool,
        value with_max_entries => max_entries: usize,
    }
}

impl Default for CacheOptions {
    fn default() -> Self {
        CacheOptions { enabled: false, max_entries: 512 }
    }
}

/// How one request uses the cache (when the client has one).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CacheMode {
    /// Serve a fresh cached result; store a new one.
    #[default]
    Default,
    /// Neither read nor write the cache.
    Bypass,
    /// Ask the server, and store what it says.
    Refresh,
}

/// Whether a request may use the cache: a cacheable method, and not a
/// round of a multi round-trip request.
pub(crate) fn cacheable(method: &str, params: &Map<String, Value>) -> bool {
    mcp_bridge_protocol::methods::spec(method).is_some_and(|m| m.cacheable)
        && !params.contains_key(REQUEST_STATE)
        && !params.contains_key(INPUT_RESPONSES)
}

struct Entry {
    value: Value,
    expires: Instant,
    /// `Some` for a result that belongs to one credential (`None` inside:
    /// fetched without one).
    owner: Option<Option<CredentialDigest>>,
}

/// Results by method, then by their params (without `_meta`) as JSON.
#[derive(Default)]
struct Entries {
    by_method: HashMap<String, HashMap<String, Entry>>,
    /// The credential of the last request that used the cache.
    credential: Option<CredentialDigest>,
}

impl Entries {
    fn len(&self) -> usize {
        self.by_method.values().map(HashMap::len).sum()
    }

    fn drop_expired(&mut self, now: Instant) {
        for results in self.by_method.values_mut() {
            results.retain(|_, e| e.expires > now);
        }
    }

    fn drop_soonest_expiring(&mut self) {
        let soonest = self
            .by_method
            .iter()
            .flat_map(|(method, results)| results.iter().map(move |(key, e)| (e.expires, method, key)))
            .min()
            .map(|(_, method, key)| (method.clone(), key.clone()));
        if let Some((method, key)) = soonest
            && let Some(results) = self.by_method.get_mut(&method)
        {
            results.remove(&key);
        }
    }
}

/// The cache of one client.
pub(crate) struct ResultCache {
    entries: Mutex<Entries>,
    max_entries: usize,
}

fn key(params: &Map<String, Value>) -> String {
    // serde_json's map keeps its keys sorted, so equal params give one key.
    serde_json::to_string(params).unwrap_or_default()
}

impl ResultCache {
    pub(crate) fn new(options: CacheOptions) -> Self {
        ResultCache { entries: Mutex::default(), max_entries: options.max_entries.max(1) }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Entries> {
        self.entries.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Notes the credential of a request; a new one drops the results that
    /// belong to the previous one.
    pub(crate) fn saw_credential(&self, credential: Option<CredentialDigest>) {
        let mut entries = self.lock();
        if entries.credential != credential {
            entries.credential = credential;
            for results in entries.by_method.values_mut() {
                results.retain(|_, e| e.owner.is_none());
            }
        }
    }

    /// A fresh result of this request for this credential.
    pub(crate) fn get(
        &self,
        method: &str,
        params: &Map<String, Value>,
        credential: Option<CredentialDigest>,
    ) -> Option<Value> {
        let entries = self.lock();
        let entry = entries.by_method.get(method)?.get(&key(params))?;
        let usable = entry.expires > Instant::now() && entry.owner.is_none_or(|owner| owner == credential);
        usable.then(|| entry.value.clone())
    }

    /// Keeps a complete result that has a positive `ttlMs`.
    pub(crate) fn put(
        &self,
        method: &str,
        params: &Map<String, Value>,
        value: &Value,
        credential: Option<CredentialDigest>,
    ) {
        let ttl_ms = value.get("ttlMs").and_then(Value::as_u64).unwrap_or(0);
        let complete = value.get("resultType").and_then(Value::as_str).is_none_or(|t| t == "complete");
        if ttl_ms == 0 || !complete {
            return;
        }
        let public = value.get("cacheScope").and_then(Value::as_str) == Some("public");
        let now = Instant::now();
        let entry = Entry {
            value: value.clone(),
            expires: now + Duration::from_millis(ttl_ms),
            owner: (!public).then_some(credential),
        };
        let mut entries = self.lock();
        if entries.len() >= self.max_entries {
            entries.drop_expired(now);
        }
        while entries.len() >= self.max_entries {
            entries.drop_soonest_expiring();
        }
        entries.by_method.entry(method.to_owned()).or_default().insert(key(params), entry);
    }

    /// Drops every cached page of one method's list.
    pub(crate) fn drop_method(&self, method: &str) {
        self.lock().by_method.remove(method);
    }

    /// Drops what a listen event makes stale: the changed list, or the
    /// read of an updated resource.
    pub(crate) fn drop_for_event(&self, event: &JsonRpcNotification) {
        let lists: &[&str] = match event.method.as_str() {
            ToolsListChanged::NAME => &[ToolsList::NAME],
            PromptsListChanged::NAME => &[PromptsList::NAME],
            ResourcesListChanged::NAME => &[ResourcesList::NAME, ResourcesTemplatesList::NAME],
            ResourcesUpdated::NAME => {
                let uri = event.params.as_ref().and_then(|p| p.get("uri"));
                if let (Some(uri), Some(reads)) = (uri, self.lock().by_method.get_mut(ResourcesRead::NAME)) {
                    reads.retain(|_, e| !reads_uri(e, uri));
                }
                return;
            }
            _ => return,
        };
        let mut entries = self.lock();
        for method in lists {
            entries.by_method.remove(*method);
        }
    }

    /// Drops every cached result.
    pub(crate) fn clear(&self) {
        self.lock().by_method.clear();
    }
}

/// Whether a cached read result holds contents of `uri`.
fn reads_uri(entry: &Entry, uri: &Value) -> bool {
    entry
        .value
        .get("contents")
        .and_then(Value::as_array)
        .is_some_and(|c| c.iter().any(|item| item.get("uri") == Some(uri)))
}
