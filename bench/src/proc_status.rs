//! Memory figures of a process, read from Linux's `/proc/<pid>/status`.
//! (The tests have the same reader in `test-support`; the benchmarks keep
//! their own so that `mcp-bench` packages without the unpublished helper.)

/// A size field of `/proc/<pid>/status` (`VmHWM`, `VmRSS`, ...) in KiB;
/// `None` once the process is gone, or off Linux.
pub fn kib(pid: u32, field: &str) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
}
