//! A small fuzzing engine on proptest, for the stable toolchain (`cargo
//! fuzz` needs nightly): each target gets its committed seed corpus
//! replayed, then inputs made by mutating the seeds (bit flips, inserted
//! and deleted bytes, dictionary tokens, truncation, splicing) and fresh
//! random bytes, for a time budget. A failing input is shrunk by proptest
//! and written to `fuzz/crashes/`; moved into the target's corpus it
//! becomes a regression test, replayed first on every run.

#![cfg_attr(not(test), warn(clippy::print_stdout))]

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestError, TestRunner};

/// Bytes that often matter to the parsers here.
const DICTIONARY: &[&[u8]] = &[
    b"{",
    b"}",
    b"[",
    b"]",
    b"\"",
    b"\\",
    b",",
    b":",
    b"\n",
    b"\r\n",
    b"\n\n",
    b" ",
    b"\\u0000",
    b"\\ud800",
    b"\"jsonrpc\":\"2.0\"",
    b"\"id\":",
    b"\"method\":",
    b"\"params\":",
    b"\"result\":",
    b"\"error\":",
    b"null",
    b"1e999",
    b"-0",
    b"9007199254740993",
    b"data:",
    b"event:",
    b":",
    b"id:",
    b"retry:",
    b"GET ",
    b" HTTP/1.1",
    b"https://",
    b"%",
    b"#",
    b"@",
    b"\xff",
    b"\xc3\x28",
];

/// One change to a seed.
#[derive(Debug, Clone)]
enum Mutation {
    FlipBit(usize, u8),
    Insert(usize, u8),
    Delete(usize),
    Token(usize, usize),
    Truncate(usize),
    Splice(usize, usize),
    Repeat(usize, usize),
}

fn apply(seed: &[u8], others: &[Vec<u8>], mutations: &[Mutation]) -> Vec<u8> {
    let mut bytes = seed.to_vec();
    for m in mutations {
        let at = |p: usize, len: usize| if len == 0 { 0 } else { p % (len + 1) };
        match *m {
            Mutation::FlipBit(p, bit) if !bytes.is_empty() => {
                let i = p % bytes.len();
                bytes[i] ^= 1 << (bit % 8);
            }
            Mutation::Insert(p, b) => bytes.insert(at(p, bytes.len()), b),
            Mutation::Delete(p) if !bytes.is_empty() => {
                bytes.remove(p % bytes.len());
            }
            Mutation::Token(p, t) => {
                let i = at(p, bytes.len());
                let token = DICTIONARY[t % DICTIONARY.len()];
                bytes.splice(i..i, token.iter().copied());
            }
            Mutation::Truncate(p) => bytes.truncate(at(p, bytes.len())),
            Mutation::Splice(p, other) if !others.is_empty() => {
                let other = &others[other % others.len()];
                let i = at(p, bytes.len());
                bytes.truncate(i);
                bytes.extend_from_slice(&other[other.len() / 2..]);
            }
            Mutation::Repeat(p, times) if !bytes.is_empty() => {
                let i = p % bytes.len();
                let chunk = bytes[i..].to_vec();
                for _ in 0..(times % 64) {
                    bytes.extend_from_slice(&chunk);
                }
            }
            _ => {}
        }
    }
    bytes
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        (any::<usize>(), any::<u8>()).prop_map(|(p, b)| Mutation::FlipBit(p, b)),
        (any::<usize>(), any::<u8>()).prop_map(|(p, b)| Mutation::Insert(p, b)),
        any::<usize>().prop_map(Mutation::Delete),
        (any::<usize>(), any::<usize>()).prop_map(|(p, t)| Mutation::Token(p, t)),
        any::<usize>().prop_map(Mutation::Truncate),
        (any::<usize>(), any::<usize>()).prop_map(|(p, o)| Mutation::Splice(p, o)),
        (any::<usize>(), any::<usize>()).prop_map(|(p, t)| Mutation::Repeat(p, t)),
    ]
}

/// What a run did.
#[derive(Debug, Clone, Copy)]
pub struct Report {
    /// Inputs checked (seeds included).
    pub executions: u64,
    /// Seeds in the corpus.
    pub seeds: usize,
}

/// The seed corpus of a target: every file in `fuzz/corpus/<target>/`.
pub fn corpus(target: &str) -> Vec<Vec<u8>> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("corpus").join(target);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("the corpus of {target} is missing at {}: {e}", dir.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    files.sort();
    files.iter().filter_map(|f| std::fs::read(f).ok()).collect()
}

/// The time each target gets: `FUZZ_SECONDS`, 2 by default.
pub fn budget() -> Duration {
    let seconds = std::env::var("FUZZ_SECONDS").ok().and_then(|s| s.parse().ok()).unwrap_or(2.0_f64);
    Duration::from_secs_f64(seconds.max(0.0))
}

/// Runs `check` on the corpus, then on generated inputs until the budget is
/// spent. Panics with the failing input's file when `check` fails or
/// panics.
pub fn fuzz(target: &str, check: impl Fn(&[u8]) -> Result<(), String>) -> Report {
    let seeds = corpus(target);
    let mut executions = 0u64;
    for (i, seed) in seeds.iter().enumerate() {
        executions += 1;
        if let Err(why) = check(seed) {
            panic!("{target}: seed {i} of the corpus fails: {why}");
        }
    }
    let seeds_for_strategy = seeds.clone();
    let generated = prop_oneof![
        proptest::collection::vec(any::<u8>(), 0..512),
        (0..seeds.len().max(1), proptest::collection::vec(mutation(), 1..8)).prop_map(move |(i, mutations)| {
            match seeds_for_strategy.get(i) {
                Some(seed) => apply(seed, &seeds_for_strategy, &mutations),
                None => Vec::new(),
            }
        }),
    ];
    let started = Instant::now();
    let budget = budget();
    let mut round = 0u64;
    while started.elapsed() < budget {
        round += 1;
        let config = Config {
            cases: 512,
            failure_persistence: None,
            rng_seed: proptest::test_runner::RngSeed::Fixed(round),
            ..Config::default()
        };
        let mut runner = TestRunner::new(config);
        let counted = std::cell::Cell::new(0u64);
        let outcome = runner.run(&generated, |input| {
            counted.set(counted.get() + 1);
            check(&input).map_err(TestCaseError::fail)
        });
        executions += counted.get();
        if let Err(TestError::Fail(why, input)) = outcome {
            let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("crashes");
            let _ = std::fs::create_dir_all(&dir);
            let file = dir.join(format!("{target}-{round}.bin"));
            let _ = std::fs::write(&file, &input);
            panic!(
                "{target}: {why} — the shrunk input is in {} ({} bytes); move it into fuzz/corpus/{target}/ once fixed",
                file.display(),
                input.len()
            );
        }
    }
    Report { executions, seeds: seeds.len() }
}
