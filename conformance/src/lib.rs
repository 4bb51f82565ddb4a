//! What the official MCP conformance suite runs against: a server with the
//! suite's named tools, prompts and resources, and a client that plays the
//! suite's client scenarios, both built on `mcp-bridge-sdk` and Streamable HTTP.
//! `scripts/conformance` runs the suite against them.

#![cfg_attr(not(test), warn(clippy::print_stdout, clippy::unwrap_used))]

pub mod everything;
mod legacy_tools;
pub mod player;
mod tasks;
