//! Where the bridge keeps what outlives a session, per user: the XDG base
//! directories, else their defaults under `HOME`.

use std::path::PathBuf;

/// `$XDG_STATE_HOME/mcp-bridge` (else `~/.local/state/mcp-bridge`): token
/// files, the era cache.
///
/// # Errors
/// [`NoUserDir`]: neither variable is set.
pub fn state_dir() -> Result<PathBuf, NoUserDir> {
    base("XDG_STATE_HOME", ".local/state").map(|d| d.join("mcp-bridge"))
}

/// `$XDG_CONFIG_HOME/mcp-bridge` (else `~/.config/mcp-bridge`): the token
/// files' key.
///
/// # Errors
/// [`NoUserDir`]: neither variable is set.
pub fn config_dir() -> Result<PathBuf, NoUserDir> {
    base("XDG_CONFIG_HOME", ".config").map(|d| d.join("mcp-bridge"))
}

/// Neither the XDG base directory variable nor `HOME` is set, so there is
/// no per-user folder to keep things in.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("neither {variable} nor HOME is set")]
pub struct NoUserDir {
    /// The XDG variable that was looked for.
    pub variable: &'static str,
}

fn base(xdg: &'static str, fallback: &str) -> Result<PathBuf, NoUserDir> {
    if let Some(dir) = std::env::var_os(xdg).filter(|v| !v.is_empty()) {
        return Ok(PathBuf::from(dir));
    }
    let home = std::env::var_os("HOME").filter(|h| !h.is_empty()).map(PathBuf::from);
    home.map(|h| h.join(fallback)).ok_or(NoUserDir { variable: xdg })
}
