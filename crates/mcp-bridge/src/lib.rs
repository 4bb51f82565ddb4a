//! The bridge: a stdio server of revision 2025-11-25 for legacy clients (VS
//! Code, Claude Desktop, Cursor) in front of a 2026-07-28 server.
//!
//! # Layout
//!
//! - [`legacy`]: what the client sends: the class of every method and
//!   notification, and the params the bridge reads itself. No I/O. (In the
//!   SDK now: `mcp_bridge_sdk::server::legacy::classify`.)
//! - [`translate`]: capability masks, the initialize result, forwarded
//!   params, the result rules and the error table. No I/O.
//! - [`input`]: the checks of the upstream's input requests and of the
//!   client's answers. No I/O.
//! - [`session`]: one legacy client at the level of messages: lifecycle,
//!   request slots, input rounds, forwarding; one lock for its state.
//! - [`frontend`]: the stdio bridge: lines of one client to its session.
//! - [`notify`]: the upstream's listen stream as the client's change
//!   notifications.
//! - [`upstream`]: the SDK client toward the 2026-07-28 server, on what a
//!   [`upstream::Connect`] opens.
//! - [`connectors`]: the upstreams the executable reaches: a child on
//!   stdio, a URL with its sign-in.
//! - [`watch`]: the info lines about requests that wait long (in the SDK
//!   now: `mcp_bridge_sdk::server::legacy::watch`).
//! - [`signin`]: the sign-in at an HTTP upstream (the OAuth client's
//!   authorize hook: URL check, loopback receiver, browser or consent).
//! - [`embed`]: one stdio connection of an SDK server, for legacy and
//!   modern clients alike (the embedded bridge).
//! - [`profile`]: the values that differ between client families.
//! - [`log`]: the stderr line format of the executables.

#![cfg_attr(not(test), warn(clippy::print_stdout, clippy::unwrap_used))]

pub mod connectors;
pub mod embed;
pub mod frontend;
pub mod gateway;
pub mod input;
pub mod log;
pub mod notify;
pub mod profile;
pub mod session;
pub mod signin;
pub mod translate;
pub mod upstream;

pub use mcp_bridge_sdk::server::legacy::{classify as legacy, watch};

pub use frontend::{FrontendOptions, Hooks, RunOutcome, Timeouts, run};
pub use profile::Profile;
pub use upstream::UpstreamConfig;
