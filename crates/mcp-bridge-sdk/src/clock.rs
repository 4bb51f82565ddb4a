//! Time for every rule of the SDK that reads it: tokio's clock, so a test
//! on a paused clock (`#[tokio::test(start_paused = true)]`) moves token
//! expiry, task lifetimes and sealed request state with
//! `tokio::time::advance` instead of waiting for real.

use std::time::{SystemTime, UNIX_EPOCH};

/// The wall-clock time on tokio's clock: the system time, moved by as far
/// as tokio's clock is ahead of (or behind) the real one. Outside a paused
/// runtime the two agree and this is `SystemTime::now()`.
pub(crate) fn system_now() -> SystemTime {
    let (paused, real) = (tokio::time::Instant::now().into_std(), std::time::Instant::now());
    let wall = SystemTime::now();
    if paused >= real { wall + (paused - real) } else { wall.checked_sub(real - paused).unwrap_or(wall) }
}

/// [`system_now`] in whole seconds since the Unix epoch.
pub(crate) fn unix_seconds() -> u64 {
    system_now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[tokio::test(start_paused = true)]
    async fn the_wall_clock_moves_with_a_paused_clock() {
        let before = system_now();
        tokio::time::advance(Duration::from_secs(3600)).await;
        let moved = system_now().duration_since(before).unwrap_or_default();
        // The two clocks are read a moment apart: microseconds either way.
        assert!(moved > Duration::from_millis(3_599_990) && moved < Duration::from_secs(3660), "{moved:?}");
    }

    #[test]
    fn outside_a_runtime_it_is_the_system_time() {
        let gap = system_now().duration_since(SystemTime::now()).unwrap_or_else(|e| e.duration());
        assert!(gap < Duration::from_secs(1), "{gap:?}");
    }
}
