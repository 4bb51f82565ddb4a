//! The client info and capabilities each 2026-07-28 request carries in its
//! `_meta`, made into JSON once per identity instead of once per request.

use std::sync::{Arc, Mutex, OnceLock, Weak};

use mcp_bridge_protocol::types::{ClientCapabilities, Implementation};
use serde_json::Value;

use super::options::ClientIdentity;
use super::to_json;
use crate::error::Result;

/// `clientInfo` and `clientCapabilities` of one identity, as JSON.
pub(super) struct Stamp {
    pub(super) info: Value,
    pub(super) capabilities: Value,
}

impl Stamp {
    fn of(info: &Implementation, capabilities: &ClientCapabilities) -> Result<Stamp> {
        Ok(Stamp { info: to_json(info)?, capabilities: to_json(capabilities)? })
    }
}

/// The stamps of the client's own identity and of the last identity a
/// request spoke for (a 2025-11-25 session forwards every request of its
/// client under one).
#[derive(Default)]
pub(super) struct Stamps {
    own: OnceLock<Arc<Stamp>>,
    last: Mutex<Option<(Weak<ClientIdentity>, Arc<Stamp>)>>,
}

impl Stamps {
    /// The stamp of the client's own identity (which never changes).
    pub(super) fn own(&self, info: &Implementation, capabilities: &ClientCapabilities) -> Result<Arc<Stamp>> {
        if let Some(stamp) = self.own.get() {
            return Ok(stamp.clone());
        }
        let stamp = Arc::new(Stamp::of(info, capabilities)?);
        Ok(self.own.get_or_init(|| stamp).clone())
    }

    /// The stamp of `identity`. The last one is kept with a weak pointer to
    /// its identity: while it is held, that allocation (immutable behind
    /// its `Arc`) is not reused, so the same address is the same identity.
    pub(super) fn of(&self, identity: &Arc<ClientIdentity>) -> Result<Arc<Stamp>> {
        let mut last = self.last.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((held, stamp)) = last.as_ref()
            && std::ptr::eq(held.as_ptr(), Arc::as_ptr(identity))
        {
            return Ok(stamp.clone());
        }
        let stamp = Arc::new(Stamp::of(&identity.info, &identity.capabilities)?);
        *last = Some((Arc::downgrade(identity), stamp.clone()));
        Ok(stamp)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn identity(name: &str) -> Arc<ClientIdentity> {
        Arc::new(ClientIdentity::new(Implementation::new(name, "1"), ClientCapabilities::default()))
    }

    #[test]
    fn each_identity_gets_its_own_stamp_and_the_last_is_kept() {
        let stamps = Stamps::default();
        let (a, b) = (identity("a"), identity("b"));
        let first = stamps.of(&a).unwrap();
        assert_eq!(first.info["name"], "a");
        assert!(Arc::ptr_eq(&first, &stamps.of(&a).unwrap()), "made once");
        assert_eq!(stamps.of(&b).unwrap().info["name"], "b");
        assert_eq!(stamps.of(&a).unwrap().info["name"], "a");
        // An equal identity in another allocation is stamped afresh, the same.
        let again = identity("a");
        assert_eq!(stamps.of(&again).unwrap().info, first.info);
    }
}
