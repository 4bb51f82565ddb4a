//! The bridge's token store: the operating system's keychain when it works
//! here, else encrypted files in the folders it is given, else memory
//! (sign in again at each start); indexed for logout. What to open comes
//! in [`TokenStoreOptions`]; the command line reads it from its
//! environment (`MCP_BRIDGE_TOKEN_STORE`, `MCP_BRIDGE_KEYCHAIN_SERVICE`).

use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::Arc;

use mcp_bridge_sdk::store::{FileStore, Indexed, KeychainStore, MemoryStore, RecordStore, StoreError};

/// The store of the bridge's sign-ins.
pub type Store = Indexed<Arc<dyn RecordStore>>;

/// The keychain's service name of the bridge.
pub const KEYCHAIN_SERVICE: &str = "mcp-bridge";

/// Which store holds the sign-ins.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum StoreChoice {
    /// The keychain when it works here, else the files, else memory.
    #[default]
    FirstThatWorks,
    /// The keychain, or an error.
    Keychain,
    /// The encrypted files, or an error.
    Files,
    /// Memory: sign in again at each start.
    Memory,
}

impl FromStr for StoreChoice {
    type Err = TokenStoreError;

    /// `keychain`, `files` or `memory`; empty for the first that works.
    fn from_str(name: &str) -> Result<Self, Self::Err> {
        match name {
            "" => Ok(StoreChoice::FirstThatWorks),
            "keychain" => Ok(StoreChoice::Keychain),
            "files" => Ok(StoreChoice::Files),
            "memory" => Ok(StoreChoice::Memory),
            other => Err(TokenStoreError::UnknownStore(other.to_owned())),
        }
    }
}

/// The encrypted token files: the folder of the records and the key that
/// seals them (kept apart, so a copy of the records alone reads nothing).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenFiles {
    /// The folder of the sealed records.
    pub records: PathBuf,
    /// The key file.
    pub key: PathBuf,
}

impl TokenFiles {
    /// `tokens` in the state folder, `token.key` in the config folder.
    pub fn in_folders(state: &Path, config: &Path) -> Self {
        TokenFiles { records: state.join("tokens"), key: config.join("token.key") }
    }
}

/// What [`open()`] opens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenStoreOptions {
    /// Which store.
    pub choice: StoreChoice,
    /// The keychain's service name, so separate setups keep separate
    /// sign-ins ([`KEYCHAIN_SERVICE`] by default).
    pub keychain_service: String,
    /// Where the token files live; `None` when the user has no folder for
    /// them (then the files are not a choice).
    pub files: Option<TokenFiles>,
}

impl TokenStoreOptions {
    /// The first store that works, the default keychain service, and the
    /// token files in `files`.
    pub fn new(files: Option<TokenFiles>) -> Self {
        TokenStoreOptions { choice: StoreChoice::FirstThatWorks, keychain_service: KEYCHAIN_SERVICE.to_owned(), files }
    }
}

fn files(options: &TokenStoreOptions) -> Result<FileStore, TokenStoreError> {
    let files = options.files.as_ref().ok_or(TokenStoreError::NoFolder)?;
    Ok(FileStore::open(files.records.clone(), &files.key)?)
}

/// Why the bridge's token store cannot be opened or used.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum TokenStoreError {
    /// The keychain was asked for, and it does not work here.
    #[error("the keychain does not work here")]
    NoKeychain,
    /// A store name that names no store.
    #[error("no token store is called {0:?}; use keychain, files or memory")]
    UnknownStore(String),
    /// The token files have no folder to live in.
    #[error("the user has no home folder to keep the token files in")]
    NoFolder,
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

/// Opens the store `options` picks, or the first that works.
///
/// # Errors
/// A store that was asked for by name does not open.
pub fn open(options: &TokenStoreOptions) -> Result<Store, TokenStoreError> {
    let keychain = || KeychainStore::new(options.keychain_service.clone());
    let chosen: Arc<dyn RecordStore> = match options.choice {
        StoreChoice::Keychain => {
            let keychain = keychain();
            if !keychain.works() {
                return Err(TokenStoreError::NoKeychain);
            }
            Arc::new(keychain)
        }
        StoreChoice::Files => Arc::new(files(options)?),
        StoreChoice::Memory => Arc::new(MemoryStore::default()),
        StoreChoice::FirstThatWorks => {
            let keychain = keychain();
            if keychain.works() {
                Arc::new(keychain)
            } else {
                match files(options) {
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
