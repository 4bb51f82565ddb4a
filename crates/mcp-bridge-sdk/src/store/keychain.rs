//! Records in the operating system's keychain: the macOS Keychain or the
//! Windows Credential Manager (`keyring`), one entry per key under the
//! application's service name. Other systems have none here (the Linux
//! kernel keyring does not outlive the session): [`KeychainStore::works`]
//! is false there and the caller keeps records in files.

use super::{RecordStore, StoreError};

/// The keychain entries of one service name.
pub struct KeychainStore {
    service: String,
}

impl std::fmt::Debug for KeychainStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KeychainStore").field("service", &self.service).finish()
    }
}

impl KeychainStore {
    /// The entries of `service` (for example `mcp-bridge`).
    pub fn new(service: impl Into<String>) -> KeychainStore {
        KeychainStore { service: service.into() }
    }

    /// Whether the keychain works here: an entry can be written, read back
    /// and removed.
    pub fn works(&self) -> bool {
        let probe = "probe";
        let written = self.save(probe, "ok").is_ok() && self.load(probe).ok().flatten().as_deref() == Some("ok");
        let _ = self.remove(probe);
        written
    }
}

#[cfg(any(target_os = "macos", target_os = "windows"))]
fn keychain_error(error: keyring::Error) -> StoreError {
    StoreError::Keychain { reason: error.to_string() }
}

#[cfg(any(target_os = "macos", target_os = "windows"))]
impl KeychainStore {
    fn entry(&self, key: &str) -> Result<keyring::Entry, StoreError> {
        keyring::Entry::new(&self.service, key).map_err(keychain_error)
    }
}

#[cfg(any(target_os = "macos", target_os = "windows"))]
impl RecordStore for KeychainStore {
    fn load(&self, key: &str) -> Result<Option<String>, StoreError> {
        match self.entry(key)?.get_password() {
            Ok(value) => Ok(Some(value)),
            Err(keyring::Error::NoEntry) => Ok(None),
            Err(e) => Err(keychain_error(e)),
        }
    }

    fn save(&self, key: &str, value: &str) -> Result<(), StoreError> {
        self.entry(key)?.set_password(value).map_err(keychain_error)
    }

    fn remove(&self, key: &str) -> Result<(), StoreError> {
        match self.entry(key)?.delete_credential() {
            Ok(()) | Err(keyring::Error::NoEntry) => Ok(()),
            Err(e) => Err(keychain_error(e)),
        }
    }
}

/// No keychain on this system.
#[cfg(not(any(target_os = "macos", target_os = "windows")))]
impl RecordStore for KeychainStore {
    fn load(&self, _key: &str) -> Result<Option<String>, StoreError> {
        Err(StoreError::Keychain { reason: "there is none on this system".into() })
    }

    fn save(&self, _key: &str, _value: &str) -> Result<(), StoreError> {
        Err(StoreError::Keychain { reason: "there is none on this system".into() })
    }

    fn remove(&self, _key: &str) -> Result<(), StoreError> {
        Err(StoreError::Keychain { reason: "there is none on this system".into() })
    }
}
