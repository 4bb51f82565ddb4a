//! `mcp-bridge-cli`: the same command as `mcp-bridge`, under the name of
//! the Python and Rust packages that install it. Registry clients run a
//! PyPI package as `uvx <package>`, which starts the command named like the
//! package; this one starts the `mcp-bridge` installed beside it with the
//! same arguments, standard streams and exit status.

use std::path::PathBuf;
use std::process::{Command, ExitCode};

fn main() -> ExitCode {
    let Some(bridge) = sibling() else {
        eprintln!("mcp-bridge-cli: cannot find the mcp-bridge command installed beside this one");
        return ExitCode::from(2);
    };
    let mut command = Command::new(&bridge);
    command.args(std::env::args_os().skip(1));
    run(command, &bridge)
}

/// `mcp-bridge` (`mcp-bridge.exe` on Windows) in this program's own folder.
fn sibling() -> Option<PathBuf> {
    let own = std::env::current_exe().ok()?;
    let bridge = own.with_file_name(format!("mcp-bridge{}", std::env::consts::EXE_SUFFIX));
    bridge.is_file().then_some(bridge)
}

/// Unix: become `mcp-bridge` (same process id, so the client's signals and
/// process-group handling reach it directly).
#[cfg(unix)]
fn run(mut command: Command, bridge: &std::path::Path) -> ExitCode {
    use std::os::unix::process::CommandExt;
    let error = command.exec();
    eprintln!("mcp-bridge-cli: cannot start {}: {error}", bridge.display());
    ExitCode::from(2)
}

/// Elsewhere: run it and exit with its status.
#[cfg(not(unix))]
fn run(mut command: Command, bridge: &std::path::Path) -> ExitCode {
    match command.status() {
        Ok(status) => ExitCode::from(status.code().and_then(|code| u8::try_from(code).ok()).unwrap_or(1)),
        Err(error) => {
            eprintln!("mcp-bridge-cli: cannot start {}: {error}", bridge.display());
            ExitCode::from(2)
        }
    }
}
