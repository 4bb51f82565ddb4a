//! The watcher of forwarded requests (seed: Diagnostics): a request that
//! waits long gets an info line after 10 s and every 30 s after, so a user
//! reading the log sees what the client is waiting for.

use std::fmt::Display;
use std::pin::Pin;
use std::time::Duration;

use tokio::time::Instant;

/// The first note about a waiting request.
pub(crate) const FIRST_NOTE: Duration = Duration::from_secs(10);
/// The notes after the first.
pub(crate) const NOTE_EVERY: Duration = Duration::from_secs(30);

/// A forwarded request, as the watcher names it (formatted only when a
/// note is written).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Forwarded<'a> {
    /// The client's id of the request.
    pub id: &'a mcp_bridge_protocol::RequestId,
    /// Its method.
    pub method: &'a str,
}

impl Display for Forwarded<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "request {} {}", self.id, self.method)
    }
}

/// Runs `work`, writing an info line about `what` while it waits.
/// `work` is pinned by the caller: an `async fn` keeps an argument it
/// owns twice, and a request's work is its largest part.
///
/// # Cancel safety
/// Cancel safe: dropping this leaves `work`, untouched, with its caller.
pub(crate) async fn watched<F: Future>(what: impl Display, mut work: Pin<&mut F>) -> F::Output {
    let started = Instant::now();
    let mut next_note = started + FIRST_NOTE;
    loop {
        tokio::select! {
            output = work.as_mut() => return output,
            () = tokio::time::sleep_until(next_note) => {
                tracing::info!("{what}: still waiting after {} s", started.elapsed().as_secs());
                next_note += NOTE_EVERY;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn a_long_wait_is_noted_after_10_s_then_every_30_s_and_the_work_is_untouched() {
        let (lines, _guard) = test_support::LogCapture::start();
        let started = Instant::now();
        let work = std::pin::pin!(async {
            tokio::time::sleep(Duration::from_secs(75)).await;
            7
        });
        let output = watched("request 1 tools/call", work).await;
        assert_eq!(output, 7);
        assert_eq!(started.elapsed().as_secs(), 75);
        let text = lines.text();
        let notes: Vec<&str> = text.lines().filter(|l| l.contains("request 1 tools/call: still waiting")).collect();
        assert_eq!(notes.len(), 3, "{text}");
        assert!(
            notes[0].ends_with("after 10 s") && notes[1].ends_with("after 40 s") && notes[2].ends_with("after 70 s")
        );
    }
}
