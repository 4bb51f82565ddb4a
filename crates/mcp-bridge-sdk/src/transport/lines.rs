//! Newline-delimited JSON-RPC over a byte stream: the reader and the writer
//! shared by the stdio server, the child-process client and the Unix
//! socket client.

mod spare;

use mcp_bridge_protocol::{Frame, LineFramer, Message, append_message_line, decode_message};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::limits::LONG_LINE;

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
                let buffered = self.framer.buffered_bytes();
                if buffered <= LONG_LINE
                    && buffered + n > LONG_LINE
                    && let Some(buffer) = spare::take()
                {
                    // Refused (no more room than the line's, or past its
                    // limit), it is of no use to this reader.
                    let _ = self.framer.adopt(buffer);
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
    // The buffer this writer kept for the next long line: let go of when
    // no long line took it in time, or when the writer ends.
    let mut kept: Option<spare::Kept> = None;
    loop {
        let until = kept.as_ref().map(spare::Kept::until);
        let let_go = async move {
            match until {
                Some(until) => tokio::time::sleep_until(until).await,
                None => std::future::pending().await,
            }
        };
        let message = tokio::select! {
            biased;
            m = messages.recv() => match m { Some(m) => m, None => break },
            _ = stop.cancelled() => break,
            () = let_go => {
                kept = None;
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
/// read.
fn keep_buffer<T: Outbound>(message: T) -> Option<spare::Kept> {
    message.into_buffer().and_then(spare::keep)
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
    use crate::limits::LONG_LINE_BUFFER_KEPT;

    /// The spare buffer is one per process: its tests take turns. Any unit
    /// test of this crate that reads or writes a line over `LONG_LINE`
    /// must take this too.
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

    /// A running [`write_lines`]: its queue, the other end of its stream,
    /// and its task.
    struct Writer {
        queue: mpsc::Sender<Made>,
        theirs: tokio::io::DuplexStream,
        task: tokio::task::JoinHandle<std::io::Result<()>>,
    }

    impl Writer {
        fn start() -> Self {
            let (ours, theirs) = tokio::io::duplex(64 * 1024);
            let (queue, mut rx) = mpsc::channel(1);
            let task = tokio::spawn(async move { write_lines(ours, &mut rx, CancellationToken::new()).await });
            Writer { queue, theirs, task }
        }

        /// Writes `line` and reads it back from the stream.
        async fn write(&mut self, line: Vec<u8>) -> Vec<u8> {
            let mut out = vec![0; line.len()];
            self.queue.send(Made(line)).await.expect("the writer listens");
            self.theirs.read_exact(&mut out).await.expect("the line");
            out
        }

        async fn end(self) {
            drop(self.queue);
            self.task.await.expect("the writer ends").expect("it wrote");
        }
    }

    #[tokio::test]
    async fn a_long_line_written_lends_its_buffer_to_the_next_long_line_read() {
        let _turn = SPARE_TESTS.lock().await;
        let mut writer = Writer::start();
        let line = line_of(b'a', 2 * LONG_LINE);
        let at = line.as_ptr() as usize;
        assert_eq!(writer.write(line).await, line_of(b'a', 2 * LONG_LINE));

        let next = line_of(b'b', LONG_LINE + 10);
        let mut reader = FrameReader::new(&next[..], 4 * LONG_LINE);
        let Some(Frame::Line(line)) = reader.next().await.expect("read") else { panic!("a line") };
        assert_eq!(line, &next[..next.len() - 1], "only its own bytes");
        assert_eq!(line.as_ptr() as usize, at, "read into the buffer written before");
        assert!(spare::take().is_none(), "lent, not shared");
        writer.end().await;
    }

    #[tokio::test(start_paused = true)]
    async fn a_kept_buffer_is_let_go_in_time_or_when_its_writer_ends_and_a_short_line_takes_none() {
        let _turn = SPARE_TESTS.lock().await;
        let mut writer = Writer::start();
        writer.write(line_of(b'k', 2 * LONG_LINE)).await;
        let short = line_of(b's', 100);
        let mut reader = FrameReader::new(&short[..], 4 * LONG_LINE);
        assert!(matches!(reader.next().await, Ok(Some(Frame::Line(line))) if line.len() == 100));
        tokio::time::sleep(LONG_LINE_BUFFER_KEPT / 2).await;
        assert!(spare::take().is_some(), "kept for a while, and a short line took nothing");

        writer.write(line_of(b'k', 2 * LONG_LINE)).await;
        tokio::time::sleep(LONG_LINE_BUFFER_KEPT * 2).await;
        assert!(spare::take().is_none(), "let go of after its time");

        writer.write(line_of(b'k', 2 * LONG_LINE)).await;
        writer.end().await;
        assert!(spare::take().is_none(), "let go of when its writer ended");

        assert!(spare::keep(Vec::with_capacity(LONG_LINE - 1)).is_none(), "too short to be worth keeping");
        let first = spare::keep(Vec::with_capacity(LONG_LINE));
        let second = spare::keep(Vec::with_capacity(LONG_LINE));
        drop(first);
        assert!(spare::take().is_some(), "a writer lets go of its own buffer only");
        drop(second);
    }
}
