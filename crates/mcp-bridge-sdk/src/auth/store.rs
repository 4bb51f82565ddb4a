//! Where sign-ins are kept between runs: the tokens of each server and the
//! client registration at each authorization server, as records in a
//! [`TokenStore`].

use std::collections::BTreeMap;
use std::sync::Mutex;

use serde::{Deserialize, Serialize};

/// The tokens of one server, from one authorization server.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TokenRecord {
    /// The authorization server that issued them.
    pub issuer: String,
    /// The client they were issued to.
    pub client_id: String,
    /// The access token.
    pub access_token: String,
    /// The refresh token, when one was issued.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refresh_token: Option<String>,
    /// When the access token expires, in seconds since the Unix epoch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<u64>,
    /// When it was issued, in seconds since the Unix epoch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub issued_at: Option<u64>,
    /// The scopes granted, space-separated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
    /// The resource they were asked for, exactly as the server's protected
    /// resource metadata names it (sent again on each refresh).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource: Option<String>,
}

impl std::fmt::Debug for TokenRecord {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TokenRecord")
            .field("issuer", &self.issuer)
            .field("client_id", &self.client_id)
            .field("refresh_token", &self.refresh_token.as_ref().map(|_| "***"))
            .field("expires_at", &self.expires_at)
            .field("scope", &self.scope)
            .finish_non_exhaustive()
    }
}

/// A client registered at one authorization server.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClientRecord {
    /// The authorization server it is registered at; never used with another.
    pub issuer: String,
    /// The client id.
    pub client_id: String,
    /// The client secret of a confidential client.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_secret: Option<String>,
    /// `client_secret_basic`, `client_secret_post` or `none`.
    pub token_endpoint_auth_method: String,
}

impl std::fmt::Debug for ClientRecord {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientRecord")
            .field("issuer", &self.issuer)
            .field("client_id", &self.client_id)
            .field("client_secret", &self.client_secret.as_ref().map(|_| "***"))
            .field("token_endpoint_auth_method", &self.token_endpoint_auth_method)
            .finish()
    }
}

/// The key of a server's tokens.
pub fn tokens_key(resource: &str) -> String {
    format!("tokens:{resource}")
}

/// The key of the client registered at an authorization server.
pub fn client_key(issuer: &str) -> String {
    format!("client:{issuer}")
}

/// Keeps records (JSON text) by key. An operating system keychain and
/// encrypted files are kinds of store, memory another.
pub trait TokenStore: Send + Sync + std::fmt::Debug {
    /// The record under `key`.
    ///
    /// # Errors
    /// Why the store cannot be read.
    fn load(&self, key: &str) -> Result<Option<String>, String>;

    /// Keeps `value` under `key`, replacing what was there.
    ///
    /// # Errors
    /// Why the store cannot be written.
    fn save(&self, key: &str, value: &str) -> Result<(), String>;

    /// Forgets `key`.
    ///
    /// # Errors
    /// Why the store cannot be written.
    fn remove(&self, key: &str) -> Result<(), String>;
}

/// A shared store is a store (a choice made at run time: keychain, files
/// or memory).
impl<T: TokenStore + ?Sized> TokenStore for std::sync::Arc<T> {
    fn load(&self, key: &str) -> Result<Option<String>, String> {
        (**self).load(key)
    }

    fn save(&self, key: &str, value: &str) -> Result<(), String> {
        (**self).save(key, value)
    }

    fn remove(&self, key: &str) -> Result<(), String> {
        (**self).remove(key)
    }
}

/// Records kept for the life of the process.
#[derive(Default)]
pub struct MemoryStore {
    records: Mutex<BTreeMap<String, String>>,
}

impl std::fmt::Debug for MemoryStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryStore").finish_non_exhaustive()
    }
}

impl MemoryStore {
    fn records(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, String>> {
        self.records.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl TokenStore for MemoryStore {
    fn load(&self, key: &str) -> Result<Option<String>, String> {
        Ok(self.records().get(key).cloned())
    }

    fn save(&self, key: &str, value: &str) -> Result<(), String> {
        self.records().insert(key.to_owned(), value.to_owned());
        Ok(())
    }

    fn remove(&self, key: &str) -> Result<(), String> {
        self.records().remove(key);
        Ok(())
    }
}

/// Reads a record of type `T`; a record that does not parse is absent.
pub(crate) fn load<T: serde::de::DeserializeOwned>(store: &dyn TokenStore, key: &str) -> Result<Option<T>, String> {
    Ok(store.load(key)?.and_then(|text| serde_json::from_str(&text).ok()))
}

/// Writes a record of type `T`.
pub(crate) fn save<T: Serialize>(store: &dyn TokenStore, key: &str, value: &T) -> Result<(), String> {
    let text = serde_json::to_string(value).map_err(|e| e.to_string())?;
    store.save(key, &text)
}

/// The key of the index an [`Indexed`] store keeps.
const INDEX_KEY: &str = "index";

/// A store that also keeps the list of its keys (a store of encrypted
/// files or a keychain cannot list them), so a logout can find every
/// sign-in.
#[derive(Debug)]
pub struct Indexed<S> {
    inner: S,
    /// One index update at a time in this process.
    lock: Mutex<()>,
}

impl<S: TokenStore> Indexed<S> {
    /// `inner`, indexed.
    pub fn new(inner: S) -> Self {
        Indexed { inner, lock: Mutex::new(()) }
    }

    /// The keys of the records kept.
    ///
    /// # Errors
    /// The store's error.
    pub fn keys(&self) -> Result<Vec<String>, String> {
        Ok(self.inner.load(INDEX_KEY)?.and_then(|text| serde_json::from_str(&text).ok()).unwrap_or_default())
    }

    fn update(&self, change: impl FnOnce(&mut Vec<String>)) -> Result<(), String> {
        let _one = self.lock.lock().unwrap_or_else(|e| e.into_inner());
        let mut keys = self.keys()?;
        change(&mut keys);
        self.inner.save(INDEX_KEY, &serde_json::to_string(&keys).map_err(|e| e.to_string())?)
    }

    /// Removes every record; returns how many there were.
    ///
    /// # Errors
    /// The store's error; the records not removed yet stay indexed.
    pub fn remove_all(&self) -> Result<usize, String> {
        let keys = self.keys()?;
        for key in &keys {
            self.remove(key)?;
        }
        Ok(keys.len())
    }
}

impl<S: TokenStore> TokenStore for Indexed<S> {
    fn load(&self, key: &str) -> Result<Option<String>, String> {
        self.inner.load(key)
    }

    fn save(&self, key: &str, value: &str) -> Result<(), String> {
        self.inner.save(key, value)?;
        self.update(|keys| {
            if !keys.iter().any(|k| k == key) {
                keys.push(key.to_owned());
            }
        })
    }

    fn remove(&self, key: &str) -> Result<(), String> {
        self.inner.remove(key)?;
        self.update(|keys| keys.retain(|k| k != key))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_indexed_store_lists_and_removes_its_records() {
        let store = Indexed::new(MemoryStore::default());
        store.save(&tokens_key("https://a/mcp"), "{}").unwrap();
        store.save(&client_key("https://as"), "{}").unwrap();
        store.save(&tokens_key("https://a/mcp"), "{\"x\":1}").unwrap();
        assert_eq!(store.keys().unwrap(), ["tokens:https://a/mcp", "client:https://as"]);
        store.remove(&client_key("https://as")).unwrap();
        assert_eq!(store.keys().unwrap(), ["tokens:https://a/mcp"]);
        assert_eq!(store.remove_all().unwrap(), 1);
        assert!(store.keys().unwrap().is_empty());
        assert_eq!(store.load(&tokens_key("https://a/mcp")).unwrap(), None);
    }
}
