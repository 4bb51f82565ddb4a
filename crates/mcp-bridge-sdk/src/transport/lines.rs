//! Newline-delimited JSON-RPC over a byte stream: the reader and the writer
//! shared by the stdio server, the child-process client and the Unix
//! socket client.

mod spare;

use mcp_bridge_protocol::{Frame, LineFramer, Message, append_message_line, decode_message};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::mpsc;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::limits::{LONG_LINE, LONG_LINE_BUFFER_KEPT};

/// Size of one read from the stream.
const READ_CHUNK: usize = 64 * 1024;

/// Bytes of queued lines gathered into one write.
const WRITE_BATCH: usize = 64 * 1024;

/// Reads frames from a byte stream through a [`LineFramer`]; the reading half
/// of every line-framed transport.
#[derive(Debug)]
pub struct FrameReader<R> {
    reader: R,
    framer: LineFramer,
    buf: Box<[u8]>,
    eof: bool,
}

impl<R: AsyncRead + Unpin> FrameReader<R> {
    /// A reader of lines of at most `max_line_bytes`.
    pub fn new(reader: R, max_line_bytes: usize) -> Self {
        FrameReader { reader, framer: LineFramer::new(max_line_bytes), buf: vec![0; READ_CHUNK].into(), eof: false }
    }

    /// The next frame, or `None` at the end of the stream.
    ///
    /// # Cancel safety
    /// Cancel safe: bytes read are kept in the framer.
    pub async fn next(&mut self) -> std::io::Result<Option<Frame>> {
        self.fill().await?;
        Ok(self.framer.next_frame())
    }

    /// The frame [`next`](Self::next) will return, left in place: a caller
    /// may look at a line before choosing who reads it.
    ///
    /// # Cancel safety
    /// Cancel safe, as `next` is.
    pub async fn peek(&mut self) -> std::io::Result<Option<&Frame>> {
        self.fill().await?;
        Ok(self.framer.peek_frame())
    }

    /// Reads until a frame is ready or the stream ended.
    async fn fill(&mut self) -> std::io::Result<()> {
        while self.framer.peek_frame().is_none() && !self.eof {
            let n = self.reader.read(&mut self.buf).await?;
            if n == 0 {
                self.eof = true;
                self.framer.finish();
            } else {
                if self.framer.buffered_bytes() + n > LONG_LINE
                    && let Some(buffer) = spare::take()
                {
                    // Not taken (no more room than the line's), it is of no use.
                    drop(self.framer.adopt(buffer));
                }
                self.framer.push(&self.buf[..n]);
            }
        }
        Ok(())
    }
}

#[cfg(feature = "client")]
/// Reads a server's messages from a byte stream into a client's channel
/// until the stream ends: a result response kept as it came (see
/// [`mcp_bridge_protocol::RawResult`]), any other line decoded, each with
/// the depth limit; a bad or overlong line reported with the id it could
/// be read back from.
pub(crate) async fn read_frames<R: AsyncRead + Unpin>(
    stream: R,
    to_client: mpsc::Sender<super::Incoming>,
    max_line: usize,
    max_depth: usize,
) {
    use super::Incoming;
    let mut reader = FrameReader::new(stream, max_line);
    loop {
        let item = match reader.next().await {
            // A result goes on undecoded: whoever waits for it decides.
            Ok(Some(Frame::Line(line))) => match mcp_bridge_protocol::RawResult::parse(line, max_depth) {
                Ok(result) => Incoming::Result(result),
                Err(line) => match decode_message(&line, max_depth) {
                    Ok(message) => Incoming::Message(message),
                    Err(e) => Incoming::Undecodable { id: e.reply_id(&line), reason: e.to_string() },
                },
            },
            Ok(Some(Frame::TooLong(line))) => Incoming::Undecodable {
                id: line.recover_id(),
                reason: format!("a line of {} bytes is over the limit of {max_line}", line.len),
            },
            Ok(None) => return,
            Err(e) => {
                tracing::debug!("the server's stream failed: {e}");
                return;
            }
        };
        if to_client.send(item).await.is_err() {
            return;
        }
    }
}

/// What a writer of lines can write: a message, or a message with what
/// its producer knows about it (the bridge's session tags each message
/// with the client request it belongs to, and may have its line already).
pub trait Outbound: Send {
    /// Appends it as one line.
    fn append_line(&self, out: &mut Vec<u8>);

    /// Its line, when it is made already, as the pieces it is made of and
    /// its length: a large one is written from them, not copied into a
    /// batch.
    fn as_slices(&self) -> Option<(Vec<&[u8]>, usize)> {
        None
    }

    /// The buffer its line was read into, once the line is written: a
    /// long one is kept for the next long line read.
    fn into_buffer(self) -> Option<Vec<u8>>
    where
        Self: Sized,
    {
        None
    }
}

impl Outbound for Message {
    fn append_line(&self, out: &mut Vec<u8>) {
        append_message_line(out, self);
    }
}

/// Owns a byte stream's writing side: writes each message as one line,
/// until the channel closes or `stop` fires (checked only between writes,
/// so a line is never cut). The messages already queued when one is
/// written go out with it in one write and one flush. Returns when the
/// stream is shut down; the channel stays usable for the next stream (a
/// restarted child).
pub async fn write_lines<W: AsyncWrite + Unpin, T: Outbound>(
    mut writer: W,
    messages: &mut mpsc::Receiver<T>,
    stop: CancellationToken,
) -> std::io::Result<()> {
    let mut batch = Vec::new();
    // The buffer this writer kept for the next long line, let go of when
    // no long line took it in time.
    let mut kept: Option<(u64, Instant)> = None;
    loop {
        let let_go = async {
            match kept {
                Some((_, at)) => tokio::time::sleep_until(at).await,
                None => std::future::pending().await,
            }
        };
        let message = tokio::select! {
            biased;
            m = messages.recv() => match m { Some(m) => m, None => break },
            _ = stop.cancelled() => break,
            () = let_go => {
                if let Some((number, _)) = kept.take() {
                    spare::let_go(number);
                }
                continue;
            }
        };
        let vectored = writer.is_write_vectored();
        if let Some((slices, _)) = message.as_slices().filter(|(_, len)| vectored && *len >= WRITE_BATCH) {
            write_all_slices(&mut writer, &slices).await?;
            writer.flush().await?;
            drop(slices);
            kept = keep_buffer(message).or(kept);
            continue;
        }
        message.append_line(&mut batch);
        // Encoded: a large message's tree is freed before the write waits.
        kept = keep_buffer(message).or(kept);
        while batch.len() < WRITE_BATCH {
            let Ok(message) = messages.try_recv() else { break };
            message.append_line(&mut batch);
        }
        writer.write_all(&batch).await?;
        writer.flush().await?;
        batch.clear();
        if batch.capacity() > 4 * WRITE_BATCH {
            // A large line's buffer is not kept for the small ones after it.
            batch = Vec::new();
        }
    }
    writer.shutdown().await
}

/// Keeps the buffer `message`'s line was read into for the next long line
/// read; the number it is kept as and when to let go of it.
fn keep_buffer<T: Outbound>(message: T) -> Option<(u64, Instant)> {
    let number = message.into_buffer().and_then(spare::keep)?;
    Some((number, Instant::now() + LONG_LINE_BUFFER_KEPT))
}

/// Writes every byte of `slices`, in as few writes as the stream takes.
async fn write_all_slices<W: AsyncWrite + Unpin>(writer: &mut W, slices: &[&[u8]]) -> std::io::Result<()> {
    let mut io: Vec<std::io::IoSlice<'_>> = slices.iter().map(|s| std::io::IoSlice::new(s)).collect();
    let mut left = &mut io[..];
    while !left.is_empty() {
        let written = writer.write_vectored(left).await?;
        if written == 0 {
            return Err(std::io::ErrorKind::WriteZero.into());
        }
        std::io::IoSlice::advance_slices(&mut left, written);
    }
    Ok(())
}

/// Waits for a writer task started with [`write_lines`] to drain and end,
/// at most `grace`; then stops it between two lines, and when a write is
/// stuck (a peer that reads nothing) aborts it after another `grace`. A
/// sender kept alive elsewhere (a detached task holding a context) or a
/// blocked peer cannot keep a process open.
///
/// # Errors
/// The writer's I/O error, its task's failure, or
/// [`std::io::ErrorKind::TimedOut`] when it had to be aborted.
pub async fn finish_writer(
    mut writer: tokio::task::JoinHandle<std::io::Result<()>>,
    stop: CancellationToken,
    grace: std::time::Duration,
) -> std::io::Result<()> {
    let joined = match tokio::time::timeout(grace, &mut writer).await {
        Ok(joined) => joined,
        Err(_) => {
            stop.cancel();
            match tokio::time::timeout(grace, &mut writer).await {
                Ok(joined) => joined,
                Err(_) => {
                    writer.abort();
                    return Err(std::io::Error::new(
                        std::io::ErrorKind::TimedOut,
                        "the peer took no output for twice the grace period",
                    ));
                }
            }
        }
    };
    joined.unwrap_or_else(|e| Err(std::io::Error::other(e)))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The spare buffer is one per process: its tests take turns.
    static SPARE_TESTS: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

    /// A line already made, as the bridge's session hands one over.
    struct Made(Vec<u8>);

    impl Outbound for Made {
        fn append_line(&self, out: &mut Vec<u8>) {
            out.extend_from_slice(&self.0);
        }

        fn as_slices(&self) -> Option<(Vec<&[u8]>, usize)> {
            Some((vec![&self.0[..]], self.0.len()))
        }

        fn into_buffer(self) -> Option<Vec<u8>> {
            Some(self.0)
        }
    }

    /// A line of `len` bytes of `byte` and its newline.
    fn line_of(byte: u8, len: usize) -> Vec<u8> {
        let mut line = vec![byte; len];
        line.push(b'\n');
        line
    }

    /// Writes `line` through [`write_lines`] to a pipe-like stream and
    /// returns what came out and the pointer of the buffer written.
    async fn written(line: Vec<u8>) -> (Vec<u8>, usize) {
        let (ours, mut theirs) = tokio::io::duplex(64 * 1024);
        let (tx, mut rx) = mpsc::channel(1);
        let at = line.as_ptr() as usize;
        tx.send(Made(line)).await.expect("the writer listens");
        drop(tx);
        let writer = tokio::spawn(async move { write_lines(ours, &mut rx, CancellationToken::new()).await });
        let mut out = Vec::new();
        theirs.read_to_end(&mut out).await.expect("the stream ends");
        writer.await.expect("the writer ends").expect("it wrote");
        (out, at)
    }

    #[tokio::test]
    async fn a_long_line_written_lends_its_buffer_to_the_next_long_line_read() {
        let _turn = SPARE_TESTS.lock().await;
        let (out, at) = written(line_of(b'a', 2 * LONG_LINE)).await;
        assert_eq!(out, line_of(b'a', 2 * LONG_LINE));

        let next = line_of(b'b', LONG_LINE + 10);
        let mut reader = FrameReader::new(&next[..], 4 * LONG_LINE);
        let Some(Frame::Line(line)) = reader.next().await.expect("read") else { panic!("a line") };
        assert_eq!(line, &next[..next.len() - 1], "only its own bytes");
        assert_eq!(line.as_ptr() as usize, at, "read into the buffer written before");
        assert!(spare::take().is_none(), "lent, not shared");
    }

    #[tokio::test]
    async fn a_short_line_borrows_nothing_and_a_kept_buffer_is_let_go_in_time() {
        let _turn = SPARE_TESTS.lock().await;
        let number = spare::keep(Vec::with_capacity(LONG_LINE)).expect("long enough to keep");
        let short = line_of(b's', 100);
        let mut reader = FrameReader::new(&short[..], 4 * LONG_LINE);
        assert!(matches!(reader.next().await, Ok(Some(Frame::Line(line))) if line.len() == 100));
        spare::let_go(number.wrapping_add(1));
        assert!(spare::take().is_some(), "still kept: a short line took nothing, another number let go of nothing");
        assert_eq!(spare::keep(Vec::with_capacity(LONG_LINE - 1)), None, "too short to be worth keeping");

        // The writer lets go of what it kept once no long line took it in time.
        tokio::time::pause();
        let (ours, mut theirs) = tokio::io::duplex(64 * 1024);
        let (tx, mut rx) = mpsc::channel(1);
        let writer = tokio::spawn(async move { write_lines(ours, &mut rx, CancellationToken::new()).await });
        tx.send(Made(line_of(b'k', 2 * LONG_LINE))).await.expect("the writer listens");
        let mut out = vec![0; 2 * LONG_LINE + 1];
        theirs.read_exact(&mut out).await.expect("the line");
        tokio::time::sleep(LONG_LINE_BUFFER_KEPT / 2).await;
        assert!(spare::take().is_some_and(|kept| kept.capacity() > 2 * LONG_LINE), "kept for a while");
        tx.send(Made(line_of(b'k', 2 * LONG_LINE))).await.expect("the writer listens");
        theirs.read_exact(&mut out).await.expect("the line");
        tokio::time::sleep(LONG_LINE_BUFFER_KEPT * 2).await;
        assert!(spare::take().is_none(), "let go of after its time");
        drop(tx);
        writer.await.expect("the writer ends").expect("it wrote");
    }
}
