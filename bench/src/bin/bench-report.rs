//! Prints the criterion results of `cargo bench -p mcp-bench` as a Markdown
//! table: each measurement beside the baseline of its group, with the ratio.
//!
//! ```sh
//! cargo bench -p mcp-bench && cargo run -p mcp-bench --bin bench-report
//! ```

use std::path::Path;

/// Each benchmark and the baseline it is compared with, in the same group.
const PAIRS: [(&str, &str, &str); 2] =
    [("framing", "line_framer", "memchr_split"), ("decode", "decode_message", "serde_json_value")];

fn main() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/criterion");
    println!("| group | benchmark | median | throughput | baseline | baseline median | ratio (time) |");
    println!("|---|---|---|---|---|---|---|");
    for (group, bench, baseline) in PAIRS {
        let (Some(b), Some(base)) = (median_ns(&root, group, bench), median_ns(&root, group, baseline)) else {
            eprintln!("bench-report: no results for {group}; run `cargo bench -p mcp-bench` first");
            std::process::exit(1);
        };
        let bytes = throughput_bytes(&root, group, bench).unwrap_or(0.0);
        println!(
            "| {group} | {bench} | {:.2} ms | {:.0} MiB/s | {baseline} | {:.2} ms | {:.2}x |",
            b / 1e6,
            bytes / (b / 1e9) / (1024.0 * 1024.0),
            base / 1e6,
            b / base
        );
    }
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
