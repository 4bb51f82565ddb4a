//! The upgrade request's head, read before the WebSocket handshake so a
//! protected endpoint can check its token (which takes an await, and
//! tungstenite's upgrade callback cannot), then handed to the handshake
//! as if never read.

use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, ReadBuf};

/// The longest upgrade request head taken.
pub(super) const MAX_HEAD_BYTES: usize = 16 * 1024;

/// Reads from `stream` up to the end of the request head (the blank line),
/// at most [`MAX_HEAD_BYTES`]; what came with it stays in the buffer.
/// `None` for a stream that ends first or a head over the limit.
pub(super) async fn read_head<S: AsyncRead + Unpin>(stream: &mut S) -> std::io::Result<Option<Vec<u8>>> {
    let mut read = Vec::with_capacity(1024);
    let mut chunk = [0u8; 1024];
    while head_len(&read).is_none() {
        if read.len() >= MAX_HEAD_BYTES {
            return Ok(None);
        }
        let n = stream.read(&mut chunk).await?;
        if n == 0 {
            return Ok(None);
        }
        read.extend_from_slice(&chunk[..n]);
    }
    Ok(Some(read))
}

/// Where the head ends (after its blank line), when it has.
fn head_len(bytes: &[u8]) -> Option<usize> {
    bytes.windows(4).position(|w| w == b"\r\n\r\n").map(|i| i + 4)
}

/// The values of the head's `Authorization` header lines.
pub(super) fn authorization_values(bytes: &[u8]) -> Vec<String> {
    let head = &bytes[..head_len(bytes).unwrap_or(bytes.len())];
    String::from_utf8_lossy(head)
        .split("\r\n")
        .skip(1)
        .filter_map(|line| line.split_once(':'))
        .filter(|(name, _)| name.trim().eq_ignore_ascii_case("authorization"))
        .map(|(_, value)| value.trim().to_owned())
        .collect()
}

/// A stream that gives back `read` first, then the rest of `inner`.
pub(super) struct Replay<S> {
    read: Vec<u8>,
    at: usize,
    inner: S,
}

impl<S> Replay<S> {
    pub(super) fn new(read: Vec<u8>, inner: S) -> Self {
        Replay { read, at: 0, inner }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Replay<S> {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<std::io::Result<()>> {
        if self.at < self.read.len() {
            let n = buf.remaining().min(self.read.len() - self.at);
            let at = self.at;
            buf.put_slice(&self.read[at..at + n]);
            self.at += n;
            if self.at == self.read.len() {
                self.read = Vec::new();
                self.at = 0;
            }
            return Poll::Ready(Ok(()));
        }
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Replay<S> {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use tokio::io::AsyncReadExt;

    use super::*;

    const HEAD: &[u8] =
        b"GET /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer abc\r\nauthorization:Bearer d\r\n\r\n";

    #[tokio::test]
    async fn the_head_is_read_whole_and_replayed_with_what_came_after_it() {
        let sent = [HEAD, b"after"].concat();
        let mut source: &[u8] = &sent;
        let read = read_head(&mut source).await.unwrap().unwrap();
        assert_eq!(authorization_values(&read), ["Bearer abc", "Bearer d"]);
        let mut replayed = Vec::new();
        Replay::new(read, source).read_to_end(&mut replayed).await.unwrap();
        assert_eq!(replayed, sent);
    }

    #[tokio::test]
    async fn a_head_cut_short_or_too_long_is_none() {
        let mut cut: &[u8] = b"GET /mcp HTTP/1.1\r\nHost: x\r\n";
        assert_eq!(read_head(&mut cut).await.unwrap(), None);
        let long = [b"GET / HTTP/1.1\r\nX: ".as_slice(), &vec![b'a'; MAX_HEAD_BYTES], b"\r\n\r\n"].concat();
        let mut long: &[u8] = &long;
        assert_eq!(read_head(&mut long).await.unwrap(), None);
    }
}
