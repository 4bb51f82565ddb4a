//! What the installed commands say of themselves: the book's reference of
//! every flag (`docs/src/flags.md`, each `## \`mcp-bridge ...\`` section's
//! text block is that command's `--help`; `UPDATE_BOOK=1` writes the
//! current help into the book instead of failing), and `mcp-bridge-cli`,
//! the same command under the packages' name; and the token store its
//! environment picks.

use std::path::PathBuf;
use std::process::Command;

const BRIDGE: &str = env!("CARGO_BIN_EXE_mcp-bridge");
const ALIAS: &str = env!("CARGO_BIN_EXE_mcp-bridge-cli");

fn flags_chapter() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../docs/src/flags.md")
}

fn help(command: &[&str]) -> String {
    let output = Command::new(BRIDGE).args(command).arg("--help").output().unwrap();
    assert!(output.status.success(), "{command:?} --help failed: {output:?}");
    String::from_utf8(output.stdout).unwrap().trim_end().to_owned()
}

/// The byte range of the text block under `heading`, and its text.
fn block_under(chapter: &str, heading: &str) -> (std::ops::Range<usize>, String) {
    let at = chapter.find(heading).unwrap_or_else(|| panic!("flags.md has no heading {heading:?}"));
    let open = at + chapter[at..].find("```text\n").expect("a text block under the heading") + "```text\n".len();
    let close = open + chapter[open..].find("\n```").expect("the block's end");
    (open..close, chapter[open..close].to_owned())
}

#[test]
fn the_books_flag_reference_is_each_commands_help() {
    let path = flags_chapter();
    let mut chapter = std::fs::read_to_string(&path).unwrap();
    let mut stale = Vec::new();
    let commands: [&[&str]; 7] =
        [&[], &["doctor"], &["logout"], &["attach"], &["daemon", "run"], &["daemon", "status"], &["daemon", "stop"]];
    for command in commands {
        let heading = format!("## `{}`", ["mcp-bridge"].iter().chain(command).copied().collect::<Vec<_>>().join(" "));
        let (range, documented) = block_under(&chapter, &heading);
        let current = help(command);
        if documented != current {
            stale.push(heading);
            chapter.replace_range(range, &current);
        }
    }
    if std::env::var_os("UPDATE_BOOK").is_some() {
        std::fs::write(&path, chapter).unwrap();
        return;
    }
    assert!(
        stale.is_empty(),
        "docs/src/flags.md differs from the help of {stale:?}: run UPDATE_BOOK=1 cargo test -p mcp-bridge-cli --test commands"
    );
}

/// `mcp-bridge-cli` (what `uvx mcp-bridge-cli` runs) is `mcp-bridge`: the
/// same help, the same version, the same exit status.
#[test]
fn the_command_named_like_the_package_runs_the_bridge() {
    let alias = Command::new(ALIAS).arg("--version").output().unwrap();
    let bridge = Command::new(BRIDGE).arg("--version").output().unwrap();
    assert!(alias.status.success(), "{alias:?}");
    assert_eq!(alias.stdout, bridge.stdout);
    let refused = Command::new(ALIAS).arg("--no-such-flag").output().unwrap();
    assert_eq!(refused.status.code(), Some(2), "{refused:?}");
    assert!(String::from_utf8_lossy(&refused.stderr).contains("--no-such-flag"), "{refused:?}");
}

/// The token store is picked by the command's environment, and a name that
/// names no store is refused with the variable, the name and the choices,
/// before anything is forgotten.
#[test]
fn a_token_store_the_environment_misnames_is_refused_clearly() {
    let refused =
        Command::new(BRIDGE).args(["logout", "--all"]).env("MCP_BRIDGE_TOKEN_STORE", "vault").output().unwrap();
    assert_eq!(refused.status.code(), Some(2), "{refused:?}");
    let said = String::from_utf8_lossy(&refused.stderr);
    assert!(
        said.contains("MCP_BRIDGE_TOKEN_STORE")
            && said.contains("\"vault\"")
            && said.contains("keychain, files or memory"),
        "{said}"
    );
    let memory =
        Command::new(BRIDGE).args(["logout", "--all"]).env("MCP_BRIDGE_TOKEN_STORE", "memory").output().unwrap();
    assert!(memory.status.success(), "{memory:?}");
}
