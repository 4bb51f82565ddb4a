//! How much memory a process holds, for `mcp-bridge daemon status`.

/// The resident memory of the process `pid`, in bytes (Linux: `VmRSS`;
/// Windows: the working set); `None` where it cannot be read.
pub(super) fn resident_bytes(pid: u32) -> Option<u64> {
    #[cfg(target_os = "linux")]
    {
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
        let line = status.lines().find(|line| line.starts_with("VmRSS:"))?;
        let kib: u64 = line.trim_start_matches("VmRSS:").trim().trim_end_matches("kB").trim().parse().ok()?;
        Some(kib * 1024)
    }
    #[cfg(windows)]
    {
        use windows_sys::Win32::Foundation::CloseHandle;
        use windows_sys::Win32::System::ProcessStatus::{K32GetProcessMemoryInfo, PROCESS_MEMORY_COUNTERS};
        use windows_sys::Win32::System::Threading::{OpenProcess, PROCESS_QUERY_LIMITED_INFORMATION};
        // SAFETY: no pointer is passed; a null handle is checked.
        let process = unsafe { OpenProcess(PROCESS_QUERY_LIMITED_INFORMATION, 0, pid) };
        if process.is_null() {
            return None;
        }
        // SAFETY: a plain C struct, all zeros is a valid value.
        let mut counters: PROCESS_MEMORY_COUNTERS = unsafe { std::mem::zeroed() };
        let size = std::mem::size_of::<PROCESS_MEMORY_COUNTERS>() as u32;
        // SAFETY: `counters` holds `size` bytes; the handle is open.
        let read = unsafe { K32GetProcessMemoryInfo(process, &mut counters, size) } != 0;
        // SAFETY: opened above, closed once.
        unsafe { CloseHandle(process) };
        read.then_some(counters.WorkingSetSize as u64)
    }
    #[cfg(not(any(target_os = "linux", windows)))]
    {
        let _ = pid;
        None
    }
}

#[cfg(test)]
mod tests {
    #[test]
    #[cfg(any(target_os = "linux", windows))]
    fn this_process_holds_some_memory() {
        let bytes = super::resident_bytes(std::process::id()).unwrap();
        assert!(bytes > 1024 * 1024, "{bytes}");
    }
}
