//! Start-up and idle memory of the bridge, beside the server alone:
//! - time from spawning `mcp-bridge -- SERVER` to its initialize response,
//!   and from spawning `SERVER` to its `server/discover` response (the
//!   upstream's own share of the bridge's start-up);
//! - peak RSS (VmHWM) of the bridge process alone after one second idle,
//!   beside the server's.
//!
//! ```sh
//! cargo build --release -p mcp-bridge-cli -p mcp-example-server
//! cargo run --release -p mcp-bench --bin bridge-startup -- target/release/mcp-bridge target/release/mcp-example-server
//! ```

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}"#;
const DISCOVER: &str = r#"{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}"#;
const RUNS: usize = 7;

/// Spawns, sends one line, waits for one line; returns the child (still
/// running, stdin open) and the time to the answer.
fn first_answer(program: &str, args: &[&str], line: &str) -> std::io::Result<(Child, Duration)> {
    let started = Instant::now();
    let mut child = Command::new(program).args(args).stdin(Stdio::piped()).stdout(Stdio::piped()).spawn()?;
    let stdin = child.stdin.as_mut().ok_or_else(|| std::io::Error::other("no stdin"))?;
    writeln!(stdin, "{line}")?;
    let mut stdout = BufReader::new(child.stdout.take().ok_or_else(|| std::io::Error::other("no stdout"))?);
    let mut answer = String::new();
    stdout.read_line(&mut answer)?;
    let elapsed = started.elapsed();
    std::mem::forget(stdout);
    Ok((child, elapsed))
}

fn peak_rss_kib(pid: u32) -> Option<u64> {
    test_support::proc_status_kib(pid, "VmHWM")
}

fn median<T: Ord + Copy>(mut v: Vec<T>) -> T {
    v.sort_unstable();
    v[v.len() / 2]
}

fn main() -> std::io::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [bridge, server] = args.as_slice() else {
        eprintln!("usage: bridge-startup BRIDGE SERVER");
        std::process::exit(2);
    };
    let (mut through, mut direct, mut bridge_rss, mut server_rss) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for _ in 0..RUNS {
        let (mut child, t) = first_answer(bridge, &["--", server], INITIALIZE)?;
        through.push(t);
        std::thread::sleep(Duration::from_secs(1));
        bridge_rss.push(peak_rss_kib(child.id()).unwrap_or(0));
        drop(child.stdin.take());
        child.wait()?;
        let (mut child, t) = first_answer(server, &[], DISCOVER)?;
        direct.push(t);
        std::thread::sleep(Duration::from_secs(1));
        server_rss.push(peak_rss_kib(child.id()).unwrap_or(0));
        drop(child.stdin.take());
        child.wait()?;
    }
    let (t_bridge, t_server) = (median(through), median(direct));
    let (m_bridge, m_server) = (median(bridge_rss), median(server_rss));
    println!("| measure (median of {RUNS}) | through the bridge | server alone | ratio |");
    println!("|---|---|---|---|");
    println!(
        "| spawn to first answer (initialize / discover) | {:.1} ms | {:.1} ms | {:.2}x |",
        t_bridge.as_secs_f64() * 1e3,
        t_server.as_secs_f64() * 1e3,
        t_bridge.as_secs_f64() / t_server.as_secs_f64()
    );
    println!(
        "| peak RSS idle (bridge process / server process) | {m_bridge} KiB | {m_server} KiB | {:.2}x |",
        m_bridge as f64 / m_server as f64
    );
    Ok(())
}
