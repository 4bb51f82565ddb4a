//! Prints the criterion results of `cargo bench -p mcp-bench` as a Markdown
//! table: each measurement beside the baseline of its group, with the ratio.
//!
//! ```sh
//! cargo bench -p mcp-bench && cargo run -p mcp-bench --bin bench-report
//! ```

use std::path::Path;

/// Each benchmark and the baseline it is compared with, in the same group.
const PAIRS: [(&str, &str, &str); 7] = [
    ("framing", "line_framer", "memchr_split"),
    ("decode", "decode_message", "serde_json_value"),
    ("memory", "tools_call", "channel_echo"),
    ("stdio", "tools_call", "cat_echo"),
    ("bridge", "through_bridge", "direct"),
    ("bridge", "embedded_legacy", "direct"),
    ("bridge", "elicitation_round", "through_bridge"),
];

fn main() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/criterion");
    println!("| group | benchmark | median | throughput | baseline | baseline median | ratio (time) |");
    println!("|---|---|---|---|---|---|---|");
    let mut missing = Vec::new();
    for (group, bench, baseline) in PAIRS {
        let (Some(b), Some(base)) = (median_ns(&root, group, bench), median_ns(&root, group, baseline)) else {
            missing.push(group);
            continue;
        };
        let throughput = match throughput_bytes(&root, group, bench) {
            Some(bytes) => format!("{:.0} MiB/s", bytes / (b / 1e9) / (1024.0 * 1024.0)),
            None => "-".to_owned(),
        };
        println!(
            "| {group} | {bench} | {} | {throughput} | {baseline} | {} | {:.2}x |",
            duration(b),
            duration(base),
            b / base
        );
    }
    if !missing.is_empty() {
        eprintln!("bench-report: no results for {missing:?}; run `cargo bench -p mcp-bench` first");
        std::process::exit(1);
    }
}

/// A duration in ns, in the unit that reads best.
fn duration(ns: f64) -> String {
    if ns >= 1e6 { format!("{:.2} ms", ns / 1e6) } else { format!("{:.1} µs", ns / 1e3) }
}

fn read_json(path: &Path) -> Option<serde_json::Value> {
    serde_json::from_str(&std::fs::read_to_string(path).ok()?).ok()
}

fn median_ns(root: &Path, group: &str, bench: &str) -> Option<f64> {
    read_json(&root.join(group).join(bench).join("new/estimates.json"))?["median"]["point_estimate"].as_f64()
}

fn throughput_bytes(root: &Path, group: &str, bench: &str) -> Option<f64> {
    read_json(&root.join(group).join(bench).join("new/benchmark.json"))?["throughput"]["Bytes"].as_f64()
}
