//! A 100 MiB line is answered with its id, whether the id comes first or
//! last, while the framer's memory stays a tiny fraction of the line: the
//! peak heap of the measuring thread is counted by an allocator (the test
//! harness allocates on its own threads meanwhile: reporting the other test,
//! capturing output; counting those made the bound flaky).

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

use mcp_bridge_protocol::{Frame, LineFramer, RequestId};

struct CountingAlloc;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    /// Whether this thread's allocations count (const-initialized: reading it
    /// never allocates, which matters inside the allocator). Clippy 1.96
    /// misreads the `const` block on windows-gnu (no native TLS there).
    #[allow(clippy::missing_const_for_thread_local)]
    static COUNTED: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

fn counted() -> bool {
    COUNTED.try_with(|c| c.get()).unwrap_or(false)
}

/// Counts this thread's allocations until dropped.
struct Counting;

impl Counting {
    fn start() -> Self {
        LIVE.store(0, Ordering::SeqCst);
        PEAK.store(0, Ordering::SeqCst);
        COUNTED.with(|c| c.set(true));
        Counting
    }

    fn peak(&self) -> usize {
        PEAK.load(Ordering::SeqCst)
    }
}

impl Drop for Counting {
    fn drop(&mut self) {
        COUNTED.with(|c| c.set(false));
    }
}

unsafe impl GlobalAlloc for CountingAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if !counted() {
            return unsafe { System.alloc(layout) };
        }
        let live = LIVE.fetch_add(layout.size(), Ordering::SeqCst) + layout.size();
        PEAK.fetch_max(live, Ordering::SeqCst);
        unsafe { System.alloc(layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if !counted() {
            return unsafe { System.realloc(ptr, layout, new_size) };
        }
        if new_size >= layout.size() {
            let live = LIVE.fetch_add(new_size - layout.size(), Ordering::SeqCst) + new_size - layout.size();
            PEAK.fetch_max(live, Ordering::SeqCst);
        } else {
            let shrink = layout.size() - new_size;
            let _ = LIVE.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |v| Some(v.saturating_sub(shrink)));
        }
        unsafe { System.realloc(ptr, layout, new_size) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if counted() {
            // Saturating: a block allocated before counting started may be
            // freed while counting; the live count only matters upward.
            let _ = LIVE.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |v| Some(v.saturating_sub(layout.size())));
        }
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: CountingAlloc = CountingAlloc;

/// The peak counter is global: the tests that read it take turns.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

const LINE_BYTES: usize = 100 * 1024 * 1024;
const READ_BYTES: usize = 64 * 1024;

/// Feeds `prefix`, filler up to `LINE_BYTES`, `suffix` and a newline in
/// reads of `READ_BYTES`, the way a stdio reader would; returns the frame and
/// the peak heap growth while feeding.
fn feed_huge_line(prefix: &[u8], suffix: &[u8]) -> (Frame, usize) {
    let filler = vec![b'x'; READ_BYTES];
    let counting = Counting::start();
    let mut framer = LineFramer::default();
    framer.push(prefix);
    let mut left = LINE_BYTES - prefix.len() - suffix.len();
    while left > 0 {
        let n = left.min(READ_BYTES);
        framer.push(&filler[..n]);
        left -= n;
    }
    framer.push(suffix);
    framer.push(b"\n");
    let frame = framer.next_frame().expect("one frame");
    (frame, counting.peak())
}

#[test]
fn hundred_mib_line_gives_its_id_with_bounded_memory() {
    let _turn = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    // Id first, as VS Code writes it.
    let (frame, peak) =
        feed_huge_line(br#"{"jsonrpc":"2.0","id":4711,"method":"tools/call","params":{"a":""#, br#""}}"#);
    let Frame::TooLong(line) = frame else { panic!("expected TooLong") };
    assert_eq!(line.len, LINE_BYTES);
    assert_eq!(line.recover_id(), Some(RequestId::Number(4711)));
    let first_peak = peak;

    // Id last, as the TypeScript SDK 1.x writes it.
    let (frame, peak) =
        feed_huge_line(br#"{"method":"tools/call","params":{"a":""#, br#""},"jsonrpc":"2.0","id":"req-9"}"#);
    let Frame::TooLong(line) = frame else { panic!("expected TooLong") };
    assert_eq!(line.recover_id(), Some(RequestId::from("req-9")));

    // With the default 64 MiB limit the framer must hold a line up to the
    // limit before it knows the line is too long; it never holds more (the
    // buffer stops growing at the limit and is freed when it is crossed),
    // so a 100 MiB line costs the limit plus the test's own read buffer.
    let limit = mcp_bridge_protocol::DEFAULT_MAX_LINE_BYTES;
    for p in [first_peak, peak] {
        assert!(p <= limit + 2 * READ_BYTES, "peak {p} bytes with a {limit}-byte limit");
    }
    eprintln!("peak heap growth: id first {first_peak} B, id last {peak} B");
}

#[test]
fn overlong_line_costs_at_most_the_limit_then_only_its_edges() {
    let _turn = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let filler = vec![b'y'; READ_BYTES];
    let counting = Counting::start();
    let mut framer = LineFramer::new(1024 * 1024);
    framer.push(br#"{"id":1,"method":"m","params":""#);
    for _ in 0..(LINE_BYTES / READ_BYTES) {
        framer.push(&filler);
        assert!(framer.buffered_bytes() <= 1024 * 1024);
    }
    framer.push(b"\"}\n");
    let Some(Frame::TooLong(line)) = framer.next_frame() else { panic!("expected TooLong") };
    assert_eq!(line.recover_id(), Some(RequestId::Number(1)));
    assert!(framer.buffered_bytes() == 0);
    let peak = counting.peak();
    drop(counting);
    assert!(peak <= 1024 * 1024 + 4096, "peak {peak} bytes for a 1 MiB limit");
    eprintln!("peak heap growth with a 1 MiB limit: {peak} B for a {LINE_BYTES} B line");
}
