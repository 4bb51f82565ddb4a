//! The callers of tokens checked before, by the token's digest (the token
//! itself is not kept), each until its token's `exp` or the validator's
//! lifetime, whichever comes first; bounded in size. A busy client then
//! costs one check per lifetime, not one per request.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use sha2::{Digest, Sha256};
use tokio::time::Instant;

use super::Caller;

/// A token's digest: what the cache keys by.
pub(super) type TokenDigest = [u8; 32];

/// The digest of `token`.
pub(super) fn digest(token: &str) -> TokenDigest {
    Sha256::digest(token.as_bytes()).into()
}

/// Callers by token digest, at most `max` of them.
pub(super) struct CallerCache {
    entries: Mutex<HashMap<TokenDigest, (Arc<Caller>, Instant)>>,
    max: usize,
}

impl CallerCache {
    /// An empty cache of at most `max` callers.
    pub(super) fn new(max: usize) -> Self {
        CallerCache { entries: Mutex::default(), max }
    }

    fn entries(&self) -> std::sync::MutexGuard<'_, HashMap<TokenDigest, (Arc<Caller>, Instant)>> {
        self.entries.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The caller of the token with `digest`, while it is kept.
    pub(super) fn get(&self, digest: &TokenDigest) -> Option<Arc<Caller>> {
        let mut entries = self.entries();
        match entries.get(digest) {
            Some((caller, until)) if Instant::now() < *until => Some(caller.clone()),
            Some(_) => {
                entries.remove(digest);
                None
            }
            None => None,
        }
    }

    /// Keeps `caller` for `lifetime`, and never past its token's `exp`
    /// claim. When full, the expired entries go, then all of them.
    pub(super) fn insert(&self, digest: TokenDigest, caller: &Arc<Caller>, lifetime: Duration) {
        let exp = caller.claims.get("exp").and_then(serde_json::Value::as_u64);
        let left = exp.map(|exp| Duration::from_secs(exp.saturating_sub(crate::clock::unix_seconds())));
        let keep = left.map_or(lifetime, |left| left.min(lifetime));
        if keep.is_zero() || self.max == 0 {
            return;
        }
        let mut entries = self.entries();
        if entries.len() >= self.max {
            let now = Instant::now();
            entries.retain(|_, (_, until)| *until > now);
            if entries.len() >= self.max {
                entries.clear();
            }
        }
        entries.insert(digest, (caller.clone(), Instant::now() + keep));
    }

    /// Forgets every caller (the keys that vouched for them changed).
    pub(super) fn clear(&self) {
        self.entries().clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn alice() -> Arc<Caller> {
        Arc::new(Caller::new("alice", ["read"]))
    }

    #[tokio::test(start_paused = true)]
    async fn a_caller_is_kept_for_its_lifetime_and_never_past_its_tokens_exp() {
        let cache = CallerCache::new(10);
        cache.insert(digest("a"), &alice(), Duration::from_secs(30));
        let mut soon = Caller::new("alice", ["read"]);
        soon.claims.insert("exp".into(), (crate::clock::unix_seconds() + 5).into());
        let soon = Arc::new(soon);
        cache.insert(digest("b"), &soon, Duration::from_secs(30));
        assert_eq!(cache.get(&digest("a")), Some(alice()));
        tokio::time::advance(Duration::from_secs(6)).await;
        assert_eq!(cache.get(&digest("b")), None, "past the token's exp");
        assert_eq!(cache.get(&digest("a")), Some(alice()));
        tokio::time::advance(Duration::from_secs(25)).await;
        assert_eq!(cache.get(&digest("a")), None, "past the lifetime");
        cache.insert(digest("c"), &alice(), Duration::ZERO);
        assert_eq!(cache.get(&digest("c")), None, "a zero lifetime keeps nothing");
    }

    #[tokio::test(start_paused = true)]
    async fn a_full_cache_drops_the_expired_then_everything_and_clear_forgets() {
        let cache = CallerCache::new(2);
        cache.insert(digest("a"), &alice(), Duration::from_secs(1));
        cache.insert(digest("b"), &alice(), Duration::from_secs(60));
        tokio::time::advance(Duration::from_secs(2)).await;
        cache.insert(digest("c"), &alice(), Duration::from_secs(60));
        assert_eq!((cache.get(&digest("b")).is_some(), cache.get(&digest("c")).is_some()), (true, true));
        cache.insert(digest("d"), &alice(), Duration::from_secs(60));
        assert_eq!(cache.get(&digest("b")), None, "full of live entries: emptied");
        assert!(cache.get(&digest("d")).is_some());
        cache.clear();
        assert_eq!(cache.get(&digest("d")), None);
    }
}
