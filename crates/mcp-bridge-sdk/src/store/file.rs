//! Records in encrypted files: one file per key in a directory only the
//! owner can read, named by a digest of the key (a server's URL never
//! shows in a file name), sealed with ChaCha20-Poly1305 under a key kept
//! outside that directory. A file is replaced atomically (written aside,
//! then renamed). Processes sharing the directory take turns through a
//! lock file beside the records ([`FileStore::lock`]); the key is made
//! once, under a lock of its own.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use ring::aead::{Aad, CHACHA20_POLY1305, LessSafeKey, NONCE_LEN, Nonce, UnboundKey};
use sha2::{Digest, Sha256};

use super::{RecordStore, StoreError, StoreLock};

/// The lock file in a store's directory (not a record: records end in
/// `.record`).
const LOCK_FILE: &str = ".lock";

/// The encrypted files of one directory.
pub struct FileStore {
    dir: PathBuf,
    key: LessSafeKey,
}

impl std::fmt::Debug for FileStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FileStore").field("dir", &self.dir).finish_non_exhaustive()
    }
}

fn io_error(action: &'static str, path: &Path, error: std::io::Error) -> StoreError {
    StoreError::Io { action, path: path.to_owned(), kind: error.kind(), message: error.to_string() }
}

/// Creates `dir` (and its parents) owner-only, or makes it so.
fn owner_only_dir(dir: &Path) -> Result<(), StoreError> {
    crate::os::create_private_dir_all(dir).map_err(|e| io_error("create", dir, e))
}

/// Writes `bytes` to `path` owner-only, atomically: aside under a name no
/// other process or thread writes (process id and a counter), then renamed.
fn write_private(path: &Path, bytes: &[u8]) -> Result<(), StoreError> {
    static WRITES: AtomicU64 = AtomicU64::new(0);
    let mut aside = path.as_os_str().to_owned();
    aside.push(format!(".{}-{}.tmp", std::process::id(), WRITES.fetch_add(1, Ordering::Relaxed)));
    let aside = PathBuf::from(aside);
    let mut file = crate::os::private_file_options().open(&aside).map_err(|e| io_error("write", &aside, e))?;
    let written = file.write_all(bytes).and_then(|()| file.sync_all()).map_err(|e| io_error("write", &aside, e));
    let replaced = written.and_then(|()| fs::rename(&aside, path).map_err(|e| io_error("replace", path, e)));
    if replaced.is_err() {
        let _ = fs::remove_file(&aside);
    }
    replaced
}

/// Waits for the exclusive lock of the file at `path` (made when missing):
/// held until the returned lock drops, across processes.
fn lock_exclusive(path: &Path) -> Result<StoreLock, StoreError> {
    let mut options = fs::OpenOptions::new();
    options.read(true).write(true).create(true).truncate(false);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let file = options.open(path).map_err(|e| io_error("create", path, e))?;
    file.lock().map_err(|e| io_error("lock", path, e))?;
    Ok(StoreLock { _file: file })
}

/// The key in `key_file`, made there when missing. Processes opening the
/// store for the first time at once make one key between them: whoever
/// holds the key's lock first writes it, the others read it.
fn read_or_make_key(key_file: &Path) -> Result<Vec<u8>, StoreError> {
    let read = |key_file: &Path| match fs::read(key_file) {
        Ok(bytes) if bytes.len() == 32 => Ok(Some(bytes)),
        Ok(_) => Err(StoreError::Key { reason: format!("{} is not a 32-byte key", key_file.display()) }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(io_error("read", key_file, e)),
    };
    if let Some(key) = read(key_file)? {
        return Ok(key);
    }
    if let Some(parent) = key_file.parent() {
        owner_only_dir(parent)?;
    }
    let mut lock_path = key_file.as_os_str().to_owned();
    lock_path.push(".lock");
    let _turn = lock_exclusive(Path::new(&lock_path))?;
    if let Some(key) = read(key_file)? {
        return Ok(key);
    }
    let mut key = vec![0u8; 32];
    getrandom::fill(&mut key).map_err(|e| StoreError::Key { reason: format!("no randomness for a key: {e}") })?;
    write_private(key_file, &key)?;
    Ok(key)
}

impl FileStore {
    /// A store in `dir`, sealed with the 32-byte key in `key_file` (made
    /// when missing). The key file must not be inside `dir`: whoever copies
    /// the token directory alone gets nothing readable.
    ///
    /// # Errors
    /// The key file is inside `dir`, or a file cannot be read or written.
    pub fn open(dir: impl Into<PathBuf>, key_file: &Path) -> Result<FileStore, StoreError> {
        let dir = dir.into();
        owner_only_dir(&dir)?;
        let inside = match (dir.canonicalize(), key_file.parent().map(Path::canonicalize)) {
            (Ok(dir), Some(Ok(parent))) => parent.starts_with(&dir),
            _ => key_file.starts_with(&dir),
        };
        if inside {
            return Err(StoreError::Key { reason: "the key file must not be in the folder of the records".into() });
        }
        let key = read_or_make_key(key_file)?;
        let key = UnboundKey::new(&CHACHA20_POLY1305, &key)
            .map_err(|_| StoreError::Key { reason: "the key is not valid".into() })?;
        Ok(FileStore { dir, key: LessSafeKey::new(key) })
    }

    /// Waits until no other process (or thread) holds this store's lock,
    /// then holds it until the returned lock drops: for a change that
    /// reads, then writes.
    ///
    /// # Errors
    /// The lock file cannot be made or locked.
    pub fn lock(&self) -> Result<StoreLock, StoreError> {
        lock_exclusive(&self.dir.join(LOCK_FILE))
    }

    /// The file of the record under `key`.
    pub(crate) fn path(&self, key: &str) -> PathBuf {
        let digest = Sha256::digest(key.as_bytes());
        let name = hex::encode(digest);
        self.dir.join(format!("{name}.record"))
    }
}

impl RecordStore for FileStore {
    fn load(&self, key: &str) -> Result<Option<String>, StoreError> {
        let path = self.path(key);
        let bytes = match fs::read(&path) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(io_error("read", &path, e)),
        };
        if bytes.len() < NONCE_LEN {
            return Err(StoreError::Sealed { path });
        }
        let (nonce, sealed) = bytes.split_at(NONCE_LEN);
        let nonce = Nonce::try_assume_unique_for_key(nonce).map_err(|_| StoreError::Sealed { path: path.clone() })?;
        let mut sealed = sealed.to_vec();
        // The key is the additional data: a file moved to another name
        // does not open.
        let plain = self
            .key
            .open_in_place(nonce, Aad::from(key.as_bytes()), &mut sealed)
            .map_err(|_| StoreError::Sealed { path: path.clone() })?;
        String::from_utf8(plain.to_vec()).map(Some).map_err(|_| StoreError::Sealed { path })
    }

    fn save(&self, key: &str, value: &str) -> Result<(), StoreError> {
        let mut nonce = [0u8; NONCE_LEN];
        getrandom::fill(&mut nonce)
            .map_err(|e| StoreError::Other { reason: format!("no randomness for a nonce: {e}") })?;
        let mut sealed = value.as_bytes().to_vec();
        self.key
            .seal_in_place_append_tag(Nonce::assume_unique_for_key(nonce), Aad::from(key.as_bytes()), &mut sealed)
            .map_err(|_| StoreError::Other { reason: "cannot seal the record".into() })?;
        let mut bytes = nonce.to_vec();
        bytes.extend_from_slice(&sealed);
        write_private(&self.path(key), &bytes)
    }

    fn remove(&self, key: &str) -> Result<(), StoreError> {
        remove_if_there(&self.path(key))
    }

    fn lock(&self) -> Result<Option<StoreLock>, StoreError> {
        FileStore::lock(self).map(Some)
    }

    /// Removes every record file, also one whose key nobody knows any more.
    fn clear(&self) -> Result<Option<usize>, StoreError> {
        let entries = fs::read_dir(&self.dir).map_err(|e| io_error("read", &self.dir, e))?;
        let mut removed = 0;
        for entry in entries {
            let path = entry.map_err(|e| io_error("read", &self.dir, e))?.path();
            if path.extension().is_some_and(|e| e == "record") {
                remove_if_there(&path)?;
                removed += 1;
            }
        }
        Ok(Some(removed))
    }
}

fn remove_if_there(path: &Path) -> Result<(), StoreError> {
    match fs::remove_file(path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(io_error("remove", path, e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("mcp-file-store-{}-{name}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        dir
    }

    #[test]
    fn records_are_sealed_owner_only_and_bound_to_their_key() {
        let root = temp("seal");
        let store = FileStore::open(root.join("tokens"), &root.join("keys/key")).unwrap();
        store.save("tokens:https://mcp.example.com/mcp", r#"{"access_token":"at-s3cret"}"#).unwrap();
        assert_eq!(
            store.load("tokens:https://mcp.example.com/mcp").unwrap().unwrap(),
            r#"{"access_token":"at-s3cret"}"#
        );
        assert_eq!(store.load("tokens:other").unwrap(), None);
        let files: Vec<PathBuf> = fs::read_dir(root.join("tokens")).unwrap().map(|e| e.unwrap().path()).collect();
        assert_eq!(files.len(), 1);
        let bytes = fs::read(&files[0]).unwrap();
        assert!(!String::from_utf8_lossy(&bytes).contains("s3cret"), "the file is encrypted");
        assert!(!files[0].to_string_lossy().contains("example"), "the name does not show the server");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = |p: &Path| fs::metadata(p).unwrap().permissions().mode() & 0o777;
            assert_eq!(
                (mode(&files[0]), mode(&root.join("tokens")), mode(&root.join("keys/key"))),
                (0o600, 0o700, 0o600)
            );
        }
        // Moved under another key's name, a record does not open.
        let other = store.path("tokens:other");
        fs::copy(&files[0], &other).unwrap();
        assert!(store.load("tokens:other").is_err());
        // Another key opens nothing.
        let stranger = FileStore::open(root.join("tokens"), &root.join("keys/key2")).unwrap();
        assert!(stranger.load("tokens:https://mcp.example.com/mcp").is_err());
        // The same key file opens it again (a new process).
        let again = FileStore::open(root.join("tokens"), &root.join("keys/key")).unwrap();
        assert!(again.load("tokens:https://mcp.example.com/mcp").unwrap().is_some());
        again.remove("tokens:https://mcp.example.com/mcp").unwrap();
        again.remove("tokens:https://mcp.example.com/mcp").unwrap();
        assert_eq!(again.load("tokens:https://mcp.example.com/mcp").unwrap(), None);
        let _ = fs::remove_dir_all(&root);
    }

    #[test]
    fn stores_opened_at_once_make_one_key_and_every_record_opens() {
        let root = temp("race");
        let opened: Vec<FileStore> = std::thread::scope(|scope| {
            let handles: Vec<_> = (0..8)
                .map(|_| scope.spawn(|| FileStore::open(root.join("tokens"), &root.join("keys/key")).unwrap()))
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        std::thread::scope(|scope| {
            for (n, store) in opened.iter().enumerate() {
                scope.spawn(move || store.save(&format!("tokens:{n}"), "{}").unwrap());
            }
        });
        for n in 0..opened.len() {
            assert!(opened[0].load(&format!("tokens:{n}")).unwrap().is_some(), "record {n} opens with the one key");
        }
        let names: Vec<String> = fs::read_dir(root.join("tokens"))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert!(names.iter().all(|n| n.ends_with(".record") || n == LOCK_FILE), "no file left aside: {names:?}");
        assert_eq!(opened[3].clear().unwrap(), Some(8));
        assert_eq!(opened[0].load("tokens:0").unwrap(), None);
        let _ = fs::remove_dir_all(&root);
    }

    #[test]
    fn the_key_may_not_live_with_the_tokens() {
        let root = temp("inside");
        let err = FileStore::open(root.join("tokens"), &root.join("tokens/key")).unwrap_err().to_string();
        assert!(err.contains("must not be in the folder of the records"), "{err}");
        let _ = fs::remove_dir_all(&root);
    }
}
