//! `--config FILE` followed while the bridge runs: the gateway started
//! from the file, then each new version of the file read and applied
//! ([`mcp_bridge::gateway::Gateway::reload`]); the daemon's file too
//! ([`follow`]). A file that cannot be used
//! is refused with why in the log, and the running servers stay as they
//! are until a good version comes.
//!
//! The file's folder is watched, not the file: editors save by writing a
//! new file and renaming it over the old one, which a watch on the old
//! file would not see.

use std::path::{Path, PathBuf};
use std::time::Duration;

use mcp_bridge::gateway::Gateway;
use mcp_bridge_sdk::task_group::TaskGroup;
use mcp_bridge_sdk::toolset::config::{self, ConfigFile};
use notify::Watcher;
use tokio::sync::mpsc;

use crate::sign_ins::SignIns;

/// How long the file must be left alone before it is read: a save is
/// often several writes, and a half-written file would be refused for
/// nothing.
const SETTLE: Duration = Duration::from_millis(200);

/// The gateway of `--config`: its server, the servers of the file as it
/// was at the start, and the file.
#[derive(Debug)]
pub(crate) struct GatewayJob {
    /// The gateway's server (the upstream of the bridge, in memory).
    pub(crate) server: mcp_bridge_sdk::Server,
    /// The file's servers and choices.
    pub(crate) config: ConfigFile,
    /// The file, followed for changes.
    pub(crate) file: PathBuf,
    /// The sign-ins of its servers at a URL (none behind `--listen`: its
    /// clients are not the user at this computer).
    pub(crate) sign_ins: Option<SignIns>,
}

/// Reads and checks the configuration file; its servers at a URL get the
/// sign-ins of `sign_ins`, when given.
///
/// # Errors
/// Why it cannot be used, naming the file.
pub(crate) fn read(file: &Path, sign_ins: Option<&SignIns>) -> Result<ConfigFile, String> {
    let text =
        std::fs::read_to_string(file).map_err(|e| format!("--config {}: cannot be read ({e})", file.display()))?;
    let mut config = config::parse_file(&text, |name| std::env::var(name).ok())
        .map_err(|e| format!("--config {}: {e}", file.display()))?;
    if let Some(sign_ins) = sign_ins {
        sign_ins.give(&mut config).map_err(|e| format!("--config {}: {e}", file.display()))?;
    }
    Ok(config)
}

/// Starts the gateway's servers (returns once each answered or failed its
/// first attempt), then follows the file on `tasks`. `protected`: the
/// clients' requests carry tokens, which `authorize` rules need. `observe`
/// makes the observer of each server's requests.
pub(crate) async fn start(
    job: GatewayJob,
    protected: bool,
    tasks: &TaskGroup,
    observe: Option<mcp_bridge::gateway::UpstreamObserver>,
) -> Gateway {
    if !protected && let Some(entry) = job.config.servers.iter().find(|e| !e.authorize.is_empty()) {
        tracing::warn!(
            "--config {}: the \"authorize\" rules of {:?} apply only behind --listen-auth-issuer; here every tool is open to the client",
            job.file.display(),
            entry.name
        );
    }
    let gateway = mcp_bridge::gateway::start(job.config, tasks, observe).await;
    gateway.serve(&job.server, mcp_bridge::gateway::Shown::Every, tasks).await;
    let followed = gateway.clone();
    follow(job.file, job.sign_ins, tasks, move |config| {
        let gateway = followed.clone();
        async move {
            let changed = gateway.reload(config).await;
            if changed.is_empty() { "saved without a change".to_owned() } else { format!("applied: {changed}") }
        }
    });
    gateway
}

/// Follows `file` on `tasks`: each settled version that can be used (its
/// servers at a URL given `sign_ins`) goes to `apply`, whose answer the log
/// says; one that cannot is refused with why in the log. When the file
/// cannot be watched, the log says so.
pub(crate) fn follow<F, Fut>(file: PathBuf, sign_ins: Option<SignIns>, tasks: &TaskGroup, mut apply: F)
where
    F: FnMut(ConfigFile) -> Fut + Send + 'static,
    Fut: Future<Output = String> + Send,
{
    let (watcher, mut changes) = match watch(&file) {
        Ok(watched) => watched,
        Err(error) => {
            tracing::warn!("--config {}: not watched ({error}); restart mcp-bridge to apply a change", file.display());
            return;
        }
    };
    tracing::info!("--config {}: watched; a saved change is applied", file.display());
    tasks.spawn(async move {
        // Watching for as long as the task lives.
        let _watcher = watcher;
        while changes.recv().await.is_some() {
            // Until the file has been left alone for SETTLE.
            while let Ok(Some(())) = tokio::time::timeout(SETTLE, changes.recv()).await {}
            if !file.exists() {
                // Removed, or between an editor's delete and its new file.
                continue;
            }
            match read(&file, sign_ins.as_ref()) {
                Ok(config) => {
                    let outcome = apply(config).await;
                    tracing::info!("--config {}: {outcome}", file.display());
                }
                Err(why) => tracing::error!("{why}; not applied, the servers stay as they were"),
            }
        }
    });
}

/// A watch on the folder of `file`, and the channel that says the file
/// changed.
fn watch(file: &Path) -> notify::Result<(notify::RecommendedWatcher, mpsc::Receiver<()>)> {
    let name = file.file_name().map(ToOwned::to_owned);
    let folder = match file.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent.to_owned(),
        _ => PathBuf::from("."),
    };
    let (changed, changes) = mpsc::channel(1);
    let mut watcher = notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
        let touches_file = match &event {
            Ok(event) => !event.kind.is_access() && event.paths.iter().any(|p| p.file_name() == name.as_deref()),
            // The watch itself went wrong: a read tells whether the file is still good.
            Err(_) => true,
        };
        if touches_file {
            // Full means a change is already waiting to be read: nothing is lost.
            let _ = changed.try_send(());
        }
    })?;
    watcher.watch(&folder, notify::RecursiveMode::NonRecursive)?;
    Ok((watcher, changes))
}
