//! Latency samples and the figures drawn from them.

use std::time::Duration;

/// One measured run: how many calls completed per second and their latencies.
#[derive(Clone, Debug, Default)]
pub struct Run {
    /// Calls completed per second of the measured window.
    pub per_second: f64,
    /// Latencies of the calls sent in the measured window, sorted.
    pub latencies: Vec<Duration>,
}

impl Run {
    /// A run from unsorted latencies taken over `window`.
    pub fn new(mut latencies: Vec<Duration>, window: Duration) -> Run {
        latencies.sort_unstable();
        let per_second = latencies.len() as f64 / window.as_secs_f64().max(f64::MIN_POSITIVE);
        Run { per_second, latencies }
    }

    /// The latency below which the fraction `q` of the calls fell.
    pub fn percentile(&self, q: f64) -> Duration {
        percentile(&self.latencies, q)
    }

    /// Median latency.
    pub fn p50(&self) -> Duration {
        self.percentile(0.50)
    }

    /// 99th percentile latency.
    pub fn p99(&self) -> Duration {
        self.percentile(0.99)
    }
}

/// The value below which the fraction `q` of `sorted` falls (zero when empty).
pub fn percentile(sorted: &[Duration], q: f64) -> Duration {
    let index = ((sorted.len() as f64 * q) as usize).min(sorted.len().saturating_sub(1));
    sorted.get(index).copied().unwrap_or_default()
}

/// The median of several runs, ordered by `key`; `None` when there are none.
pub fn median_by<T>(mut runs: Vec<T>, key: impl Fn(&T) -> f64) -> Option<T> {
    runs.sort_by(|a, b| key(a).total_cmp(&key(b)));
    let middle = runs.len() / 2;
    (!runs.is_empty()).then(|| runs.swap_remove(middle))
}

/// The median of several values (zero when empty).
pub fn median(values: &[f64]) -> f64 {
    median_by(values.to_vec(), |v| *v).unwrap_or(0.0)
}

/// Milliseconds, for tables.
pub fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1e3
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_of_a_known_run() {
        let latencies = (1..=100).rev().map(Duration::from_millis).collect();
        let run = Run::new(latencies, Duration::from_secs(2));
        assert_eq!(run.per_second, 50.0);
        assert_eq!(run.p50(), Duration::from_millis(51));
        assert_eq!(run.p99(), Duration::from_millis(100));
        assert_eq!(Run::default().p99(), Duration::ZERO);
    }

    #[test]
    fn median_takes_the_middle_value() {
        assert_eq!(median(&[5.0, 1.0, 3.0]), 3.0);
        assert_eq!(median(&[]), 0.0);
        assert_eq!(median_by(vec![(1, 9.0), (2, 1.0), (3, 4.0)], |r| r.1).map(|r| r.0), Some(3));
    }
}
