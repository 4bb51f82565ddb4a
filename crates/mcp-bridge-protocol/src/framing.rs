//! Newline-delimited framing with a byte limit, fed bytes and drained of frames
//! (no I/O; the stdio and socket transports own the reads).
//!
//! ```text
//!  push(bytes) ──▶ current line ──'\n'──▶ Frame::Line ──▶ next_frame()
//!                      │ over max_line_bytes
//!                      ▼
//!                 OverlongLine: first and last KEPT_EDGE_BYTES, length
//!                      └──'\n'──▶ Frame::TooLong ──▶ next_frame()
//! ```
//!
//! A line over the limit is never buffered whole: from the byte that crosses
//! the limit on, only its two edges and its length are kept, so a caller can
//! still answer it with its `id` (see [`crate::recover`]) at a memory cost of
//! 512 bytes.

use std::collections::VecDeque;

use crate::RequestId;
use crate::recover;

/// Default limit of one line, in bytes without the newline: large enough for
/// the biggest tool results seen in practice, small enough to bound memory.
pub const DEFAULT_MAX_LINE_BYTES: usize = 64 * 1024 * 1024;

/// Bytes kept from each end of a line over the limit. Clients write the `id`
/// either near the start (VS Code) or as the last member (TypeScript SDK 1.x);
/// 256 bytes covers both with room for a long string id.
pub const KEPT_EDGE_BYTES: usize = 256;

/// One unit the framer hands out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Frame {
    /// A complete line within the limit, without its `\n` or a trailing `\r`.
    Line(Vec<u8>),
    /// A line over the limit, of which only the edges were kept.
    TooLong(OverlongLine),
}

/// What is left of a line over the limit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OverlongLine {
    /// Length of the whole line in bytes, without the newline.
    pub len: usize,
    /// Its first bytes, at most [`KEPT_EDGE_BYTES`].
    pub head: Vec<u8>,
    /// Its last bytes, at most [`KEPT_EDGE_BYTES`] (overlapping `head` for a
    /// line shorter than twice that).
    pub tail: Vec<u8>,
}

impl OverlongLine {
    fn start(len_limit_crossed_at: &[u8]) -> Self {
        let mut line = OverlongLine { len: 0, head: Vec::with_capacity(KEPT_EDGE_BYTES), tail: Vec::new() };
        line.extend(len_limit_crossed_at);
        line
    }

    fn extend(&mut self, piece: &[u8]) {
        self.len += piece.len();
        let room = KEPT_EDGE_BYTES - self.head.len();
        if room > 0 {
            self.head.extend_from_slice(&piece[..room.min(piece.len())]);
        }
        if piece.len() >= KEPT_EDGE_BYTES {
            self.tail.clear();
            self.tail.extend_from_slice(&piece[piece.len() - KEPT_EDGE_BYTES..]);
        } else {
            self.tail.extend_from_slice(piece);
            let excess = self.tail.len().saturating_sub(KEPT_EDGE_BYTES);
            self.tail.drain(..excess);
        }
    }

    /// The `id` of the message, found in the kept edges without a parse:
    /// first as an early member of the object, then as its last member.
    pub fn recover_id(&self) -> Option<RequestId> {
        recover::leading_id(&self.head).or_else(|| recover::trailing_id(&self.tail))
    }
}

/// Splits a byte stream into lines, enforcing a per-line byte limit.
///
/// Blank lines (empty, or only ASCII whitespace) are skipped: they carry no
/// message, and some peers write one after each frame.
#[derive(Debug)]
pub struct LineFramer {
    /// Lines longer than this become [`Frame::TooLong`].
    max_line_bytes: usize,
    /// The bytes of the line not yet ended by a newline (within the limit).
    current: Vec<u8>,
    /// Set instead of `current` once the current line crossed the limit.
    overlong: Option<OverlongLine>,
    /// Frames completed by `push` and not yet taken by `next_frame`.
    ready: VecDeque<Frame>,
}

impl Default for LineFramer {
    fn default() -> Self {
        Self::new(DEFAULT_MAX_LINE_BYTES)
    }
}

impl LineFramer {
    /// A framer whose lines may be at most `max_line_bytes` long.
    pub fn new(max_line_bytes: usize) -> Self {
        LineFramer { max_line_bytes, current: Vec::new(), overlong: None, ready: VecDeque::new() }
    }

    /// The per-line limit of this framer.
    pub fn max_line_bytes(&self) -> usize {
        self.max_line_bytes
    }

    /// Feeds the next bytes of the stream, however they were split into reads.
    pub fn push(&mut self, mut input: &[u8]) {
        while !input.is_empty() {
            match memchr::memchr(b'\n', input) {
                Some(at) => {
                    self.extend_current(&input[..at]);
                    self.end_line();
                    input = &input[at + 1..];
                }
                None => {
                    self.extend_current(input);
                    input = &[];
                }
            }
        }
    }

    /// The next complete frame, if one is ready.
    pub fn next_frame(&mut self) -> Option<Frame> {
        self.ready.pop_front()
    }

    /// The frame [`next_frame`](Self::next_frame) would return, left in
    /// place.
    pub fn peek_frame(&self) -> Option<&Frame> {
        self.ready.front()
    }

    /// Ends the stream: a last line without a newline becomes a frame.
    /// Frames still queued stay available through [`next_frame`](Self::next_frame).
    pub fn finish(&mut self) {
        if self.overlong.is_some() || !self.current.is_empty() {
            self.end_line();
        }
    }

    /// Bytes held for the unfinished line (at most the limit, or the edges of
    /// an overlong line).
    pub fn buffered_bytes(&self) -> usize {
        match &self.overlong {
            Some(line) => line.head.len() + line.tail.len(),
            None => self.current.len(),
        }
    }

    /// Continues the unfinished line in `buffer` when it has more room
    /// than the line's own: a reader that keeps a long line's buffer after
    /// the line was used fills it again, where a fresh one would have its
    /// every page faulted in and zeroed by the kernel (a 16 MiB line: 4,096
    /// faults, a quarter of the bridge's time relaying it). The line's
    /// bytes so far are copied over; `buffer`'s own bytes are dropped.
    ///
    /// # Errors
    /// `buffer` back when it is not taken: it has no more room than the
    /// line's, more than the limit, or the line is already over the limit.
    pub fn adopt(&mut self, mut buffer: Vec<u8>) -> Result<(), Vec<u8>> {
        let room = buffer.capacity();
        if self.overlong.is_some() || room <= self.current.capacity() || room > self.max_line_bytes {
            return Err(buffer);
        }
        buffer.clear();
        buffer.extend_from_slice(&self.current);
        self.current = buffer;
        Ok(())
    }

    fn extend_current(&mut self, piece: &[u8]) {
        if let Some(line) = &mut self.overlong {
            line.extend(piece);
        } else if self.current.len() + piece.len() > self.max_line_bytes {
            let mut line = OverlongLine::start(&self.current);
            line.extend(piece);
            // Release the buffer: it may be as large as the limit.
            self.current = Vec::new();
            self.overlong = Some(line);
        } else {
            self.reserve_within_limit(piece.len());
            self.current.extend_from_slice(piece);
        }
    }

    /// Grows `current` by doubling, but never past the limit: a line that
    /// ends up over the limit then costs at most the limit, not twice it.
    fn reserve_within_limit(&mut self, additional: usize) {
        let needed = self.current.len() + additional;
        if needed > self.current.capacity() {
            let target = (self.current.capacity() * 2).clamp(needed, self.max_line_bytes.max(needed));
            self.current.reserve_exact(target - self.current.len());
        }
    }

    fn end_line(&mut self) {
        if let Some(line) = self.overlong.take() {
            self.ready.push_back(Frame::TooLong(line));
            return;
        }
        let mut line = std::mem::take(&mut self.current);
        if line.last() == Some(&b'\r') {
            line.pop();
        }
        if !line.iter().all(u8::is_ascii_whitespace) {
            self.ready.push_back(Frame::Line(line));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn frames_of(framer: &mut LineFramer) -> Vec<Frame> {
        std::iter::from_fn(|| framer.next_frame()).collect()
    }

    #[test]
    fn lines_are_split_on_newlines() {
        let mut f = LineFramer::new(100);
        f.push(b"{\"a\":1}\n{\"b\"");
        f.push(b":2}\r\n\n  \n{\"c\":3}");
        assert_eq!(frames_of(&mut f), vec![Frame::Line(b"{\"a\":1}".to_vec()), Frame::Line(b"{\"b\":2}".to_vec())]);
        f.finish();
        assert_eq!(frames_of(&mut f), vec![Frame::Line(b"{\"c\":3}".to_vec())]);
    }

    #[test]
    fn a_peeked_frame_is_the_next_one() {
        let mut f = LineFramer::new(100);
        assert_eq!(f.peek_frame(), None);
        f.push(b"one\ntwo\n");
        assert_eq!(f.peek_frame(), Some(&Frame::Line(b"one".to_vec())));
        assert_eq!(f.peek_frame(), Some(&Frame::Line(b"one".to_vec())));
        assert_eq!(frames_of(&mut f), vec![Frame::Line(b"one".to_vec()), Frame::Line(b"two".to_vec())]);
    }

    #[test]
    fn line_at_the_limit_is_kept_and_one_over_is_too_long() {
        let mut f = LineFramer::new(4);
        f.push(b"abcd\nabcde\nxy\n");
        let frames = frames_of(&mut f);
        assert_eq!(frames[0], Frame::Line(b"abcd".to_vec()));
        assert!(matches!(&frames[1], Frame::TooLong(l) if l.len == 5 && l.head == b"abcde"));
        assert_eq!(frames[2], Frame::Line(b"xy".to_vec()));
    }

    #[test]
    fn overlong_line_keeps_its_edges() {
        let mut f = LineFramer::new(10);
        let line: Vec<u8> = (0..2000u32).map(|i| b'a' + (i % 26) as u8).collect();
        for chunk in line.chunks(7) {
            f.push(chunk);
        }
        f.push(b"\n");
        let Some(Frame::TooLong(l)) = f.next_frame() else { panic!("expected TooLong") };
        assert_eq!(l.len, 2000);
        assert_eq!(l.head, line[..KEPT_EDGE_BYTES]);
        assert_eq!(l.tail, line[2000 - KEPT_EDGE_BYTES..]);
    }

    #[test]
    fn an_adopted_buffer_continues_the_line() {
        let mut f = LineFramer::new(100);
        f.push(b"one\ntw");
        let mut roomy = Vec::with_capacity(64);
        roomy.extend_from_slice(b"stale bytes of an earlier line");
        let at = roomy.as_ptr();
        assert_eq!(f.adopt(roomy), Ok(()));
        f.push(b"o\nthree\n");
        let frames = frames_of(&mut f);
        assert_eq!(
            frames,
            vec![Frame::Line(b"one".to_vec()), Frame::Line(b"two".to_vec()), Frame::Line(b"three".to_vec())]
        );
        assert!(
            matches!(&frames[1], Frame::Line(line) if line.as_ptr() == at),
            "the line is read into the buffer given"
        );
    }

    #[test]
    fn a_buffer_without_more_room_or_for_an_overlong_line_is_given_back() {
        let mut f = LineFramer::new(8);
        f.push(b"abcd");
        let given = f.adopt(Vec::with_capacity(2)).expect_err("no more room than the line's");
        assert_eq!(given.capacity(), 2);
        assert!(f.adopt(Vec::with_capacity(9)).is_err(), "more room than the limit");
        f.push(b"efghij");
        assert!(f.adopt(Vec::with_capacity(8)).is_err(), "an overlong line keeps only its edges");
        f.push(b"\n");
        assert!(matches!(f.next_frame(), Some(Frame::TooLong(line)) if line.len == 10));
    }

    #[derive(Debug, Clone)]
    enum Piece {
        Short(Vec<u8>),
        Long(usize),
    }

    fn stream() -> impl Strategy<Value = Vec<u8>> {
        let piece = prop_oneof![
            4 => prop::collection::vec(any::<u8>(), 0..40).prop_map(Piece::Short),
            1 => (60usize..700).prop_map(Piece::Long),
        ];
        prop::collection::vec(piece, 0..20).prop_map(|pieces| {
            let mut out = Vec::new();
            for p in pieces {
                match p {
                    Piece::Short(b) => out.extend(b),
                    Piece::Long(n) => out.extend((0..n).map(|i| b"{\"id\":7,x}\n"[i % 10])),
                }
            }
            out
        })
    }

    proptest! {
        #[test]
        fn any_split_into_reads_gives_the_same_frames(
            bytes in stream(),
            cuts in prop::collection::vec(any::<prop::sample::Index>(), 0..12),
            limit in 1usize..80,
            lent in prop::collection::vec(prop::option::of(0usize..120), 12),
        ) {
            let mut whole = LineFramer::new(limit);
            whole.push(&bytes);
            whole.finish();
            let expected = frames_of(&mut whole);

            let mut points: Vec<usize> = cuts.iter().map(|i| i.index(bytes.len() + 1)).collect();
            points.sort_unstable();
            let mut split = LineFramer::new(limit);
            let mut got = Vec::new();
            let mut from = 0;
            for (p, lent) in points.into_iter().chain([bytes.len()]).zip(lent.into_iter().chain([None])) {
                // A buffer lent between reads, full of another line's bytes,
                // changes no frame whether it is taken or not.
                if let Some(room) = lent {
                    let mut buffer = Vec::with_capacity(room);
                    buffer.resize(room, b'#');
                    let _ = split.adopt(buffer);
                }
                split.push(&bytes[from..p]);
                got.extend(frames_of(&mut split));
                from = p;
            }
            split.finish();
            got.extend(frames_of(&mut split));
            prop_assert_eq!(got, expected);
        }

        #[test]
        fn lines_within_the_limit_come_back_unchanged(
            lines in prop::collection::vec("[a-z{}\":0-9 ]{1,30}", 0..20),
        ) {
            let lines: Vec<String> = lines.into_iter().filter(|l| !l.trim().is_empty()).collect();
            let mut f = LineFramer::new(30);
            for l in &lines {
                f.push(l.as_bytes());
                f.push(b"\n");
            }
            let got: Vec<Frame> = frames_of(&mut f);
            let want: Vec<Frame> = lines.iter().map(|l| Frame::Line(l.as_bytes().to_vec())).collect();
            prop_assert_eq!(got, want);
        }

        #[test]
        fn buffered_bytes_never_exceed_the_limit_or_the_edges(
            bytes in stream(), limit in 1usize..80,
        ) {
            let mut f = LineFramer::new(limit);
            for chunk in bytes.chunks(13) {
                f.push(chunk);
                prop_assert!(f.buffered_bytes() <= limit.max(2 * KEPT_EDGE_BYTES));
            }
        }
    }
}
