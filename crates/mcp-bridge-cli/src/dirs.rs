//! Where the command keeps what outlives a session, per user, in each
//! system's own place (the `directories` crate): on Linux the XDG base
//! directories, on macOS `~/Library/Application Support`, on Windows the
//! user's application data folders.

use std::path::{Path, PathBuf};

use directories::ProjectDirs;

/// Token files and the era cache: on Linux `$XDG_STATE_HOME/mcp-bridge`
/// (else `~/.local/state/mcp-bridge`); on macOS
/// `~/Library/Application Support/mcp-bridge`; on Windows
/// `%LOCALAPPDATA%\mcp-bridge\data`.
///
/// # Errors
/// [`NoUserDir`]: the user has no home folder.
pub(crate) fn state_dir() -> Result<PathBuf, NoUserDir> {
    let dirs = project_dirs()?;
    Ok(dirs.state_dir().unwrap_or_else(|| dirs.data_local_dir()).to_path_buf())
}

/// The token files' key: on Linux `$XDG_CONFIG_HOME/mcp-bridge` (else
/// `~/.config/mcp-bridge`); on macOS
/// `~/Library/Application Support/mcp-bridge`; on Windows
/// `%APPDATA%\mcp-bridge\config`.
///
/// # Errors
/// [`NoUserDir`]: the user has no home folder.
pub(crate) fn config_dir() -> Result<PathBuf, NoUserDir> {
    Ok(project_dirs()?.config_dir().to_path_buf())
}

/// The user has no home folder (on Unix neither `HOME` nor an entry in
/// the password database), so there is no per-user folder to keep things
/// in.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the user has no home folder to keep mcp-bridge's files in")]
pub(crate) struct NoUserDir;

fn project_dirs() -> Result<ProjectDirs, NoUserDir> {
    ProjectDirs::from_path(PathBuf::from("mcp-bridge")).ok_or(NoUserDir)
}

/// Creates `dir` (and its parents) when missing, the last one 0700.
pub(crate) fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    if dir.exists() {
        return Ok(());
    }
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder.create(dir)
}

/// Creates `dir` when missing, and checks that only this user may enter
/// it: a socket in it is then this user's alone, whoever else runs on
/// the machine.
///
/// # Errors
/// Why not, naming the folder and the fix.
#[cfg(unix)]
pub(crate) fn private_folder(dir: &Path) -> Result<(), String> {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    create_private_dir(dir).map_err(|e| format!("cannot create {} ({e})", dir.display()))?;
    // Not followed: a link (in /tmp, say) could point elsewhere later.
    let metadata = std::fs::symlink_metadata(dir).map_err(|e| format!("{} ({e})", dir.display()))?;
    if !metadata.is_dir() {
        return Err(format!("{} is not a folder (a link, say): remove it, or use another folder", dir.display()));
    }
    // SAFETY: getuid has no preconditions and cannot fail.
    let me = unsafe { libc::getuid() };
    let mode = metadata.permissions().mode() & 0o777;
    if metadata.uid() != me || mode & 0o077 != 0 {
        return Err(format!(
            "the folder {} is open to other users (mode {mode:o}, owner {}): use a folder only you can enter (chmod 700)",
            dir.display(),
            metadata.uid()
        ));
    }
    Ok(())
}
