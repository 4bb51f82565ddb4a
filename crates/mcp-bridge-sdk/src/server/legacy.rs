//! The server's 2025-11-25 half: what a client of that revision sends
//! (`initialize`, sessions, `logging/setLevel`, subscriptions) and how it
//! is served from a 2026-07-28 server: this process's own (the embedded
//! bridge), a child or a URL (the `mcp-bridge` product).
//!
//! - [`classify`]: the class of every method and notification such a
//!   client sends, and the params read from them. No I/O.
//! - [`translate`]: capability masks, the initialize result, forwarded
//!   params, the result rules and the error table. No I/O.
//! - `input`: the checks of the upstream's input requests and of the
//!   client's answers. No I/O.
//! - `session`: one legacy client at the level of messages: lifecycle,
//!   request slots, input rounds, forwarding; one lock for its state.
//! - [`frontend`]: one client's lines to its session (stdio, a socket).
//! - `notify`: the upstream's listen stream as the client's change
//!   notifications.
//! - [`upstream`]: the SDK client toward the 2026-07-28 server, on an
//!   in-memory link or what a [`upstream::Connect`] opens.
//! - `watch`: the info lines about requests that wait long.
//! - [`embed`]: one connection of an SDK server for legacy and modern
//!   clients alike (the embedded bridge), on stdio and over HTTP.
//! - [`profile`]: the values that differ between client families.

pub mod classify;
pub mod embed;
pub mod frontend;
pub(crate) mod input;
pub(crate) mod notify;
pub mod profile;
pub(crate) mod session;
pub mod translate;
pub mod upstream;
pub(crate) mod watch;

pub use frontend::{FrontendOptions, Hooks, RunOutcome, Timeouts, run};
pub use profile::Profile;
pub use upstream::UpstreamConfig;
