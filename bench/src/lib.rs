//! Benchmarks of mcp-bridge and the SDK side by side with what users would
//! run instead: the pieces of the `side-by-side` driver (programs under
//! test spoken to over stdio or HTTP, latency statistics, tables, charts)
//! and its scenarios. Every figure is a median of several runs next to a
//! baseline measured in the same run.

pub mod chart;
pub mod http_load;
pub mod proc_status;
pub mod programs;
pub mod report;
pub mod scenarios;
pub mod stats;
pub mod stdio_peer;
