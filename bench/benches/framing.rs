//! Framing and decoding throughput, each beside its baseline in the same run:
//!
//! - `framing/line_framer` vs `framing/memchr_split`: the framer (limit,
//!   overlong tracking, owned lines) against a bare `memchr` split that only
//!   finds the newlines, over the same bytes fed in 64 KiB reads.
//! - `decode/decode_message` vs `decode/serde_json_value`: UTF-8 + depth
//!   check + parse + classification against a bare `serde_json` parse.
//!
//! `cargo run -p mcp-bench --bin bench-report` turns the results into ratios.

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use mcp_bridge_protocol::{CLIENT_MAX_DEPTH, LineFramer};

const READ_BYTES: usize = 64 * 1024;

/// A mix of small requests, medium results and a few 1 MiB results, about
/// 16 MiB in all: the traffic of a busy session.
fn session_bytes() -> Vec<u8> {
    let mut out = Vec::with_capacity(17 << 20);
    let small =
        br#"{"jsonrpc":"2.0","id":12345,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello"}}}"#;
    let medium = format!(
        r#"{{"jsonrpc":"2.0","id":7,"result":{{"content":[{{"type":"text","text":"{}"}}]}}}}"#,
        "m".repeat(4000)
    );
    let large = format!(
        r#"{{"jsonrpc":"2.0","id":8,"result":{{"content":[{{"type":"text","text":"{}"}}]}}}}"#,
        "L".repeat(1 << 20)
    );
    while out.len() < 16 << 20 {
        for _ in 0..200 {
            out.extend_from_slice(small);
            out.push(b'\n');
        }
        for _ in 0..50 {
            out.extend_from_slice(medium.as_bytes());
            out.push(b'\n');
        }
        out.extend_from_slice(large.as_bytes());
        out.push(b'\n');
    }
    out
}

fn framing(c: &mut Criterion) {
    let data = session_bytes();
    let mut group = c.benchmark_group("framing");
    group.throughput(Throughput::Bytes(data.len() as u64));
    group.sample_size(20);
    group.bench_function("memchr_split", |b| {
        b.iter(|| {
            let mut lines = 0usize;
            let mut carry = 0usize;
            for chunk in data.chunks(READ_BYTES) {
                let mut last = 0;
                for at in memchr::memchr_iter(b'\n', chunk) {
                    lines += 1;
                    carry = 0;
                    last = at + 1;
                }
                carry += chunk.len() - last;
            }
            black_box((lines, carry))
        })
    });
    group.bench_function("line_framer", |b| {
        b.iter(|| {
            let mut framer = LineFramer::default();
            let mut lines = 0usize;
            for chunk in data.chunks(READ_BYTES) {
                framer.push(chunk);
                while let Some(frame) = framer.next_frame() {
                    black_box(&frame);
                    lines += 1;
                }
            }
            black_box(lines)
        })
    });
    group.finish();
}

fn decode(c: &mut Criterion) {
    let data = session_bytes();
    let lines: Vec<&[u8]> = data.split(|&b| b == b'\n').filter(|l| !l.is_empty()).collect();
    let mut group = c.benchmark_group("decode");
    group.throughput(Throughput::Bytes(data.len() as u64));
    group.sample_size(10);
    group.bench_function("serde_json_value", |b| {
        b.iter(|| {
            for line in &lines {
                black_box(serde_json::from_slice::<serde_json::Value>(line).ok());
            }
        })
    });
    group.bench_function("decode_message", |b| {
        b.iter(|| {
            for line in &lines {
                black_box(mcp_bridge_protocol::decode_message(line, CLIENT_MAX_DEPTH).ok());
            }
        })
    });
    group.finish();
}

criterion_group!(benches, framing, decode);
criterion_main!(benches);
