//! The upgrade request's head, read before the WebSocket handshake so that
//! it is checked as an HTTP request is (a token check takes an await, and
//! tungstenite's upgrade callback cannot), then handed to the handshake as
//! if never read.

use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

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

    #[tokio::test]
    async fn what_was_read_comes_back_first_then_the_rest() {
        let mut replayed = Vec::new();
        Replay::new(b"head ".to_vec(), b"after".as_slice()).read_to_end(&mut replayed).await.unwrap();
        assert_eq!(replayed, b"head after");
    }
}
