//! A bounded queue of log lines in front of stderr, written by a thread of
//! its own: a stderr nobody reads costs log lines, never the bridge's
//! progress (a blocking write on a full pipe would stop every task).
//! tracing-appender does the same, but prints to stdout, the protocol's
//! channel, when its queue is full at exit; this queue never touches it.

use std::io::Write;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::Duration;

/// What the writers and the writing thread share.
#[derive(Default)]
struct Shared {
    /// Lines queued and not yet written.
    pending: Mutex<usize>,
    /// Told when `pending` reaches zero.
    drained: Condvar,
    /// Lines dropped because the queue was full.
    dropped: AtomicUsize,
}

impl Shared {
    fn pending(&self) -> MutexGuard<'_, usize> {
        self.pending.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn one_done(&self) {
        let mut pending = self.pending();
        *pending = pending.saturating_sub(1);
        if *pending == 0 {
            self.drained.notify_all();
        }
    }
}

/// The writing side, handed to the log's formatter: each event is one
/// line, queued without waiting, or dropped when the queue is full.
#[derive(Clone)]
pub(super) struct StderrQueue {
    sender: SyncSender<Vec<u8>>,
    shared: Arc<Shared>,
}

/// What the owner of the log keeps: waits for the queue to drain.
pub(super) struct Drain {
    shared: Arc<Shared>,
}

impl StderrQueue {
    /// Starts the thread that writes at most `capacity` queued lines to
    /// `sink`, in order.
    pub(super) fn start(capacity: usize, sink: impl Write + Send + 'static) -> (StderrQueue, Drain) {
        let (sender, receiver) = sync_channel(capacity);
        let shared = Arc::new(Shared::default());
        let writer = shared.clone();
        // No thread, no log: the receiver goes with the closure, so every
        // line fails to queue and is counted as dropped.
        let _ = std::thread::Builder::new().name("mcp-bridge-log".into()).spawn(move || {
            write_all(receiver, sink, &writer);
        });
        (StderrQueue { sender, shared: shared.clone() }, Drain { shared })
    }
}

fn write_all(lines: Receiver<Vec<u8>>, mut sink: impl Write, shared: &Shared) {
    // The lines queued meanwhile go out in one write: under load, one
    // system call for many lines.
    let mut batch = Vec::new();
    while let Ok(line) = lines.recv() {
        batch.extend_from_slice(&line);
        let mut count = 1;
        while let Ok(line) = lines.try_recv() {
            batch.extend_from_slice(&line);
            count += 1;
        }
        // A stderr that is closed loses the lines; there is nowhere to say so.
        let _ = sink.write_all(&batch);
        batch.clear();
        for _ in 0..count {
            shared.one_done();
        }
    }
}

impl Write for StderrQueue {
    fn write(&mut self, line: &[u8]) -> std::io::Result<usize> {
        *self.shared.pending() += 1;
        if self.sender.try_send(line.to_vec()).is_err() {
            self.shared.dropped.fetch_add(1, Ordering::Relaxed);
            self.shared.one_done();
        }
        Ok(line.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for StderrQueue {
    type Writer = StderrQueue;

    fn make_writer(&'a self) -> StderrQueue {
        self.clone()
    }
}

impl Drain {
    /// Waits at most `within` for every queued line to be written; whether
    /// they were.
    pub(super) fn wait(&self, within: Duration) -> bool {
        let pending = self.shared.pending();
        let (pending, _) =
            self.shared.drained.wait_timeout_while(pending, within, |n| *n > 0).unwrap_or_else(|e| e.into_inner());
        *pending == 0
    }

    /// The lines dropped so far because the queue was full.
    pub(super) fn dropped(&self) -> usize {
        self.shared.dropped.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A sink that writes nothing until it is opened, as a pipe nobody reads.
    struct Gated {
        open: Arc<(Mutex<bool>, Condvar)>,
        written: Arc<Mutex<Vec<u8>>>,
    }

    impl Write for Gated {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            let (open, opened) = &*self.open;
            drop(opened.wait_while(open.lock().unwrap(), |o| !*o).unwrap());
            self.written.lock().unwrap().extend_from_slice(bytes);
            Ok(bytes.len())
        }

        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_full_queue_drops_lines_without_waiting_and_the_rest_are_written_in_order() {
        let open = Arc::new((Mutex::new(false), Condvar::new()));
        let written = Arc::new(Mutex::new(Vec::new()));
        let (queue, drain) = StderrQueue::start(4, Gated { open: open.clone(), written: written.clone() });
        // The thread holds one line at the gate, the queue four more; the
        // rest are dropped, and no write waits.
        for i in 0..20 {
            queue.clone().write_all(format!("{i}\n").as_bytes()).unwrap();
        }
        assert!(!drain.wait(Duration::from_millis(50)), "nothing can be written yet");
        *open.0.lock().unwrap() = true;
        open.1.notify_all();
        assert!(drain.wait(Duration::from_secs(30)), "the queue drains once the sink takes lines");
        let text = String::from_utf8(written.lock().unwrap().clone()).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len() + drain.dropped(), 20, "{lines:?}");
        assert!((4..=5).contains(&lines.len()), "{lines:?}");
        assert_eq!(lines[..4], ["0", "1", "2", "3"], "the first lines, in order");
    }
}
