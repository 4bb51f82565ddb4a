//! The bridge: a stdio server of revision 2025-11-25 for legacy clients (VS
//! Code, Claude Desktop, Cursor) in front of a 2026-07-28 server.
//!
//! # Layout
//!
//! - [`connectors`]: the upstreams the executable reaches: a child on
//!   stdio, a URL with its sign-in.
//! - [`signin`]: the sign-in at an HTTP upstream (the OAuth client's
//!   authorize hook: URL check, loopback receiver, browser or consent).
//! - [`gateway`]: many servers as one (`--config`).
//! - `daemon` (Unix and Windows): one gateway per user and configuration
//!   file, shared by every client of the desktop (`mcp-bridge attach`).
//! - [`log`]: the stderr line format of the executables.
//!
//! The 2025-11-25 server itself (sessions, translation, serving both
//! revisions) is the SDK's `mcp_bridge_sdk::server::legacy`.

#![cfg_attr(not(test), warn(clippy::print_stdout, clippy::unwrap_used))]

pub mod connectors;
#[cfg(any(unix, windows))]
pub mod daemon;
pub mod front;
pub mod gateway;
pub mod log;
mod relay;
pub mod signin;
mod task_owners;
