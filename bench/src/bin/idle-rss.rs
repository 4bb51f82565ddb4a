//! Peak resident memory (VmHWM) of a stdio server after it answered one
//! `server/discover` and sat idle for a second, beside `cat` doing the same
//! (the cost of any process with two pipes) as the baseline.
//!
//! ```sh
//! cargo build --release -p mcp-example-server
//! cargo run --release -p mcp-bench --bin idle-rss -- target/release/mcp-example-server
//! ```

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::time::Duration;

const DISCOVER: &str = r#"{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}"#;

/// Starts `program`, sends one line, reads one line back, idles, and returns
/// its peak resident set in KiB.
fn peak_rss_kib(program: &str) -> std::io::Result<u64> {
    let mut child = Command::new(program).stdin(Stdio::piped()).stdout(Stdio::piped()).spawn()?;
    let mut stdin = child.stdin.take().ok_or_else(|| std::io::Error::other("no stdin"))?;
    let mut stdout = BufReader::new(child.stdout.take().ok_or_else(|| std::io::Error::other("no stdout"))?);
    writeln!(stdin, "{DISCOVER}")?;
    let mut line = String::new();
    stdout.read_line(&mut line)?;
    std::thread::sleep(Duration::from_secs(1));
    let peak = test_support::proc_status_kib(child.id(), "VmHWM");
    drop(stdin);
    child.wait()?;
    peak.ok_or_else(|| std::io::Error::other("no VmHWM"))
}

fn main() -> std::io::Result<()> {
    let Some(program) = std::env::args().nth(1) else {
        eprintln!("usage: idle-rss PROGRAM");
        std::process::exit(2);
    };
    let runs = 5;
    let mut server: Vec<u64> = (0..runs).map(|_| peak_rss_kib(&program)).collect::<Result<_, _>>()?;
    let mut cat: Vec<u64> = (0..runs).map(|_| peak_rss_kib("cat")).collect::<Result<_, _>>()?;
    server.sort_unstable();
    cat.sort_unstable();
    let (s, c) = (server[runs / 2], cat[runs / 2]);
    println!("| program | peak RSS idle (median of {runs}) | baseline `cat` | ratio |");
    println!("|---|---|---|---|");
    println!("| {program} | {s} KiB | {c} KiB | {:.1}x |", s as f64 / c as f64);
    Ok(())
}
