//! The bridge's token store: encrypted files under the user's state
//! directory, indexed for logout.

/// The store of the bridge's sign-ins.
pub type Store = mcp_sdk::auth::Indexed<mcp_sdk::auth::FileStore>;

/// Where the bridge keeps its sign-ins: encrypted files in
/// `$XDG_STATE_HOME/mcp-bridge/tokens` (else `~/.local/state/…`) sealed with
/// the key in `$XDG_CONFIG_HOME/mcp-bridge/token.key` (else `~/.config/…`),
/// with an index for logout.
///
/// # Errors
/// No home directory, or the store does not open.
pub fn open() -> Result<Store, String> {
    let home = std::env::var_os("HOME").filter(|h| !h.is_empty()).map(std::path::PathBuf::from);
    let base = |xdg: &str, fallback: &str| -> Result<std::path::PathBuf, String> {
        match std::env::var_os(xdg).filter(|v| !v.is_empty()) {
            Some(dir) => Ok(std::path::PathBuf::from(dir)),
            None => home.as_ref().map(|h| h.join(fallback)).ok_or_else(|| format!("neither {xdg} nor HOME is set")),
        }
    };
    let tokens = base("XDG_STATE_HOME", ".local/state")?.join("mcp-bridge/tokens");
    let key = base("XDG_CONFIG_HOME", ".config")?.join("mcp-bridge/token.key");
    mcp_sdk::auth::FileStore::open(tokens, &key).map(mcp_sdk::auth::Indexed::new)
}

/// Forgets the tokens of the server at `url`; `true` when there were some.
///
/// # Errors
/// The store's error, or a URL that does not parse.
pub fn forget(store: &Store, url: &str) -> Result<bool, String> {
    use mcp_sdk::auth::TokenStore;
    let parsed = reqwest::Url::parse(url).map_err(|e| format!("{url:?} is not a URL: {e}"))?;
    let key = mcp_sdk::auth::store::tokens_key(&mcp_sdk::auth::discovery::canonical_resource(&parsed));
    let found = store.load(&key)?.is_some();
    store.remove(&key)?;
    Ok(found)
}
