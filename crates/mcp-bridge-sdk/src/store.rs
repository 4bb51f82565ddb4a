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

    /// Waits for the store's turn between processes and holds it until the
    /// lock drops, for a change that reads, then writes; `None` for a store
    /// no other process shares (memory) or that has no lock (a keychain).
    ///
    /// # Errors
    /// Why the lock cannot be taken.
    fn lock(&self) -> Result<Option<StoreLock>, StoreError> {
        Ok(None)
    }

    /// Forgets every record, also those whose keys nobody knows any more;
    /// how many there were, or `None` for a store that cannot find its
    /// records by itself (a keychain).
    ///
    /// # Errors
    /// Why the store cannot be written.
    fn clear(&self) -> Result<Option<usize>, StoreError> {
        Ok(None)
    }
}

/// A store's turn between processes ([`RecordStore::lock`]), until dropped.
#[derive(Debug)]
pub struct StoreLock {
    /// Closing the file releases the lock.
    _file: std::fs::File,
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

    fn lock(&self) -> Result<Option<StoreLock>, StoreError> {
        (**self).lock()
    }

    fn clear(&self) -> Result<Option<usize>, StoreError> {
        (**self).clear()
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

    fn clear(&self) -> Result<Option<usize>, StoreError> {
        let mut records = self.records();
        let count = records.len();
        records.clear();
        Ok(Some(count))
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
/// sign-in. The list is changed in the store's turn between processes
/// ([`RecordStore::lock`]), so bridges signing in at once lose no key. A
/// damaged list is started anew (said once, in a warning): the records stay
/// usable, and [`Indexed::remove_all`] still finds them where the store can
/// ([`RecordStore::clear`]).
#[derive(Debug)]
pub struct Indexed<S> {
    inner: S,
    /// One index update at a time in this process.
    lock: Mutex<()>,
    /// The damaged index was reported.
    warned: std::sync::atomic::AtomicBool,
}

impl<S: RecordStore> Indexed<S> {
    /// `inner`, indexed.
    pub fn new(inner: S) -> Self {
        Indexed { inner, lock: Mutex::new(()), warned: std::sync::atomic::AtomicBool::new(false) }
    }

    /// The keys of the records kept; none when the index is damaged.
    ///
    /// # Errors
    /// The store cannot be read.
    pub fn keys(&self) -> Result<Vec<String>, StoreError> {
        let text = match self.inner.load(INDEX_KEY) {
            Ok(text) => text,
            Err(StoreError::Sealed { .. }) => return Ok(self.damaged()),
            Err(e) => return Err(e),
        };
        match text.map(|text| serde_json::from_str(&text)) {
            None => Ok(Vec::new()),
            Some(Ok(keys)) => Ok(keys),
            Some(Err(_)) => Ok(self.damaged()),
        }
    }

    /// Reports a damaged index once; it is read as empty.
    fn damaged(&self) -> Vec<String> {
        if !self.warned.swap(true, std::sync::atomic::Ordering::Relaxed) {
            tracing::warn!(
                "the index of the stored records (sign-ins) is damaged; starting a new one (the records stay usable)"
            );
        }
        Vec::new()
    }

    /// Runs `change` in the store's turn, in this process and between processes.
    fn in_turn<T>(&self, change: impl FnOnce() -> Result<T, StoreError>) -> Result<T, StoreError> {
        let _one = self.lock.lock().unwrap_or_else(|e| e.into_inner());
        let _turn = self.inner.lock()?;
        change()
    }

    fn update_index(&self, change: impl FnOnce(&mut Vec<String>)) -> Result<(), StoreError> {
        let mut keys = self.keys()?;
        change(&mut keys);
        self.write_index(&keys)
    }

    fn write_index(&self, keys: &[String]) -> Result<(), StoreError> {
        self.inner.save(INDEX_KEY, &serde_json::to_string(keys).map_err(|e| StoreError::Encode(e.to_string()))?)
    }

    /// Removes every record: those the index names, then, where the store
    /// can find them by itself, any other (an index damaged or lost);
    /// returns how many there were.
    ///
    /// # Errors
    /// The store's error; the records not removed yet stay indexed.
    pub fn remove_all(&self) -> Result<usize, StoreError> {
        self.in_turn(|| {
            let keys = self.keys()?;
            for (done, key) in keys.iter().enumerate() {
                if let Err(e) = self.inner.remove(key) {
                    // The records not removed stay indexed; the store's error is the one to report.
                    let _ = self.write_index(&keys[done..]);
                    return Err(e);
                }
            }
            self.inner.remove(INDEX_KEY)?;
            let strays = self.inner.clear()?.unwrap_or(0);
            Ok(keys.len() + strays)
        })
    }
}

impl<S: RecordStore> RecordStore for Indexed<S> {
    fn load(&self, key: &str) -> Result<Option<String>, StoreError> {
        self.inner.load(key)
    }

    fn save(&self, key: &str, value: &str) -> Result<(), StoreError> {
        self.in_turn(|| {
            self.inner.save(key, value)?;
            self.update_index(|keys| {
                if !keys.iter().any(|k| k == key) {
                    keys.push(key.to_owned());
                }
            })
        })
    }

    fn remove(&self, key: &str) -> Result<(), StoreError> {
        self.in_turn(|| {
            self.inner.remove(key)?;
            self.update_index(|keys| keys.retain(|k| k != key))
        })
    }

    fn lock(&self) -> Result<Option<StoreLock>, StoreError> {
        self.inner.lock()
    }

    fn clear(&self) -> Result<Option<usize>, StoreError> {
        self.remove_all().map(Some)
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

    #[test]
    fn a_damaged_index_is_started_anew_and_remove_all_still_finds_every_record() {
        let root = std::env::temp_dir().join(format!("mcp-indexed-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let files = || FileStore::open(root.join("tokens"), &root.join("keys/key")).unwrap();
        let store = Indexed::new(files());
        store.save("tokens:https://a/mcp", "{}").unwrap();
        store.save("client:https://as", "{}").unwrap();
        let index = files().path(INDEX_KEY);
        let good = std::fs::read(&index).unwrap();
        let flipped: Vec<u8> = good.iter().enumerate().map(|(i, b)| if i == 20 { b ^ 1 } else { *b }).collect();
        for damage in [flipped, good[..good.len() / 2].to_vec(), Vec::new()] {
            std::fs::write(&index, &damage).unwrap();
            let store = Indexed::new(files());
            assert_eq!(store.keys().unwrap(), Vec::<String>::new(), "a damaged index reads as empty");
            store.save("tokens:https://b/mcp", "{}").unwrap();
            assert_eq!(store.keys().unwrap(), ["tokens:https://b/mcp"], "a new sign-in is indexed again");
            assert_eq!(store.load("tokens:https://a/mcp").unwrap().as_deref(), Some("{}"), "old records stay");
            std::fs::write(&index, &good).unwrap();
        }
        std::fs::write(&index, b"garbage").unwrap();
        assert_eq!(Indexed::new(files()).remove_all().unwrap(), 3, "every record, found without the index");
        let left: Vec<_> = std::fs::read_dir(root.join("tokens"))
            .unwrap()
            .filter_map(|e| e.ok().map(|e| e.file_name()))
            .filter(|n| n.to_string_lossy().ends_with(".record"))
            .collect();
        assert!(left.is_empty(), "{left:?}");
        let _ = std::fs::remove_dir_all(&root);
    }
}
