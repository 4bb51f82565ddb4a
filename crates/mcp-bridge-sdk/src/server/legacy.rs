//! The server's 2025-11-25 half: what a client of that revision sends
//! (`initialize`, sessions, `logging/setLevel`, subscriptions) and how a
//! server built with this SDK answers it from the same registrations.
//!
//! - [`classify`]: the class of every method and notification such a
//!   client sends, and the params read from them. No I/O.
//! - [`watch`]: the info lines about forwarded requests that wait long.
//!
//! The sessions, the translation between the revisions and the embedded
//! endpoints are still in the `mcp-bridge` crate; they move here next.

pub mod classify;
pub mod watch;
