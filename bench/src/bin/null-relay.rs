//! The null relay of the stdio scenario: starts `PROGRAM ARGS` and copies
//! bytes between its own stdin/stdout and the program's, parsing nothing.
//! What no separate bridge process can beat: two more pipe hops and two
//! more process wake-ups per message.
//!
//! ```sh
//! null-relay -- PROGRAM [ARGS...]
//! ```

use std::io;
use std::process::{Command, ExitCode, Stdio};

fn main() -> ExitCode {
    let mut args = std::env::args_os().skip(1).skip_while(|a| a != "--").skip(1);
    let Some(program) = args.next() else {
        eprintln!("usage: null-relay -- PROGRAM [ARGS...]");
        return ExitCode::from(2);
    };
    let mut child = match Command::new(&program).args(args).stdin(Stdio::piped()).stdout(Stdio::piped()).spawn() {
        Ok(child) => child,
        Err(e) => {
            eprintln!("null-relay: {}: {e}", program.to_string_lossy());
            return ExitCode::FAILURE;
        }
    };
    let (Some(mut to_child), Some(mut from_child)) = (child.stdin.take(), child.stdout.take()) else {
        return ExitCode::FAILURE;
    };
    // stdin → child on its own thread; dropping the child's stdin at our
    // end of input lets it exit, which ends the copy back.
    std::thread::spawn(move || io::copy(&mut io::stdin().lock(), &mut to_child));
    let _ = io::copy(&mut from_child, &mut io::stdout().lock());
    match child.wait() {
        Ok(status) if status.success() => ExitCode::SUCCESS,
        _ => ExitCode::FAILURE,
    }
}
