//! The era each server was found to speak, so a later client of the same
//! server skips the `server/discover` probe ([`super::Era::Auto`]). Kept in
//! memory, or in a file that outlives the process (a bridge that a client
//! starts anew each session). Servers are keyed by the SHA-256 of their
//! address (URL, command line, socket path): a command line may carry a
//! secret, and the file never holds one.
//!
//! A verdict is trusted for [`VERDICT_TTL`]; a client that finds it wrong
//! (the server moved on) forgets it, and the next client probes again.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// How long a verdict is trusted: servers change era rarely, and a day
/// bounds how long a wrong one can cost a failed request.
pub const VERDICT_TTL: Duration = Duration::from_secs(24 * 60 * 60);

/// What the negotiation found a server to speak.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Verdict {
    /// Revision 2026-07-28: it answered `server/discover`.
    #[serde(rename = "2026-07-28")]
    Modern,
    /// Revision 2025-11-25: it needs `initialize`.
    #[serde(rename = "2025-11-25")]
    Legacy,
}

/// One remembered verdict.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
struct Entry {
    era: Verdict,
    /// When it was found, in seconds since the Unix epoch.
    found_at: u64,
}

/// The file's shape.
#[derive(Debug, Default, Serialize, Deserialize)]
struct Saved {
    /// Hex SHA-256 of the address → its verdict.
    servers: HashMap<String, Entry>,
}

/// The verdicts of the era negotiation per server, shared by the clients
/// given a clone ([`super::ClientOptions::era_cache`]).
#[derive(Debug, Clone, Default)]
pub struct EraCache {
    entries: Arc<Mutex<HashMap<String, Entry>>>,
    file: Option<Arc<PathBuf>>,
}

impl EraCache {
    /// A cache in memory, for the clients of this process that share it.
    pub fn in_memory() -> Self {
        EraCache::default()
    }

    /// A cache kept in `path` (JSON, written whole and replaced at once),
    /// read now when it exists. A file that cannot be read or parsed is
    /// logged and started afresh: a lost verdict costs one probe.
    pub fn in_file(path: impl Into<PathBuf>) -> Self {
        let path = path.into();
        let saved = match std::fs::read(&path) {
            Ok(bytes) => serde_json::from_slice::<Saved>(&bytes).unwrap_or_else(|e| {
                tracing::warn!(path = %path.display(), "the era cache is not valid and starts afresh: {e}");
                Saved::default()
            }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Saved::default(),
            Err(e) => {
                tracing::warn!(path = %path.display(), "the era cache cannot be read: {e}");
                Saved::default()
            }
        };
        EraCache { entries: Arc::new(Mutex::new(saved.servers)), file: Some(Arc::new(path)) }
    }

    /// The verdict for the server at `address`, if one younger than
    /// [`VERDICT_TTL`] is known.
    pub fn verdict(&self, address: &str) -> Option<Verdict> {
        let entries = self.lock();
        let entry = entries.get(&key(address))?;
        (now().saturating_sub(entry.found_at) < VERDICT_TTL.as_secs()).then_some(entry.era)
    }

    /// Remembers what the server at `address` speaks.
    pub fn record(&self, address: &str, era: Verdict) {
        let mut entries = self.lock();
        let previous = entries.insert(key(address), Entry { era, found_at: now() });
        if previous.is_none_or(|p| p.era != era) {
            self.save(&entries);
        }
    }

    /// Forgets the verdict for `address` (it proved wrong).
    pub fn forget(&self, address: &str) {
        let mut entries = self.lock();
        if entries.remove(&key(address)).is_some() {
            self.save(&entries);
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Entry>> {
        self.entries.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Writes the file, when there is one (best effort: a verdict not saved
    /// costs the next process one probe).
    fn save(&self, entries: &HashMap<String, Entry>) {
        let Some(path) = &self.file else { return };
        let saved = Saved { servers: entries.clone() };
        if let Err(e) = write_replacing(path, &saved) {
            tracing::warn!(path = %path.display(), "the era cache cannot be written: {e}");
        }
    }
}

fn write_replacing(path: &Path, saved: &Saved) -> std::io::Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let bytes = serde_json::to_vec_pretty(saved).map_err(std::io::Error::other)?;
    let temporary = path.with_extension(format!("tmp{}", std::process::id()));
    std::fs::write(&temporary, bytes)?;
    std::fs::rename(&temporary, path)
}

fn key(address: &str) -> String {
    hex::encode(Sha256::digest(address.as_bytes()))
}

fn now() -> u64 {
    crate::clock::unix_seconds()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_verdict_is_kept_per_address_and_can_be_forgotten() {
        let cache = EraCache::in_memory();
        assert_eq!(cache.verdict("http://a/mcp"), None);
        cache.record("http://a/mcp", Verdict::Legacy);
        cache.record("node server.js", Verdict::Modern);
        assert_eq!(cache.verdict("http://a/mcp"), Some(Verdict::Legacy));
        assert_eq!(cache.clone().verdict("node server.js"), Some(Verdict::Modern), "clones share it");
        cache.forget("http://a/mcp");
        assert_eq!(cache.verdict("http://a/mcp"), None);
    }

    #[test]
    fn an_old_verdict_is_not_trusted() {
        let cache = EraCache::in_memory();
        cache.lock().insert(key("x"), Entry { era: Verdict::Legacy, found_at: now() - VERDICT_TTL.as_secs() - 1 });
        assert_eq!(cache.verdict("x"), None);
    }

    #[test]
    fn a_file_keeps_verdicts_across_processes_without_the_addresses() {
        let dir = std::env::temp_dir().join(format!("mcp-era-cache-{}-{}", std::process::id(), now()));
        let path = dir.join("state/eras.json");
        EraCache::in_file(&path).record("server --token s3cret", Verdict::Legacy);
        assert_eq!(EraCache::in_file(&path).verdict("server --token s3cret"), Some(Verdict::Legacy));
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(!text.contains("s3cret") && text.contains("2025-11-25"), "{text}");
        std::fs::write(&path, "not json").unwrap();
        assert_eq!(EraCache::in_file(&path).verdict("server --token s3cret"), None, "a broken file starts afresh");
        std::fs::remove_dir_all(dir).unwrap();
    }
}
