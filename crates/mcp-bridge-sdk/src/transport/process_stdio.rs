//! This process's own stdin and stdout as async streams, for a program
//! spoken to over stdio (a server, the bridge).
//!
//! A client that spawns us hands us pipes (Rust, Python) or socket pairs
//! (Node.js, so VS Code, Claude Desktop, Cursor): those are read and written
//! by the runtime's event loop directly. Anything else (a terminal, a file)
//! goes through tokio's `stdin()`/`stdout()`, which hand every read and
//! write to a blocking thread and back; that hop costs each line tens of
//! microseconds and is why the event loop is preferred.
//!
//! Making the descriptors non-blocking changes their open file description,
//! which a process sharing it (started with our stdin, say) would see; the
//! programs of this workspace start their children with their own pipes.

use std::pin::Pin;

use tokio::io::{AsyncRead, AsyncWrite};

/// Our stdin as an async reader.
pub type Input = Pin<Box<dyn AsyncRead + Send>>;
/// Our stdout as an async writer.
pub type Output = Pin<Box<dyn AsyncWrite + Send>>;

/// This process's stdin. Must be called within a tokio runtime.
pub fn stdin() -> Input {
    #[cfg(unix)]
    if let Some(reader) = event_loop::reader(std::io::stdin()) {
        return reader;
    }
    Box::pin(tokio::io::stdin())
}

/// This process's stdout. Must be called within a tokio runtime.
pub fn stdout() -> Output {
    #[cfg(unix)]
    if let Some(writer) = event_loop::writer(std::io::stdout()) {
        return writer;
    }
    Box::pin(tokio::io::stdout())
}

/// A descriptor of another process's stdio (passed over a Unix socket) as
/// an async reader, when it is a pipe or a socket (the event loop reads it);
/// `None` for anything else.
#[cfg(unix)]
pub fn reader_of(fd: std::os::fd::OwnedFd) -> Option<Input> {
    event_loop::reader(fd)
}

/// A descriptor of another process's stdio as an async writer, when it is
/// a pipe or a socket; `None` for anything else.
#[cfg(unix)]
pub fn writer_of(fd: std::os::fd::OwnedFd) -> Option<Output> {
    event_loop::writer(fd)
}

#[cfg(unix)]
mod event_loop {
    use std::os::fd::{AsFd, OwnedFd};
    use std::os::unix::fs::FileTypeExt;

    use tokio::net::UnixStream;
    use tokio::net::unix::pipe;

    use super::{Input, Output};

    /// What a descriptor is, as far as the event loop cares.
    enum Kind {
        Pipe,
        Socket,
        Other,
    }

    /// A duplicate of `stream`'s descriptor and what it is.
    fn duplicate(stream: impl AsFd) -> Option<(OwnedFd, Kind)> {
        let fd = stream.as_fd().try_clone_to_owned().ok()?;
        let file = std::fs::File::from(fd);
        let file_type = file.metadata().ok()?.file_type();
        let kind = if file_type.is_fifo() {
            Kind::Pipe
        } else if file_type.is_socket() {
            Kind::Socket
        } else {
            Kind::Other
        };
        Some((OwnedFd::from(file), kind))
    }

    fn socket(fd: OwnedFd) -> Option<UnixStream> {
        let socket = std::os::unix::net::UnixStream::from(fd);
        socket.set_nonblocking(true).ok()?;
        UnixStream::from_std(socket).ok()
    }

    pub(super) fn reader(stream: impl AsFd) -> Option<Input> {
        match duplicate(stream)? {
            (fd, Kind::Pipe) => Some(Box::pin(pipe::Receiver::from_owned_fd(fd).ok()?)),
            (fd, Kind::Socket) => Some(Box::pin(socket(fd)?)),
            (_, Kind::Other) => None,
        }
    }

    pub(super) fn writer(stream: impl AsFd) -> Option<Output> {
        match duplicate(stream)? {
            (fd, Kind::Pipe) => Some(Box::pin(pipe::Sender::from_owned_fd(fd).ok()?)),
            (fd, Kind::Socket) => Some(Box::pin(socket(fd)?)),
            (_, Kind::Other) => None,
        }
    }
}
