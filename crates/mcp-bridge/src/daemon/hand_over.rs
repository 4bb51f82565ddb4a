//! The client's stdin and stdout handed from `attach` to the daemon (Unix):
//! passed over the Unix socket (`SCM_RIGHTS`), so the daemon reads and
//! writes the client's own pipes and no process copies the bytes in
//! between.

use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};

use nix::sys::socket::{ControlMessage, ControlMessageOwned, MsgFlags, recvmsg, sendmsg};

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
    // Never inherited by the servers the daemon starts: close-on-exec as
    // they arrive where the system can, else just after.
    #[cfg(any(target_os = "linux", target_os = "android", target_os = "freebsd"))]
    let flags = MsgFlags::MSG_CMSG_CLOEXEC;
    #[cfg(not(any(target_os = "linux", target_os = "android", target_os = "freebsd")))]
    let flags = MsgFlags::empty();
    let message = recvmsg::<()>(socket, &mut iov, Some(&mut space), flags)?;
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
    #[cfg(not(any(target_os = "linux", target_os = "android", target_os = "freebsd")))]
    for fd in &fds {
        nix::fcntl::fcntl(fd, nix::fcntl::FcntlArg::F_SETFD(nix::fcntl::FdFlag::FD_CLOEXEC))?;
    }
    let mut fds = fds.into_iter();
    match (fds.next(), fds.next(), fds.next()) {
        (Some(input), Some(output), None) => Ok((input, output)),
        _ => Err(io::Error::new(io::ErrorKind::InvalidData, "the hand-over did not carry stdin and stdout")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
