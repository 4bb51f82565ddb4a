//! [`StateKeys`]: the key ring that seals `requestState`, shared by every
//! replica of a server so a round started on one can be answered on another.
//!
//! The key file has one key per line, `ID SECRET`, the secret 32 random
//! bytes in base64 (standard or URL-safe, padding optional, as
//! `openssl rand -base64 32` prints it). The first key seals; every key
//! opens. Blank lines and lines starting with `#` are ignored:
//!
//! ```text
//! # mcp-example-server state keys: the first seals, all open
//! 2026-12 q0Jm1Ck8Pq3zkGm3yN7m1rWw3XlH8oQb7K9v2bT5eEc=
//! 2026-11 fZ2x0c7w1pX8Yd4nB6qV3mL9sK2jH5gT8rE1uW4oI0A=
//! ```
//!
//! Rotation, with no round in flight failing:
//! 1. add the new key as the *second* line on every replica and restart them
//!    one by one (all of them now open states sealed with it);
//! 2. move it to the first line everywhere and restart again (new states are
//!    sealed with it; states sealed with the old key still open);
//! 3. once the state lifetime has passed (an hour by default), remove the
//!    old key.

use std::path::Path;

use base64::Engine;
use base64::engine::general_purpose::STANDARD_NO_PAD;

/// The bytes of one secret.
const SECRET_LEN: usize = 32;

/// One key of a [`StateKeys`] ring: its id (written into every state it
/// seals, so the replica that opens it knows which key to use) and secret.
#[derive(Clone)]
pub struct StateKey {
    id: String,
    secret: [u8; SECRET_LEN],
}

impl std::fmt::Debug for StateKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StateKey").field("id", &self.id).finish_non_exhaustive()
    }
}

impl StateKey {
    /// A key with this id and secret.
    ///
    /// # Errors
    /// [`StateKeysError::BadId`] for an id that is empty or has white space.
    pub fn new(id: impl Into<String>, secret: [u8; SECRET_LEN]) -> Result<Self, StateKeysError> {
        let id = id.into();
        if id.is_empty() || id.chars().any(char::is_whitespace) {
            return Err(StateKeysError::BadId { line: 0, id });
        }
        Ok(StateKey { id, secret })
    }

    /// The key's id.
    pub fn id(&self) -> &str {
        &self.id
    }

    pub(crate) fn secret(&self) -> &[u8; SECRET_LEN] {
        &self.secret
    }
}

/// The keys that seal and open `requestState`: the current one seals, it
/// and the older ones open. See the module documentation for the file
/// format and the rotation procedure.
#[derive(Debug, Clone)]
pub struct StateKeys {
    current: StateKey,
    older: Vec<StateKey>,
}

/// Why a key ring could not be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StateKeysError {
    /// The file could not be read.
    #[error("cannot read the state key file {path}: {source}")]
    Read {
        /// The file.
        path: String,
        /// What the system said.
        source: std::io::Error,
    },
    /// The ring has no key.
    #[error("the state key ring has no key (one `ID SECRET` line per key)")]
    Empty,
    /// A line is not `ID SECRET`.
    #[error("line {line} of the state key ring is not `ID SECRET`")]
    BadLine {
        /// Its number, from 1.
        line: usize,
    },
    /// A key id is empty, has white space, or repeats.
    #[error("line {line} of the state key ring: the key id {id:?} is empty, has white space or repeats")]
    BadId {
        /// Its number, from 1 (0 for a key made in code).
        line: usize,
        /// The id.
        id: String,
    },
    /// A secret is not 32 bytes of base64. The secret itself is never shown.
    #[error("line {line} of the state key ring: the secret of key {id:?} is not 32 bytes of base64")]
    BadSecret {
        /// Its number, from 1.
        line: usize,
        /// The key's id.
        id: String,
    },
}

impl StateKeys {
    /// A ring of one key.
    pub fn single(key: StateKey) -> Self {
        StateKeys { current: key, older: Vec::new() }
    }

    /// A ring whose `current` key seals, and `older` keys still open.
    ///
    /// # Errors
    /// [`StateKeysError::BadId`] when two keys share an id.
    pub fn new(current: StateKey, older: Vec<StateKey>) -> Result<Self, StateKeysError> {
        let mut seen = vec![current.id.as_str()];
        for key in &older {
            if seen.contains(&key.id.as_str()) {
                return Err(StateKeysError::BadId { line: 0, id: key.id.clone() });
            }
            seen.push(&key.id);
        }
        Ok(StateKeys { current, older })
    }

    /// A ring of one fresh random key, as a process that shares its states
    /// with nobody uses.
    pub fn random() -> Self {
        let mut secret = [0u8; SECRET_LEN];
        // The OS random source failing is not recoverable for a server that
        // must protect its state; an all-zero key would be worse.
        getrandom::fill(&mut secret).expect("invariant: the OS random source is available");
        StateKeys::single(StateKey { id: "process".into(), secret })
    }

    /// Reads a ring in the key file format (see the module documentation).
    ///
    /// # Errors
    /// See [`StateKeysError`]; no error shows a secret.
    pub fn parse(text: &str) -> Result<Self, StateKeysError> {
        let mut keys = Vec::new();
        for (index, raw) in text.lines().enumerate() {
            let line = index + 1;
            let content = raw.trim();
            if content.is_empty() || content.starts_with('#') {
                continue;
            }
            let mut fields = content.split_whitespace();
            let (Some(id), Some(secret), None) = (fields.next(), fields.next(), fields.next()) else {
                return Err(StateKeysError::BadLine { line });
            };
            if keys.iter().any(|k: &StateKey| k.id == id) {
                return Err(StateKeysError::BadId { line, id: id.into() });
            }
            let secret = decode_secret(secret).ok_or_else(|| StateKeysError::BadSecret { line, id: id.into() })?;
            keys.push(StateKey { id: id.into(), secret });
        }
        let mut keys = keys.into_iter();
        let current = keys.next().ok_or(StateKeysError::Empty)?;
        Ok(StateKeys { current, older: keys.collect() })
    }

    /// Reads a key file.
    ///
    /// # Errors
    /// See [`StateKeysError`].
    pub fn from_file(path: impl AsRef<Path>) -> Result<Self, StateKeysError> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path)
            .map_err(|source| StateKeysError::Read { path: path.display().to_string(), source })?;
        StateKeys::parse(&text)
    }

    /// The key that seals.
    pub fn current(&self) -> &StateKey {
        &self.current
    }

    /// The key with this id, if the ring holds it.
    pub(crate) fn find(&self, id: &str) -> Option<&StateKey> {
        std::iter::once(&self.current).chain(&self.older).find(|k| k.id == id)
    }
}

/// The secret of a key file line: base64 in either alphabet, padded or not.
fn decode_secret(text: &str) -> Option<[u8; SECRET_LEN]> {
    let normal: String = text
        .trim_end_matches('=')
        .chars()
        .map(|c| match c {
            '-' => '+',
            '_' => '/',
            c => c,
        })
        .collect();
    STANDARD_NO_PAD.decode(normal).ok()?.try_into().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: &str = "q0Jm1Ck8Pq3zkGm3yN7m1rWw3XlH8oQb7K9v2bT5eEc=";
    const B_URL_SAFE: &str = "fZ2x0c7w1pX8Yd4nB6qV3mL9sK2jH5gT8rE1uW4oI0A";

    #[test]
    fn the_first_key_seals_and_every_key_is_found() {
        let ring = StateKeys::parse(&format!("# keys\n\n2026-12 {A}\n  2026-11   {B_URL_SAFE}  \n")).unwrap();
        assert_eq!(ring.current().id(), "2026-12");
        assert!(ring.find("2026-11").is_some());
        assert!(ring.find("2026-10").is_none());
    }

    #[test]
    fn bad_rings_are_refused_naming_the_line_and_never_the_secret() {
        let cases = [
            ("# nothing\n".to_owned(), "no key"),
            (format!("k1 {A}\nk2\n"), "line 2"),
            (format!("k1 {A} extra\n"), "line 1"),
            (format!("k1 {A}\nk1 {B_URL_SAFE}\n"), "repeats"),
            ("k1 c2hvcnQ=\n".to_owned(), "not 32 bytes"),
            ("k1 not*base64*at*all*padding*is*not*the*problem\n".to_owned(), "not 32 bytes"),
        ];
        for (text, expected) in cases {
            let error = StateKeys::parse(&text).unwrap_err().to_string();
            assert!(error.contains(expected), "{text:?}: {error}");
            assert!(!error.contains(A) && !error.contains("c2hvcnQ"), "{error}");
        }
    }

    #[test]
    fn a_missing_file_names_its_path() {
        let error = StateKeys::from_file("/nonexistent/keys").unwrap_err().to_string();
        assert!(error.contains("/nonexistent/keys"), "{error}");
    }
}
