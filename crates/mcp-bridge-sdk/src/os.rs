//! What differs between operating systems, in one place: a child's
//! process tree and how it is stopped, and files only their owner may
//! read. Linux is built and tested natively; Windows is built and its
//! tests run under Wine, macOS is checked (`scripts/check-platforms`).

use std::fs;
use std::io;
use std::path::Path;

/// How a child's process tree is told to stop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stop {
    /// Asked to end (SIGTERM on Unix).
    Ask,
    /// Ended at once (SIGKILL on Unix).
    Force,
}

/// A child's process tree: on Unix the process group the child leads, on
/// Windows a job object the child (and so whatever it starts) belongs to.
/// The job ends its processes when its last handle closes, so the tree
/// stops with this process even when this process is killed.
#[derive(Debug)]
pub(crate) struct ProcessTree {
    pid: u32,
    /// Taken (and so closed, which ends the tree) by a forced stop.
    #[cfg(windows)]
    job: std::sync::Mutex<Option<win32job::Job>>,
}

impl ProcessTree {
    /// The child's process id (on Unix also its process group's).
    pub(crate) fn pid(&self) -> u32 {
        self.pid
    }

    /// Stops the tree. A tree that no longer exists is not an error.
    pub(crate) fn stop(&self, how: Stop) {
        #[cfg(windows)]
        if how == Stop::Force {
            let job = self.job.lock().unwrap_or_else(|e| e.into_inner()).take();
            if job.is_some() {
                // Closing the job's handle ends every process in it.
                drop(job);
                return;
            }
        }
        stop_tree(self.pid, how);
    }
}

/// Spawns `command` as the root of a tree of its own: on Unix in a new
/// process group, on Windows assigned to a new job object that kills its
/// processes when closed (a job that cannot be made leaves the tree to be
/// followed by `taskkill` instead, with a warning). The child is assigned
/// right after it starts; what it starts after that is in the job too.
///
/// On Linux the child also ends when this process does, even by SIGKILL
/// (`PR_SET_PDEATHSIG`): no server outlives a killed bridge or daemon.
/// The kernel ties that to the thread that spawned the child; here that
/// is a runtime's thread, which lives as long as the runtime (the SDK
/// spawns no process from `spawn_blocking`'s threads, which come and go).
pub(crate) fn spawn_tree(command: &mut tokio::process::Command) -> io::Result<(tokio::process::Child, ProcessTree)> {
    #[cfg(unix)]
    command.process_group(0);
    #[cfg(target_os = "linux")]
    {
        let parent = std::process::id();
        // SAFETY: the closure runs in the child between fork and exec and
        // calls only prctl(2) and getppid(2), both async-signal-safe.
        unsafe {
            command.pre_exec(move || {
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                    return Err(io::Error::last_os_error());
                }
                // This process died before the line above: nobody waits for the child.
                if u32::try_from(libc::getppid()).ok() != Some(parent) {
                    return Err(io::Error::from_raw_os_error(libc::ESRCH));
                }
                Ok(())
            });
        }
    }
    let child = command.spawn()?;
    let tree = ProcessTree {
        pid: child.id().unwrap_or(0),
        #[cfg(windows)]
        job: std::sync::Mutex::new(kill_on_close_job(&child)),
    };
    Ok((child, tree))
}

/// A job object holding `child` that ends its processes when closed.
#[cfg(windows)]
fn kill_on_close_job(child: &tokio::process::Child) -> Option<win32job::Job> {
    let handle = child.raw_handle()?;
    let job = (|| {
        let mut limits = win32job::ExtendedLimitInfo::new();
        limits.limit_kill_on_job_close();
        let job = win32job::Job::create_with_limit_info(&limits)?;
        job.assign_process(handle as isize)?;
        Ok::<_, win32job::JobError>(job)
    })();
    job.map_err(|e| tracing::warn!("the server's process tree has no job object ({e}); taskkill follows it instead"))
        .ok()
}

/// Stops the process tree of the child `pid` (on Unix its process group;
/// on Windows the tree `taskkill` follows). A tree that no longer exists
/// is not an error.
pub(crate) fn stop_tree(pid: u32, how: Stop) {
    #[cfg(unix)]
    if let Ok(group) = libc::pid_t::try_from(pid)
        && group > 0
    {
        let signal = match how {
            Stop::Ask => libc::SIGTERM,
            Stop::Force => libc::SIGKILL,
        };
        // SAFETY: kill(2) with a negative pid signals a process group; it
        // touches no memory of this process.
        unsafe {
            libc::kill(-group, signal);
        }
    }
    #[cfg(windows)]
    {
        // taskkill follows the tree (/T); /F does not ask first.
        let mut command = std::process::Command::new("taskkill");
        command.args(["/PID", &pid.to_string(), "/T"]);
        if how == Stop::Force {
            command.arg("/F");
        }
        command
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null());
        if let Ok(mut child) = command.spawn() {
            std::thread::spawn(move || child.wait());
        }
    }
    #[cfg(not(any(unix, windows)))]
    let _ = (pid, how);
}

/// Creates `dir` and its parents, and makes `dir` readable by its owner
/// only where the system has permission bits (on Windows the folders of
/// a user's profile are the user's by their inherited access lists).
pub(crate) fn create_private_dir_all(dir: &Path) -> io::Result<()> {
    fs::create_dir_all(dir)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        fs::set_permissions(dir, fs::Permissions::from_mode(0o700))?;
    }
    Ok(())
}

/// Options that create a file (or empty it) readable by its owner only,
/// where the system has permission bits.
pub(crate) fn private_file_options() -> fs::OpenOptions {
    let mut options = fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    options
}

/// The process's limit of open files (RLIMIT_NOFILE) as `(soft, hard)`;
/// `None` where it cannot be read.
#[allow(clippy::unnecessary_cast)] // rlim_t is u64 on Linux, not on every Unix.
pub(crate) fn open_files_limit() -> Option<(u64, u64)> {
    #[cfg(unix)]
    {
        let mut limit = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
        // SAFETY: getrlimit writes the struct it is given, nothing else.
        let read = unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) };
        (read == 0).then_some((limit.rlim_cur as u64, limit.rlim_max as u64))
    }
    #[cfg(not(unix))]
    None
}

/// Raises the soft limit of open files to the hard limit (no privilege
/// needed); the soft limit now, or `None` where it cannot be read.
#[allow(clippy::unnecessary_cast)] // rlim_t is u64 on Linux, not on every Unix.
pub(crate) fn raise_open_files_limit() -> Option<u64> {
    #[cfg(unix)]
    {
        let (soft, hard) = open_files_limit()?;
        if soft < hard {
            let raised = libc::rlimit { rlim_cur: hard as libc::rlim_t, rlim_max: hard as libc::rlim_t };
            // SAFETY: setrlimit reads the struct it is given, nothing else.
            if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &raised) } == 0 {
                return Some(hard);
            }
        }
        Some(soft)
    }
    #[cfg(not(unix))]
    None
}
