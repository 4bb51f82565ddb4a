//! The bridge's token store: the operating system's keychain when it works
//! here, else encrypted files under the user's state directory, else
//! memory (sign in again at each start); indexed for logout.
//! `MCP_BRIDGE_TOKEN_STORE=keychain|files|memory` picks one;
//! `MCP_BRIDGE_KEYCHAIN_SERVICE` names the keychain service (default
//! `mcp-bridge`), so separate setups keep separate sign-ins.

use std::sync::Arc;

use mcp_bridge_sdk::store::{FileStore, Indexed, KeychainStore, MemoryStore, RecordStore, StoreError};

use crate::dirs::NoUserDir;

/// The store of the bridge's sign-ins.
pub type Store = Indexed<Arc<dyn RecordStore>>;

/// The keychain's service name of the bridge.
pub const KEYCHAIN_SERVICE: &str = "mcp-bridge";

fn keychain() -> KeychainStore {
    let service = std::env::var("MCP_BRIDGE_KEYCHAIN_SERVICE").ok().filter(|s| !s.is_empty());
    KeychainStore::new(service.unwrap_or_else(|| KEYCHAIN_SERVICE.to_owned()))
}

/// The encrypted files: `tokens` in [`crate::dirs::state_dir`], sealed
/// with the key `token.key` in [`crate::dirs::config_dir`].
fn files() -> Result<FileStore, TokenStoreError> {
    let tokens = crate::dirs::state_dir()?.join("tokens");
    let key = crate::dirs::config_dir()?.join("token.key");
    Ok(FileStore::open(tokens, &key)?)
}

/// Why the bridge's token store cannot be opened or used.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum TokenStoreError {
    /// `MCP_BRIDGE_TOKEN_STORE=keychain`, and the keychain does not work here.
    #[error("the keychain does not work here")]
    NoKeychain,
    /// `MCP_BRIDGE_TOKEN_STORE` names no store.
    #[error("MCP_BRIDGE_TOKEN_STORE={0:?}; use keychain, files or memory")]
    UnknownStore(String),
    /// The token files have no folder to live in.
    #[error(transparent)]
    NoUserDir(#[from] NoUserDir),
    /// The store itself failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The server URL given to forget does not parse.
    #[error("{url:?} is not a URL: {reason}")]
    NotAUrl {
        /// What was given.
        url: String,
        /// Why it does not parse.
        reason: String,
    },
}

/// Opens the store the environment picks, or the first that works.
///
/// # Errors
/// A store that was asked for by name does not open.
pub fn open() -> Result<Store, TokenStoreError> {
    let chosen: Arc<dyn RecordStore> = match std::env::var("MCP_BRIDGE_TOKEN_STORE").ok().as_deref() {
        Some("keychain") => {
            let keychain = keychain();
            if !keychain.works() {
                return Err(TokenStoreError::NoKeychain);
            }
            Arc::new(keychain)
        }
        Some("files") => Arc::new(files()?),
        Some("memory") => Arc::new(MemoryStore::default()),
        Some(other) if !other.is_empty() => {
            return Err(TokenStoreError::UnknownStore(other.to_owned()));
        }
        _ => {
            let keychain = keychain();
            if keychain.works() {
                Arc::new(keychain)
            } else {
                match files() {
                    Ok(files) => Arc::new(files),
                    Err(e) => {
                        tracing::warn!("no keychain and no token files ({e}); sign-ins last until the bridge stops");
                        Arc::new(MemoryStore::default())
                    }
                }
            }
        }
    };
    Ok(Indexed::new(chosen))
}

/// Forgets the tokens of the server at `url`; `true` when there were some.
///
/// # Errors
/// The store's error, or a URL that does not parse.
pub fn forget(store: &Store, url: &str) -> Result<bool, TokenStoreError> {
    let parsed = reqwest::Url::parse(url)
        .map_err(|e| TokenStoreError::NotAUrl { url: url.to_owned(), reason: e.to_string() })?;
    let resource = mcp_bridge_sdk::auth::discovery::canonical_resource(&parsed);
    let found = store.load(&mcp_bridge_sdk::auth::store::tokens_key(&resource))?.is_some();
    for key in mcp_bridge_sdk::auth::store::sign_in_keys(&resource) {
        store.remove(&key)?;
    }
    Ok(found)
}
