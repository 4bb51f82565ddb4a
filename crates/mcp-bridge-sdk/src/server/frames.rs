//! A client's frames to what serves it, for both eras: the one rule that
//! turns a received line into a message or into the answer to a bad line,
//! and the one loop that reads a byte stream's lines until it ends.

use std::future::Future;

use mcp_bridge_protocol::{DecodeError, Frame, Message, RequestId, decode_message};
use tokio::io::AsyncRead;

use crate::transport::lines::FrameReader;

/// What serves a client's messages: a 2026-07-28 [`Connection`](super::Connection)
/// or a 2025-11-25 session. Each answers a bad line in its era's words.
pub(crate) trait Receiver {
    /// Takes one decoded message.
    fn message(&self, message: Message) -> impl Future<Output = ()> + Send;

    /// Takes a line that did not decode; `id` is the one read back from it.
    fn undecodable(&self, id: Option<RequestId>, error: &DecodeError) -> impl Future<Output = ()> + Send;

    /// Takes a line over the length limit; `id` is the one read back from
    /// its edges.
    fn too_long(&self, id: Option<RequestId>) -> impl Future<Output = ()> + Send;
}

/// Hands one received message (a line, a WebSocket text message) to
/// `receiver`, decoded within `max_depth`.
pub(crate) async fn deliver_line<T: Receiver>(receiver: &T, line: &[u8], max_depth: usize) {
    match decode_message(line, max_depth) {
        Ok(message) => receiver.message(message).await,
        Err(e) => receiver.undecodable(e.reply_id(line), &e).await,
    }
}

/// Hands one frame of a byte stream to `receiver`.
pub(crate) async fn deliver<T: Receiver>(receiver: &T, frame: Frame, max_depth: usize) {
    match frame {
        Frame::Line(line) => deliver_line(receiver, &line, max_depth).await,
        Frame::TooLong(line) => receiver.too_long(line.recover_id()).await,
    }
}

/// Why [`read_until`] returned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ended {
    /// The input ended.
    Input,
    /// The caller's `end` completed first.
    Stopped,
}

/// Hands each frame of `reader` to `receiver` until the input ends or
/// `end` completes. The reader is left as it was, so a caller may read on.
///
/// # Errors
/// An I/O error of the input.
pub(crate) async fn read_until<R, T>(
    reader: &mut FrameReader<R>,
    receiver: &T,
    max_depth: usize,
    end: impl Future<Output = ()>,
) -> std::io::Result<Ended>
where
    R: AsyncRead + Unpin,
    T: Receiver,
{
    let mut end = std::pin::pin!(end);
    loop {
        // `FrameReader::next` is cancel safe: ending loses no frame it had
        // begun.
        let next = tokio::select! {
            next = reader.next() => next?,
            () = &mut end => return Ok(Ended::Stopped),
        };
        match next {
            Some(frame) => deliver(receiver, frame, max_depth).await,
            None => return Ok(Ended::Input),
        }
    }
}
