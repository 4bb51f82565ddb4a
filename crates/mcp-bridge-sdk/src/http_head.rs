//! An HTTP/1 head read off a byte stream where no HTTP server or client
//! owns the connection: a WebSocket upgrade, whose token is checked before
//! the handshake, and a proxy's answer to `CONNECT`. The head is parsed by
//! `httparse`, the parser hyper itself uses.

use http::{HeaderMap, HeaderName, HeaderValue};
use tokio::io::{AsyncRead, AsyncReadExt};

/// Header lines taken in one head: far beyond what a browser or a client
/// library sends, and a bound on the parser's table.
const MAX_HEADERS: usize = 64;

/// Why no head was read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HeadError {
    /// The stream ended before the head did.
    Ended,
    /// The head is longer than the limit.
    TooLong,
    /// The bytes are not an HTTP/1 head.
    Malformed,
}

impl std::fmt::Display for HeadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            HeadError::Ended => "the connection ended before the HTTP head did",
            HeadError::TooLong => "the HTTP head is over the limit",
            HeadError::Malformed => "the bytes are not an HTTP/1 head",
        })
    }
}

/// A request head: its method, the path of its target (without the
/// query), its headers (lines that are not valid header names or values
/// left out) and its length in bytes.
#[derive(Debug)]
pub struct RequestHead {
    /// The method.
    pub method: String,
    /// The minor version of HTTP/1 (1 for HTTP/1.1).
    pub version: u8,
    /// The target's path.
    pub path: String,
    /// The header lines.
    pub headers: HeaderMap,
    /// The bytes of the head, its blank line included: what follows is the
    /// body, or another protocol's bytes.
    pub length: usize,
}

/// What a parser makes of the bytes read so far: `None` while the head is
/// incomplete.
pub(crate) type Parsed<T> = Option<Result<T, HeadError>>;

/// Reads from `stream`, `chunk` bytes at a time, until `parse` finds a whole
/// head, at most `max` bytes. Returns the head and every byte read (the
/// head, and what came after it in the last read).
///
/// # Errors
/// An I/O error of the stream; inside, why no head was read.
pub(crate) async fn read_head<S, T>(
    stream: &mut S,
    chunk: usize,
    max: usize,
    parse: impl Fn(&[u8]) -> Parsed<T>,
) -> std::io::Result<Result<(T, Vec<u8>), HeadError>>
where
    S: AsyncRead + Unpin,
{
    let mut read = Vec::with_capacity(chunk.min(max));
    let mut buf = vec![0u8; chunk];
    loop {
        let n = stream.read(&mut buf).await?;
        if n == 0 {
            return Ok(Err(HeadError::Ended));
        }
        read.extend_from_slice(&buf[..n]);
        // A head ends with a line: the parser runs once per line at most.
        if buf[..n].contains(&b'\n') {
            match parse(&read) {
                Some(Ok(head)) => return Ok(Ok((head, read))),
                Some(Err(e)) => return Ok(Err(e)),
                None => {}
            }
        }
        if read.len() >= max {
            return Ok(Err(HeadError::TooLong));
        }
    }
}

/// A request head in `bytes`, when they hold a whole one.
pub fn parse_request(bytes: &[u8]) -> Parsed<RequestHead> {
    let mut lines = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut request = httparse::Request::new(&mut lines);
    match request.parse(bytes) {
        Ok(httparse::Status::Partial) => None,
        Err(_) => Some(Err(HeadError::Malformed)),
        Ok(httparse::Status::Complete(length)) => {
            let target = request.path.unwrap_or("/");
            let path = target.split('?').next().unwrap_or(target).to_owned();
            let method = request.method.unwrap_or_default().to_owned();
            let version = request.version.unwrap_or_default();
            Some(Ok(RequestHead { method, version, path, headers: header_map(request.headers), length }))
        }
    }
}

/// The status of a response head in `bytes`, when they hold a whole one.
pub fn parse_status(bytes: &[u8]) -> Parsed<u16> {
    let mut lines = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut response = httparse::Response::new(&mut lines);
    match response.parse(bytes) {
        Ok(httparse::Status::Partial) => None,
        Err(_) => Some(Err(HeadError::Malformed)),
        Ok(httparse::Status::Complete(_)) => Some(response.code.ok_or(HeadError::Malformed)),
    }
}

fn header_map(lines: &[httparse::Header<'_>]) -> HeaderMap {
    let mut headers = HeaderMap::new();
    for line in lines {
        if let (Ok(name), Ok(value)) =
            (HeaderName::from_bytes(line.name.as_bytes()), HeaderValue::from_bytes(line.value))
        {
            headers.append(name, value);
        }
    }
    headers
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEAD: &[u8] =
        b"GET /mcp?x=1 HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer abc\r\nauthorization:Bearer d\r\n\r\n";

    #[tokio::test]
    async fn a_request_head_is_read_whole_with_what_came_after_it() {
        let sent = [HEAD, b"after"].concat();
        let mut source: &[u8] = &sent;
        let (head, read) = read_head(&mut source, 1024, 16 * 1024, parse_request).await.unwrap().unwrap();
        assert_eq!(head.path, "/mcp");
        let values: Vec<_> = head.headers.get_all("authorization").iter().map(|v| v.to_str().unwrap()).collect();
        assert_eq!(values, ["Bearer abc", "Bearer d"]);
        assert_eq!(read, sent);
    }

    #[tokio::test]
    async fn a_head_cut_short_too_long_or_not_http_is_refused() {
        let mut cut: &[u8] = b"GET /mcp HTTP/1.1\r\nHost: x\r\n";
        assert_eq!(read_head(&mut cut, 1024, 1024, parse_request).await.unwrap().unwrap_err(), HeadError::Ended);
        let long = [b"GET / HTTP/1.1\r\nX: ".as_slice(), &vec![b'a'; 4096], b"\r\n\r\n"].concat();
        let mut long: &[u8] = &long;
        assert_eq!(read_head(&mut long, 1024, 1024, parse_request).await.unwrap().unwrap_err(), HeadError::TooLong);
        let mut ssh: &[u8] = b"SSH-2.0-x\r\n\r\n";
        assert_eq!(read_head(&mut ssh, 1, 1024, parse_status).await.unwrap().unwrap_err(), HeadError::Malformed);
    }

    #[tokio::test]
    async fn a_response_head_read_byte_by_byte_takes_nothing_after_it() {
        let mut source: &[u8] = b"HTTP/1.0 407 Proxy Authentication Required\r\nX: y\r\n\r\ntunnel";
        let (status, read) = read_head(&mut source, 1, 1024, parse_status).await.unwrap().unwrap();
        assert_eq!(status, 407);
        assert!(read.ends_with(b"y\r\n\r\n"));
        assert_eq!(source, b"tunnel");
    }
}
