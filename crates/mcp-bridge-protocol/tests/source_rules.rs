//! Rules over the workspace's own sources:
//!
//! - The method table is the one place method names are written: no library
//!   or program matches or sends a method by a string literal of its name (a
//!   renamed or retired method would be missed there). Tests, the benchmarks
//!   and the test-support crate may; so may comments.
//! - No Rust file of the workspace (tests included) is over 600 lines: a
//!   file that long holds more than one job and should be split by them.
//! - No public type of the libraries and programs is named twice: one name,
//!   one thing, wherever a reader meets it.
//! - The libraries read no environment variable: a program reads its own
//!   and passes them as options (a library may list the variables' names,
//!   to keep secrets from a child it starts).

use std::path::{Path, PathBuf};

use mcp_bridge_protocol::methods::METHODS;

/// The source files of the workspace's libraries and programs, but the
/// protocol crate's method table itself.
fn product_sources() -> Vec<PathBuf> {
    let crates = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut files = Vec::new();
    for entry in std::fs::read_dir(&crates).unwrap() {
        let krate = entry.unwrap().path();
        if krate.file_name().is_some_and(|name| name == "test-support") {
            continue;
        }
        collect_rust_files(&krate.join("src"), &mut files);
    }
    let table = ["method.rs", "methods.rs"].map(|file| crates.join("mcp-bridge-protocol/src").join(file));
    files.retain(|file| !table.iter().any(|t| same_file(t, file)));
    files
}

fn same_file(a: &Path, b: &Path) -> bool {
    a.canonicalize().ok() == b.canonicalize().ok()
}

fn collect_rust_files(dir: &Path, into: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries {
        let path = entry.unwrap().path();
        if path.is_dir() && !path.file_name().is_some_and(|name| name == "target" || name == "node_modules") {
            collect_rust_files(&path, into);
        } else if path.extension().is_some_and(|e| e == "rs") {
            into.push(path);
        }
    }
}

/// The code lines of a file, numbered from 1, without its test module
/// (written last, after `#[cfg(test)]`) and without comment lines.
fn code_of(text: &str) -> Vec<(usize, &str)> {
    let code = text.split("#[cfg(test)]").next().unwrap_or_default();
    code.lines()
        .enumerate()
        .map(|(i, line)| (i + 1, line))
        .filter(|(_, line)| !line.trim_start().starts_with("//"))
        .collect()
}

#[test]
fn no_method_name_is_written_outside_the_method_table() {
    let files = product_sources();
    assert!(files.len() > 100, "the workspace's sources were found: {}", files.len());
    let mut found = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap();
        for (number, line) in code_of(&text) {
            if METHODS.iter().any(|method| line.contains(&format!("\"{}\"", method.name))) {
                found.push(format!("{}:{number}: {}", file.display(), line.trim()));
            }
        }
    }
    assert!(
        found.is_empty(),
        "method names written as literals (use the method's type, `ToolsList::NAME`):\n{}",
        found.join("\n")
    );
}

/// The name of the public type a code line defines (`pub struct Name`,
/// `pub enum`, `pub trait`, `pub type`), if it defines one.
fn public_type_named(line: &str) -> Option<&str> {
    let rest = line.trim_start().strip_prefix("pub ")?;
    let rest = ["struct ", "enum ", "trait ", "type "].iter().find_map(|kind| rest.strip_prefix(kind))?;
    let end = rest.find(|c: char| !(c.is_alphanumeric() || c == '_')).unwrap_or(rest.len());
    Some(&rest[..end])
}

#[test]
fn no_public_type_is_named_twice() {
    let mut defined: std::collections::BTreeMap<String, Vec<String>> = Default::default();
    for file in product_sources() {
        let text = std::fs::read_to_string(&file).unwrap();
        for (number, line) in code_of(&text) {
            if let Some(name) = public_type_named(line) {
                defined.entry(name.to_owned()).or_default().push(format!("{}:{number}", file.display()));
            }
        }
    }
    assert!(defined.len() > 100, "the public types were found: {}", defined.len());
    let twice: Vec<String> = defined
        .iter()
        .filter(|(_, places)| places.len() > 1)
        .map(|(name, places)| format!("{name}: {}", places.join(", ")))
        .collect();
    assert!(twice.is_empty(), "public types named twice (give each its own name):\n{}", twice.join("\n"));
}

#[test]
fn no_library_reads_an_environment_variable() {
    let crates = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut files = Vec::new();
    for library in ["mcp-bridge-protocol", "mcp-bridge-sdk", "mcp-bridge"] {
        collect_rust_files(&crates.join(library).join("src"), &mut files);
    }
    assert!(files.len() > 100, "the libraries' sources were found: {}", files.len());
    let mut found = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap();
        for (number, line) in code_of(&text) {
            if ["env::var(", "env::var_os("].iter().any(|read| line.contains(read)) {
                found.push(format!("{}:{number}: {}", file.display(), line.trim()));
            }
        }
    }
    assert!(found.is_empty(), "environment reads in a library (take an option instead):\n{}", found.join("\n"));
}

/// The most lines a Rust file of the workspace may have.
const MAX_LINES: usize = 600;

/// Every Rust file of the workspace's members, tests and benchmarks
/// included (not what Cargo builds into `target/` or installs into `.peers/`).
fn workspace_sources(root: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for member in ["bench", "conformance", "crates", "fuzz"] {
        collect_rust_files(&root.join(member), &mut files);
    }
    files
}

#[test]
fn no_source_file_is_over_600_lines() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().unwrap();
    let files = workspace_sources(&root);
    assert!(files.len() > 200, "the workspace's sources were found: {}", files.len());
    let mut long: Vec<String> = files
        .iter()
        .filter_map(|file| {
            let lines = std::fs::read_to_string(file).unwrap().lines().count();
            let name = file.strip_prefix(&root).unwrap_or(file);
            (lines > MAX_LINES).then(|| format!("{} ({lines} lines)", name.display()))
        })
        .collect();
    long.sort();
    assert!(long.is_empty(), "files over {MAX_LINES} lines (split them by job):\n{}", long.join("\n"));
}

#[test]
fn the_scan_sees_a_literal_and_skips_tests_and_comments() {
    let source =
        "fn f() -> &'static str { \"tools/list\" }\n// \"tools/call\"\n#[cfg(test)]\nmod tests { \"prompts/get\" }";
    let code: Vec<&str> = code_of(source).into_iter().map(|(_, line)| line).collect();
    assert_eq!(code, ["fn f() -> &'static str { \"tools/list\" }"]);
    assert_eq!(public_type_named("    pub struct LegacyLink {"), Some("LegacyLink"));
    assert_eq!(public_type_named("pub enum Era<T> {"), Some("Era"));
    assert_eq!(public_type_named("pub(crate) struct Slots {"), None);
}
