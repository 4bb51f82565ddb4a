//! The token store the command opens: the one its environment picks
//! (`MCP_BRIDGE_TOKEN_STORE=keychain|files|memory`, else the first that
//! works; `MCP_BRIDGE_KEYCHAIN_SERVICE` names the keychain service), with
//! the token files in the user's folders.

use mcp_bridge::signin::tokens::{self, Store, TokenFiles, TokenStoreOptions};

use crate::dirs;

/// Opens the store the environment picks.
///
/// # Errors
/// A message saying why the store does not open.
pub(crate) fn open() -> Result<Store, String> {
    let choice = std::env::var("MCP_BRIDGE_TOKEN_STORE").unwrap_or_default();
    let files = match (dirs::state_dir(), dirs::config_dir()) {
        (Ok(state), Ok(config)) => Some(TokenFiles::in_folders(&state, &config)),
        _ => None,
    };
    let mut options = TokenStoreOptions::new(files);
    options.choice = choice.parse().map_err(|e| format!("MCP_BRIDGE_TOKEN_STORE: {e}"))?;
    if let Some(service) = std::env::var("MCP_BRIDGE_KEYCHAIN_SERVICE").ok().filter(|s| !s.is_empty()) {
        options.keychain_service = service;
    }
    tokens::open(&options).map_err(|e| format!("the token store does not open: {e}"))
}
