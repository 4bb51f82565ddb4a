//! Newline-delimited JSON-RPC over a byte stream: the reader and the writer
//! shared by the stdio server, the child-process client and the Unix
//! socket client.

use mcp_bridge_protocol::{Frame, LineFramer, Message, append_message_line, decode_message};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

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
    loop {
        let message = tokio::select! {
            biased;
            m = messages.recv() => match m { Some(m) => m, None => break },
            _ = stop.cancelled() => break,
        };
        let vectored = writer.is_write_vectored();
        if let Some((slices, _)) = message.as_slices().filter(|(_, len)| vectored && *len >= WRITE_BATCH) {
            write_all_slices(&mut writer, &slices).await?;
            writer.flush().await?;
            continue;
        }
        message.append_line(&mut batch);
        // Encoded: a large message's tree is freed before the write waits.
        drop(message);
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
