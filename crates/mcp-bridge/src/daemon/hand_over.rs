//! The client's stdin and stdout handed from `attach` to the daemon: passed
//! over the Unix socket (`SCM_RIGHTS`), so the daemon reads and writes the
//! client's own pipes and no process copies the bytes in between. The
//! daemon then watches the client's handshake as it reads it
//! (`InputTap`) and as it answers (`OutputTap`), and reports it to
//! `attach`, which keeps it to resume with a new daemon if this one goes
//! away ([`Resume`]).

use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use mcp_bridge_protocol::method::{Method, PromptsListChanged, ResourcesListChanged, ToolsListChanged};
use nix::sys::socket::{ControlMessage, ControlMessageOwned, MsgFlags, recvmsg, sendmsg};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::sync::mpsc::UnboundedSender;

use super::handshake::{Handshake, MAX_LINE};
use super::wire::{Report, Resume};

/// Passes `input` and `output` over `socket`: one byte, with the two
/// descriptors beside it.
///
/// # Errors
/// The socket's error.
pub fn send(socket: &impl AsFd, input: BorrowedFd<'_>, output: BorrowedFd<'_>) -> io::Result<()> {
    let fds = [input.as_raw_fd(), output.as_raw_fd()];
    let byte = [0u8];
    let iov = [io::IoSlice::new(&byte)];
    sendmsg::<()>(socket.as_fd().as_raw_fd(), &iov, &[ControlMessage::ScmRights(&fds)], MsgFlags::empty(), None)?;
    Ok(())
}

/// Receives the input and output [`send`] passed.
///
/// # Errors
/// The socket's error, or a message without the two descriptors.
pub(crate) async fn receive(socket: &tokio::net::UnixStream) -> io::Result<(OwnedFd, OwnedFd)> {
    loop {
        socket.readable().await?;
        match socket.try_io(tokio::io::Interest::READABLE, || receive_now(socket.as_raw_fd())) {
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
            received => return received,
        }
    }
}

/// One `recvmsg` of the passed descriptors.
fn receive_now(socket: RawFd) -> io::Result<(OwnedFd, OwnedFd)> {
    let mut byte = [0u8; 1];
    let mut iov = [io::IoSliceMut::new(&mut byte)];
    let mut space = nix::cmsg_space!([RawFd; 2]);
    let message = recvmsg::<()>(socket, &mut iov, Some(&mut space), MsgFlags::empty())?;
    let mut fds = Vec::new();
    for cmsg in message.cmsgs()? {
        if let ControlMessageOwned::ScmRights(passed) = cmsg {
            // SAFETY: the kernel installed these descriptors in this
            // process for this message; nothing else owns them.
            fds.extend(passed.into_iter().map(|fd| unsafe { OwnedFd::from_raw_fd(fd) }));
        }
    }
    if message.bytes == 0 {
        return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "the connection closed before the hand-over"));
    }
    for fd in &fds {
        // Not inherited by the servers the daemon starts.
        nix::fcntl::fcntl(fd, nix::fcntl::FcntlArg::F_SETFD(nix::fcntl::FdFlag::FD_CLOEXEC))?;
    }
    let mut fds = fds.into_iter();
    match (fds.next(), fds.next(), fds.next()) {
        (Some(input), Some(output), None) => Ok((input, output)),
        _ => Err(io::Error::new(io::ErrorKind::InvalidData, "the hand-over did not carry stdin and stdout")),
    }
}

/// The lines a resumed session reads first: the client's `initialize`
/// again, and its `notifications/initialized` when it had sent it.
pub(crate) fn replayed_input(resume: Option<&Resume>) -> Vec<u8> {
    let Some(resume) = resume else { return Vec::new() };
    let mut lines = resume.initialize.clone().into_bytes();
    lines.push(b'\n');
    if resume.initialized {
        lines.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n");
    }
    lines
}

/// The client's input, its handshake lines reported until the handshake
/// is over; from then on only read.
pub(crate) struct InputTap<R> {
    inner: R,
    /// While the handshake is watched: its state and the line being read.
    watch: Option<Box<(Handshake, Vec<u8>)>>,
    reports: UnboundedSender<Report>,
}

impl<R> InputTap<R> {
    /// Watches `inner`'s handshake; `resumed` sessions have had theirs.
    pub(crate) fn new(inner: R, resumed: bool, reports: UnboundedSender<Report>) -> Self {
        let watch = (!resumed).then(|| Box::new((Handshake::default(), Vec::new())));
        InputTap { inner, watch, reports }
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

/// What the [`OutputTap`] still does with the session's first line.
enum FirstLine {
    /// Reports that it was written (the answer to `initialize`).
    Report,
    /// Drops it (a resumed client had the answer), then says the lists
    /// may have changed.
    Drop,
    /// Nothing: it passed.
    Passed,
}

/// The client's output: its first line reported (or, resumed, dropped);
/// from then on only written.
pub(crate) struct OutputTap<W> {
    inner: W,
    first: FirstLine,
    /// Written before anything else (the lists' changes after a resume).
    pending: Vec<u8>,
    reports: UnboundedSender<Report>,
}

impl<W> OutputTap<W> {
    /// Reports `inner`'s first line, or drops it when the resumed client
    /// had the answer to its `initialize` already.
    pub(crate) fn new(inner: W, resume: Option<&Resume>, reports: UnboundedSender<Report>) -> Self {
        let first = if resume.is_some_and(|r| r.answered) { FirstLine::Drop } else { FirstLine::Report };
        OutputTap { inner, first, pending: Vec::new(), reports }
    }
}

/// The notifications that tell a resumed client the lists may have changed.
fn lists_changed() -> Vec<u8> {
    [ToolsListChanged::NAME, PromptsListChanged::NAME, ResourcesListChanged::NAME]
        .iter()
        .flat_map(|method| format!("{{\"jsonrpc\":\"2.0\",\"method\":\"{method}\"}}\n").into_bytes())
        .collect()
}

impl<W: AsyncWrite + Unpin> OutputTap<W> {
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
}

impl<W: AsyncWrite + Unpin> AsyncWrite for OutputTap<W> {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        if matches!(self.first, FirstLine::Passed) && self.pending.is_empty() {
            return Pin::new(&mut self.inner).poll_write(cx, buf);
        }
        ready!(self.poll_pending(cx))?;
        let newline = buf.iter().position(|&b| b == b'\n');
        match (&self.first, newline) {
            (FirstLine::Drop, None) => return Poll::Ready(Ok(buf.len())),
            (FirstLine::Drop, Some(end)) => {
                self.first = FirstLine::Passed;
                self.pending = lists_changed();
                return Poll::Ready(Ok(end + 1));
            }
            _ => {}
        }
        let written = ready!(Pin::new(&mut self.inner).poll_write(cx, buf))?;
        if matches!(self.first, FirstLine::Report) && newline.is_some_and(|end| end < written) {
            self.first = FirstLine::Passed;
            let _ = self.reports.send(Report::Answered);
        }
        Poll::Ready(Ok(written))
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        if matches!(self.first, FirstLine::Passed) && self.pending.is_empty() {
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
        let reader = tokio_test_reader(text.as_bytes(), 3);
        let mut tap = InputTap::new(reader, false, reports);
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

    #[tokio::test]
    async fn the_output_tap_drops_a_resumed_clients_second_answer_and_says_the_lists_changed() {
        let (reports, mut heard) = tokio::sync::mpsc::unbounded_channel();
        let resume = Resume { initialize: "{}".into(), answered: true, initialized: true };
        let mut written = Vec::new();
        let mut tap = OutputTap::new(&mut written, Some(&resume), reports.clone());
        tap.write_all(b"{\"id\":1,\"res").await.unwrap();
        tap.write_all(b"ult\":{}}\n{\"id\":2}\n").await.unwrap();
        tap.flush().await.unwrap();
        let text = String::from_utf8(written).unwrap();
        assert!(text.starts_with(r#"{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}"#), "{text}");
        assert!(text.ends_with("{\"id\":2}\n") && !text.contains("\"id\":1"), "{text}");

        let mut fresh = Vec::new();
        let mut tap = OutputTap::new(&mut fresh, None, reports);
        tap.write_all(b"{\"id\":1}\n{\"id\":2}\n").await.unwrap();
        assert_eq!(fresh, b"{\"id\":1}\n{\"id\":2}\n");
        assert_eq!(heard.recv().await, Some(Report::Answered));
        assert!(heard.try_recv().is_err(), "reported once");
    }

    #[test]
    fn a_resumed_session_reads_the_handshake_first() {
        let resume =
            Resume { initialize: r#"{"id":1,"method":"initialize"}"#.into(), answered: true, initialized: true };
        let lines = String::from_utf8(replayed_input(Some(&resume))).unwrap();
        assert_eq!(lines.lines().count(), 2);
        assert!(lines.ends_with("\"notifications/initialized\"}\n"));
        assert!(replayed_input(None).is_empty());
    }

    #[tokio::test]
    async fn the_descriptors_pass_over_the_socket() {
        use std::io::{Read, Write};
        let (ours, theirs) = std::os::unix::net::UnixStream::pair().unwrap();
        // The client's side of its stdio, and ours (handed over).
        let (mut client, stdio) = std::os::unix::net::UnixStream::pair().unwrap();
        send(&ours, stdio.as_fd(), stdio.as_fd()).unwrap();
        drop(stdio);
        theirs.set_nonblocking(true).unwrap();
        let theirs = tokio::net::UnixStream::from_std(theirs).unwrap();
        let (input, output) = receive(&theirs).await.unwrap();
        std::fs::File::from(output).write_all(b"through").unwrap();
        let mut got = [0u8; 7];
        client.read_exact(&mut got).unwrap();
        assert_eq!(&got, b"through");
        client.write_all(b"back").unwrap();
        let mut back = [0u8; 4];
        std::fs::File::from(input).read_exact(&mut back).unwrap();
        assert_eq!(&back, b"back");
        drop(ours);
        assert!(receive(&theirs).await.is_err(), "a closed connection passes nothing");
    }

    /// A reader that gives `bytes` at most `step` at a time.
    fn tokio_test_reader(bytes: &'static [u8], step: usize) -> impl AsyncRead + Unpin {
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
