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

/// Every living process (zombies left out) with its parent's id, read
/// from `/proc/<pid>/stat`; empty off Linux.
pub fn parents() -> Vec<(u32, u32)> {
    let Ok(entries) = std::fs::read_dir("/proc") else { return Vec::new() };
    entries
        .flatten()
        .filter_map(|entry| {
            let pid = entry.file_name().to_str()?.parse().ok()?;
            let stat = std::fs::read_to_string(entry.path().join("stat")).ok()?;
            // `pid (comm) state ppid …`: the name may hold spaces and parentheses.
            let mut fields = stat.rsplit_once(')')?.1.split_whitespace();
            let state = fields.next()?;
            let parent = fields.next()?.parse().ok()?;
            (state != "Z").then_some((pid, parent))
        })
        .collect()
}

/// The living processes among `roots` and every living process that
/// descends from them, each once, in ascending order.
pub fn trees(roots: &[u32]) -> Vec<u32> {
    let parents = parents();
    let mut found: std::collections::BTreeSet<u32> =
        roots.iter().copied().filter(|root| parents.iter().any(|(pid, _)| pid == root)).collect();
    loop {
        let before = found.len();
        for (pid, parent) in &parents {
            if found.contains(parent) {
                found.insert(*pid);
            }
        }
        if found.len() == before {
            return found.into_iter().collect();
        }
    }
}

/// The resident memory (`VmRSS`) of `pids` now, added up, in KiB; a
/// process gone counts nothing.
pub fn rss_kib(pids: &[u32]) -> u64 {
    pids.iter().filter_map(|pid| kib(*pid, "VmRSS")).sum()
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    #[test]
    fn a_tree_holds_the_root_and_its_children() {
        let mut child = std::process::Command::new("sleep").arg("30").spawn().unwrap();
        let me = std::process::id();
        let tree = trees(&[me]);
        assert!(tree.contains(&me) && tree.contains(&child.id()), "{tree:?}");
        assert!(!trees(&[child.id()]).contains(&me), "a parent is no descendant");
        assert!(rss_kib(&[me, child.id()]) > rss_kib(&[child.id()]));
        child.kill().unwrap();
        child.wait().unwrap();
        assert!(trees(&[child.id()]).is_empty(), "a process gone is no root");
    }
}
