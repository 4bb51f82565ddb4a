//! Records kept by key between runs: sign-ins (the `auth` module's
//! tokens and client registrations) and the tasks a client follows. A
//! [`RecordStore`] is memory, encrypted files or the operating system's
//! keychain; [`Indexed`] adds the list of keys the last two cannot give.

mod file;
mod keychain;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Mutex;

use serde::Serialize;

pub use file::FileStore;
pub use keychain::KeychainStore;

/// Why a store could not be read or written.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// A file or folder could not be read, written or removed.
    #[error("cannot {action} {}: {message}", path.display())]
    Io {
        /// What was tried: `read`, `write`, `create`, `replace`, `remove`.
        action: &'static str,
        /// The file or folder.
        path: PathBuf,
        /// The kind of the operating system's error.
        kind: std::io::ErrorKind,
        /// The operating system's message.
        message: String,
    },
    /// A record does not open with this store's key: sealed with another
    /// key, moved from another record's name, or damaged.
    #[error("{} cannot be opened with this key", path.display())]
    Sealed {
        /// The record's file.
        path: PathBuf,
    },
    /// The store's key cannot be used (the file is not a key, or it lies
    /// in the folder it protects).
    #[error("the store's key is refused: {reason}")]
    Key {
        /// Why.
        reason: String,
    },
    /// The operating system's keychain refused, or there is none.
    #[error("the keychain: {reason}")]
    Keychain {
        /// What it said.
        reason: String,
    },
    /// A record could not be encoded as JSON.
    #[error("a record cannot be encoded: {0}")]
    Encode(String),
    /// A record is not the JSON its reader expects.
    #[error("a record is not valid: {0}")]
    Decode(String),
    /// The failure of a store outside this crate.
    #[error("the store failed: {reason}")]
    Other {
        /// What it said.
        reason: String,
    },
}

/// Keeps records (JSON text) by key. An operating system keychain and
/// encrypted files are kinds of store, memory another.
pub trait RecordStore: Send + Sync + std::fmt::Debug {
    /// The record under `key`.
    ///
    /// # Errors
    /// Why the store cannot be read.
    fn load(&self, key: &str) -> Result<Option<String>, StoreError>;

    /// Keeps `value` under `key`, replacing what was there.
    ///
    /// # Errors
    /// Why the store cannot be written.
    fn save(&self, key: &str, value: &str) -> Result<(), StoreError>;

    /// Forgets `key`.
    ///
    /// # Errors
    /// Why the store cannot be written.
    fn remove(&self, key: &str) -> Result<(), StoreError>;
}

/// A shared store is a store (a choice made at run time: keychain, files
/// or memory).
impl<T: RecordStore + ?Sized> RecordStore for std::sync::Arc<T> {
    fn load(&self, key: &str) -> Result<Option<String>, StoreError> {
        (**self).load(key)
    }

    fn save(&self, key: &str, value: &str) -> Result<(), StoreError> {
        (**self).save(key, value)
    }

    fn remove(&self, key: &str) -> Result<(), StoreError> {
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

impl RecordStore for MemoryStore {
    fn load(&self, key: &str) -> Result<Option<String>, StoreError> {
        Ok(self.records().get(key).cloned())
    }

    fn save(&self, key: &str, value: &str) -> Result<(), StoreError> {
        self.records().insert(key.to_owned(), value.to_owned());
        Ok(())
    }

    fn remove(&self, key: &str) -> Result<(), StoreError> {
        self.records().remove(key);
        Ok(())
    }
}

/// Reads a record of type `T`; a record that does not parse is absent.
pub(crate) fn load<T: serde::de::DeserializeOwned>(
    store: &dyn RecordStore,
    key: &str,
) -> Result<Option<T>, StoreError> {
    Ok(store.load(key)?.and_then(|text| serde_json::from_str(&text).ok()))
}

/// Writes a record of type `T`.
pub(crate) fn save<T: Serialize>(store: &dyn RecordStore, key: &str, value: &T) -> Result<(), StoreError> {
    let text = serde_json::to_string(value).map_err(|e| StoreError::Encode(e.to_string()))?;
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

impl<S: RecordStore> Indexed<S> {
    /// `inner`, indexed.
    pub fn new(inner: S) -> Self {
        Indexed { inner, lock: Mutex::new(()) }
    }

    /// The keys of the records kept.
    ///
    /// # Errors
    /// The store's error.
    pub fn keys(&self) -> Result<Vec<String>, StoreError> {
        Ok(self.inner.load(INDEX_KEY)?.and_then(|text| serde_json::from_str(&text).ok()).unwrap_or_default())
    }

    fn update(&self, change: impl FnOnce(&mut Vec<String>)) -> Result<(), StoreError> {
        let _one = self.lock.lock().unwrap_or_else(|e| e.into_inner());
        let mut keys = self.keys()?;
        change(&mut keys);
        self.inner.save(INDEX_KEY, &serde_json::to_string(&keys).map_err(|e| StoreError::Encode(e.to_string()))?)
    }

    /// Removes every record; returns how many there were.
    ///
    /// # Errors
    /// The store's error; the records not removed yet stay indexed.
    pub fn remove_all(&self) -> Result<usize, StoreError> {
        let keys = self.keys()?;
        for key in &keys {
            self.remove(key)?;
        }
        Ok(keys.len())
    }
}

impl<S: RecordStore> RecordStore for Indexed<S> {
    fn load(&self, key: &str) -> Result<Option<String>, StoreError> {
        self.inner.load(key)
    }

    fn save(&self, key: &str, value: &str) -> Result<(), StoreError> {
        self.inner.save(key, value)?;
        self.update(|keys| {
            if !keys.iter().any(|k| k == key) {
                keys.push(key.to_owned());
            }
        })
    }

    fn remove(&self, key: &str) -> Result<(), StoreError> {
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
        store.save("tokens:https://a/mcp", "{}").unwrap();
        store.save("client:https://as", "{}").unwrap();
        store.save("tokens:https://a/mcp", "{\"x\":1}").unwrap();
        assert_eq!(store.keys().unwrap(), ["tokens:https://a/mcp", "client:https://as"]);
        store.remove("client:https://as").unwrap();
        assert_eq!(store.keys().unwrap(), ["tokens:https://a/mcp"]);
        assert_eq!(store.remove_all().unwrap(), 1);
        assert!(store.keys().unwrap().is_empty());
        assert_eq!(store.load("tokens:https://a/mcp").unwrap(), None);
    }
}
