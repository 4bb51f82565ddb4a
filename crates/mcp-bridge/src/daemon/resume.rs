//! A client's 2025-11-25 handshake kept across daemons: the daemon (or,
//! when the client's bytes are copied, `attach` itself) watches the
//! handshake as it reads it (`InputTap`); `attach` keeps it, to resume it
//! with a new daemon if this one goes away ([`Resume`]; `resumed`).

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use mcp_bridge_protocol::method::{Method, PromptsListChanged, ResourcesListChanged, ToolsListChanged};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::sync::mpsc::UnboundedSender;
use tokio::sync::oneshot;

use super::handshake::{Envelope, Handshake, MAX_LINE};
use super::wire::{Report, Resume};

/// A client's input on its way to a daemon, in whole lines across a loss
/// (`attach` copying the bytes, on Windows): what the daemon that went
/// away did not take goes to the next one, except a line cut at the loss,
/// dropped whole (its start went to the old daemon; its rest alone would
/// be a parse error at the new one).
#[derive(Debug, Default)]
pub struct CarriedInput {
    /// Read from the client, not yet written to the daemon.
    unsent: Vec<u8>,
    /// How much of the line being written the daemon has.
    sent_of_line: usize,
    /// The rest of a line cut at a loss is still to come: dropped.
    dropping: bool,
}

impl CarriedInput {
    /// What is to be written to the daemon.
    pub fn unsent(&self) -> &[u8] {
        &self.unsent
    }

    /// Notes `bytes` read from the client.
    pub fn read(&mut self, bytes: &[u8]) {
        let mut bytes = bytes;
        if self.dropping {
            let Some(end) = bytes.iter().position(|&b| b == b'\n') else { return };
            self.dropping = false;
            bytes = &bytes[end + 1..];
        }
        self.unsent.extend_from_slice(bytes);
    }

    /// Notes that the first `n` bytes of [`CarriedInput::unsent`] were written.
    pub fn sent(&mut self, n: usize) {
        let written = &self.unsent[..n];
        self.sent_of_line = match written.iter().rposition(|&b| b == b'\n') {
            Some(end) => n - end - 1,
            None => self.sent_of_line + n,
        };
        self.unsent.drain(..n);
    }

    /// The daemon went away: the line it had the start of is dropped.
    pub fn lost(&mut self) {
        if std::mem::take(&mut self.sent_of_line) == 0 {
            return;
        }
        match self.unsent.iter().position(|&b| b == b'\n') {
            Some(end) => drop(self.unsent.drain(..=end)),
            None => {
                self.unsent.clear();
                self.dropping = true;
            }
        }
    }
}

/// The client's input, its handshake lines reported until the handshake
/// is over; from then on only read.
#[derive(Debug)]
pub struct InputTap<R> {
    inner: R,
    /// While the handshake is watched: its state and the line being read.
    watch: Option<Box<(Handshake, Vec<u8>)>>,
    reports: UnboundedSender<Report>,
}

impl<R> InputTap<R> {
    /// Watches `inner`'s handshake.
    pub fn new(inner: R, reports: UnboundedSender<Report>) -> Self {
        InputTap { inner, watch: Some(Box::default()), reports }
    }

    /// Notes bytes the client sent.
    fn saw(&mut self, bytes: &[u8]) {
        let Some(watch) = &mut self.watch else { return };
        let (handshake, line) = &mut **watch;
        for piece in bytes.split_inclusive(|&b| b == b'\n') {
            let Some(complete) = piece.strip_suffix(b"\n") else {
                line.extend_from_slice(piece);
                break;
            };
            line.extend_from_slice(complete);
            if let Some(report) = handshake.read(line) {
                let _ = self.reports.send(report);
            }
            line.clear();
            if !handshake.watching() {
                break;
            }
        }
        if !handshake.watching() || line.len() > MAX_LINE {
            self.watch = None;
        }
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for InputTap<R> {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        ready!(Pin::new(&mut self.inner).poll_read(cx, buf))?;
        if self.watch.is_some() {
            let read = buf.filled()[before..].to_vec();
            self.saw(&read);
        }
        Poll::Ready(Ok(()))
    }
}

/// The input and output of a session that resumes `resume` on the
/// client's `input` and `output`: the client's `initialize` is read again
/// first, and nothing else until its answer is written (the session
/// answers it on a task of its own: a line read meanwhile would find it
/// not initialized); then `notifications/initialized` when the client had
/// sent it, then the client's own lines. A client that had sent it had the
/// answer: it gets no second one, and is told the lists may have changed.
/// `input` and `output` back when there is nothing to resume, or the
/// `initialize` has no id.
#[allow(clippy::type_complexity)]
pub(crate) fn resumed<R, W>(
    resume: Option<&Resume>,
    input: R,
    output: W,
) -> Result<(ResumedInput<R>, ResumedOutput<W>), (R, W)> {
    let Some(resume) = resume else { return Err((input, output)) };
    let id = serde_json::from_str::<Envelope>(&resume.initialize).ok().and_then(|e| e.id);
    let Some(id) = id else { return Err((input, output)) };
    let (answered, heard) = oneshot::channel();
    let mut first = resume.initialize.clone().into_bytes();
    first.push(b'\n');
    let then = if resume.initialized {
        b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n".to_vec()
    } else {
        Vec::new()
    };
    let input = ResumedInput { stage: Stage::Initialize(Bytes::new(first)), then, heard, inner: input };
    let watch = Box::new(Watch { id, drop: resume.initialized, line: Vec::new(), answered: Some(answered) });
    Ok((input, ResumedOutput { inner: output, watch: Some(watch), pending: Vec::new() }))
}

/// Bytes read from the front.
struct Bytes {
    bytes: Vec<u8>,
    read: usize,
}

impl Bytes {
    fn new(bytes: Vec<u8>) -> Self {
        Bytes { bytes, read: 0 }
    }

    /// Moves what fits into `buf`; whether anything was left to move.
    fn read_into(&mut self, buf: &mut ReadBuf<'_>) -> bool {
        let left = &self.bytes[self.read..];
        if left.is_empty() {
            return false;
        }
        let n = left.len().min(buf.remaining());
        buf.put_slice(&left[..n]);
        self.read += n;
        true
    }
}

/// Where a [`ResumedInput`] reads from.
enum Stage {
    /// The replayed `initialize`.
    Initialize(Bytes),
    /// Nothing, until its answer is written.
    Waiting,
    /// The replayed `notifications/initialized`, if any.
    Then(Bytes),
    /// The client.
    Client,
}

/// The input of a resumed session (see [`resumed`]).
pub(crate) struct ResumedInput<R> {
    stage: Stage,
    then: Vec<u8>,
    heard: oneshot::Receiver<()>,
    inner: R,
}

impl<R: AsyncRead + Unpin> AsyncRead for ResumedInput<R> {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        loop {
            let me = &mut *self;
            match &mut me.stage {
                Stage::Initialize(bytes) | Stage::Then(bytes) => {
                    if bytes.read_into(buf) {
                        return Poll::Ready(Ok(()));
                    }
                    me.stage = match me.stage {
                        Stage::Initialize(_) => Stage::Waiting,
                        _ => Stage::Client,
                    };
                }
                Stage::Waiting => {
                    // Answered, or the session ended without: either way on.
                    let _ = ready!(Pin::new(&mut me.heard).poll(cx));
                    me.stage = Stage::Then(Bytes::new(std::mem::take(&mut me.then)));
                }
                Stage::Client => return Pin::new(&mut me.inner).poll_read(cx, buf),
            }
        }
    }
}

/// What a [`ResumedOutput`] watches for.
struct Watch {
    /// The replayed `initialize`'s id.
    id: serde_json::Value,
    /// Its answer is dropped (the client had it).
    drop: bool,
    /// The line being written.
    line: Vec<u8>,
    /// Told when the answer was written (or dropped).
    answered: Option<oneshot::Sender<()>>,
}

/// The output of a resumed session (see [`resumed`]).
pub(crate) struct ResumedOutput<W> {
    inner: W,
    /// Until the answer to the replayed `initialize` passed.
    watch: Option<Box<Watch>>,
    /// Written before anything else.
    pending: Vec<u8>,
}

/// The notifications that tell a resumed client the lists may have changed.
fn lists_changed() -> Vec<u8> {
    [ToolsListChanged::NAME, PromptsListChanged::NAME, ResourcesListChanged::NAME]
        .iter()
        .flat_map(|method| format!("{{\"jsonrpc\":\"2.0\",\"method\":\"{method}\"}}\n").into_bytes())
        .collect()
}

impl<W: AsyncWrite + Unpin> ResumedOutput<W> {
    /// Writes what is pending; ready once nothing is.
    fn poll_pending(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        while !self.pending.is_empty() {
            let written = ready!(Pin::new(&mut self.inner).poll_write(cx, &self.pending))?;
            if written == 0 {
                return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
            }
            self.pending.drain(..written);
        }
        Poll::Ready(Ok(()))
    }

    /// Takes what of `buf` belongs to the watched lines; how much.
    fn watched(&mut self, buf: &[u8]) -> usize {
        let Some(watch) = &mut self.watch else { return 0 };
        let Some(end) = buf.iter().position(|&b| b == b'\n') else {
            watch.line.extend_from_slice(buf);
            if watch.line.len() > MAX_LINE {
                // Not a handshake's answer: passed on as it is.
                self.pending = std::mem::take(&mut watch.line);
                self.watch = None;
            }
            return buf.len();
        };
        watch.line.extend_from_slice(&buf[..=end]);
        let line = std::mem::take(&mut watch.line);
        let envelope = serde_json::from_slice::<Envelope>(&line).ok();
        let answer = envelope.is_some_and(|e| e.method.is_none() && e.id.as_ref() == Some(&watch.id));
        if !answer {
            self.pending = line;
            return end + 1;
        }
        if let Some(answered) = watch.answered.take() {
            let _ = answered.send(());
        }
        self.pending = if watch.drop { lists_changed() } else { line };
        self.watch = None;
        end + 1
    }
}

impl<W: AsyncWrite + Unpin> AsyncWrite for ResumedOutput<W> {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        ready!(self.poll_pending(cx))?;
        if self.watch.is_none() {
            return Pin::new(&mut self.inner).poll_write(cx, buf);
        }
        Poll::Ready(Ok(self.watched(buf)))
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        if self.watch.is_none() && self.pending.is_empty() {
            return Pin::new(&mut self.inner).poll_write_vectored(cx, bufs);
        }
        let first = bufs.iter().find(|b| !b.is_empty()).map_or(&[][..], |b| &**b);
        self.poll_write(cx, first)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        ready!(self.poll_pending(cx))?;
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        ready!(self.poll_pending(cx))?;
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use std::future::Future;

    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    use super::*;

    #[tokio::test]
    async fn the_input_tap_reports_the_handshake_across_reads_and_then_only_reads() {
        let (reports, mut heard) = tokio::sync::mpsc::unbounded_channel();
        let text = concat!(
            r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}"#,
            "\n",
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
            "\n",
            r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#,
            "\n"
        );
        // Three bytes at a time: lines cut anywhere.
        let mut tap = InputTap::new(steps(text.as_bytes(), 3), reports);
        let mut all = String::new();
        tap.read_to_string(&mut all).await.unwrap();
        assert_eq!(all, text, "the bytes pass unchanged");
        assert!(tap.watch.is_none(), "the watch ends with the handshake");
        let first = text.lines().next().unwrap().to_owned();
        assert_eq!(heard.recv().await, Some(Report::Initialize(first)));
        assert_eq!(heard.recv().await, Some(Report::Initialized));
        drop(tap);
        assert_eq!(heard.recv().await, None);
    }

    #[test]
    fn input_carried_past_a_lost_daemon_is_whole_lines() {
        let mut carried = CarriedInput::default();
        carried.read(b"{\"id\":1}\n{\"id\":2}\n{\"id");
        carried.sent(12);
        carried.lost();
        assert_eq!(carried.unsent(), b"{\"id", "line 2 was cut: dropped; line 3 not begun: kept");
        let mut carried = CarriedInput::default();
        carried.read(b"{\"id\":1}\n{\"id\":2,\"params");
        carried.sent(14);
        carried.lost();
        assert_eq!(carried.unsent(), b"", "the cut line's start is all there is");
        carried.read(b"\":{}}\n{\"id\":3}\n");
        assert_eq!(carried.unsent(), b"{\"id\":3}\n", "its rest, read later, dropped too");
        carried.sent(5);
        carried.sent(4);
        carried.lost();
        carried.read(b"{\"id\":4}\n");
        assert_eq!(carried.unsent(), b"{\"id\":4}\n", "a line the daemon had whole is not cut");
    }

    #[tokio::test]
    async fn a_resumed_session_waits_for_the_initialize_answer_and_the_client_gets_no_second_one() {
        let initialize = r#"{"jsonrpc":"2.0","id":7,"method":"initialize","params":{}}"#;
        let resume = Resume { initialize: initialize.into(), initialized: true };
        let client = steps(b"{\"jsonrpc\":\"2.0\",\"id\":8,\"method\":\"tools/list\"}\n", 64);
        let mut written = Vec::new();
        let Ok((mut input, mut output)) = resumed(Some(&resume), client, &mut written) else { panic!("no id") };
        let mut line = vec![0u8; 256];
        let n = input.read(&mut line).await.unwrap();
        assert_eq!(&line[..n], format!("{initialize}\n").as_bytes(), "the initialize first");
        let mut waiting = std::pin::pin!(input.read(&mut line));
        let cx = &mut Context::from_waker(std::task::Waker::noop());
        assert!(waiting.as_mut().poll(cx).is_pending(), "nothing more before the answer");
        // A log line passes; the answer, cut in two writes, is dropped.
        output.write_all(b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\"}\n").await.unwrap();
        output.write_all(b"{\"jsonrpc\":\"2.0\",\"id\":7,\"res").await.unwrap();
        output.write_all(b"ult\":{}}\n{\"id\":9}\n").await.unwrap();
        output.flush().await.unwrap();
        let n = waiting.await.unwrap();
        assert!(line[..n].ends_with(b"\"notifications/initialized\"}\n"), "then initialized");
        let n = input.read(&mut line).await.unwrap();
        assert!(line[..n].starts_with(b"{\"jsonrpc\":\"2.0\",\"id\":8"), "then the client's own lines");
        drop(output);
        let text = String::from_utf8(written).unwrap();
        assert!(text.starts_with(r#"{"jsonrpc":"2.0","method":"notifications/message"}"#), "{text}");
        assert!(!text.contains("\"id\":7") && text.contains("tools/list_changed"), "{text}");
        assert!(text.ends_with("{\"id\":9}\n"), "{text}");
    }

    #[tokio::test]
    async fn a_client_still_waiting_gets_the_answer_of_the_new_daemon() {
        let resume = Resume { initialize: r#"{"id":"a","method":"initialize"}"#.into(), initialized: false };
        let mut written = Vec::new();
        let Ok((_, mut output)) = resumed(Some(&resume), steps(b"", 1), &mut written) else { panic!("no id") };
        output.write_all(b"{\"id\":\"a\",\"result\":{}}\n").await.unwrap();
        output.flush().await.unwrap();
        drop(output);
        assert_eq!(written, b"{\"id\":\"a\",\"result\":{}}\n");
        let no_id = Resume { initialize: r#"{"method":"initialize"}"#.into(), initialized: true };
        assert!(resumed(Some(&no_id), steps(b"", 1), Vec::<u8>::new()).is_err());
    }

    /// A reader that gives `bytes` at most `step` at a time.
    fn steps(bytes: &'static [u8], step: usize) -> impl AsyncRead + Unpin {
        struct Steps(&'static [u8], usize);
        impl AsyncRead for Steps {
            fn poll_read(mut self: Pin<&mut Self>, _: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
                let n = self.1.min(self.0.len()).min(buf.remaining());
                buf.put_slice(&self.0[..n]);
                self.0 = &self.0[n..];
                Poll::Ready(Ok(()))
            }
        }
        Steps(bytes, step)
    }
}
