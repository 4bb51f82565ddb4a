//! Where the daemon takes its clients' connections, never on TCP: a Unix
//! socket, whose connections of another user are refused; on Windows a
//! named pipe whose only access entry is this user's, that no other
//! machine may open, and that exists only if this process made it.

/// A connection taken, and the process id of its other end when known.
pub(crate) struct Accepted {
    pub(crate) stream: Stream,
    pub(crate) pid: Option<u32>,
}

/// A connection to the daemon.
#[cfg(unix)]
pub(crate) type Stream = tokio::net::UnixStream;

/// A connection to the daemon.
#[cfg(windows)]
pub(crate) type Stream = tokio::net::windows::named_pipe::NamedPipeServer;

#[cfg(unix)]
use unix as platform;
#[cfg(windows)]
use windows as platform;
#[cfg(windows)]
pub use windows::served_by_this_user;

/// Where the daemon takes its clients' connections (see the module).
#[derive(Debug)]
pub struct DaemonListener(platform::Listener);

impl DaemonListener {
    /// Listens at `path` (its folder should be this user's alone: the
    /// check of each connection's user is the second wall, not the first);
    /// the socket file is removed when this is dropped.
    ///
    /// # Errors
    /// The socket cannot be made there (a file is in the way, say).
    #[cfg(unix)]
    pub fn bind(path: &std::path::Path) -> std::io::Result<DaemonListener> {
        platform::Listener::bind(path).map(DaemonListener)
    }

    /// Makes the pipe `name` (`\\.\pipe\…`). Fails when a pipe of
    /// that name exists: whoever made it first would get the
    /// clients, so the name should be one nobody else can know.
    ///
    /// # Errors
    /// The pipe exists, or cannot be made.
    #[cfg(windows)]
    pub fn create(name: &str) -> std::io::Result<DaemonListener> {
        platform::Listener::create(name).map(DaemonListener)
    }

    /// The next connection; `None` for one refused (another user's).
    pub(crate) async fn accept(&mut self) -> std::io::Result<Option<Accepted>> {
        self.0.accept().await
    }
}

#[cfg(unix)]
mod unix {
    use std::io;
    use std::path::{Path, PathBuf};

    use super::Accepted;

    /// The daemon's Unix socket; its file is removed when this is dropped.
    #[derive(Debug)]
    pub(super) struct Listener {
        inner: tokio::net::UnixListener,
        path: PathBuf,
    }

    impl Listener {
        /// Listens at `path`.
        pub(super) fn bind(path: &Path) -> io::Result<Listener> {
            Ok(Listener { inner: tokio::net::UnixListener::bind(path)?, path: path.to_path_buf() })
        }

        /// The next connection; `None` for one of another user (refused).
        pub(super) async fn accept(&mut self) -> io::Result<Option<Accepted>> {
            let (stream, _) = self.inner.accept().await?;
            let peer = match stream.peer_cred() {
                Ok(peer) => peer,
                // Gone already (a probe that connected and closed, say).
                Err(error) => {
                    tracing::debug!("a connection's peer is unknown: {error}");
                    return Ok(None);
                }
            };
            // SAFETY: getuid has no preconditions and cannot fail.
            if peer.uid() != unsafe { libc::getuid() } {
                tracing::warn!(uid = peer.uid(), "a connection of another user refused");
                return Ok(None);
            }
            let pid = peer.pid().and_then(|pid| u32::try_from(pid).ok());
            Ok(Some(Accepted { stream, pid }))
        }
    }

    impl Drop for Listener {
        fn drop(&mut self) {
            // A client that comes now finds no socket and starts a daemon.
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

#[cfg(windows)]
mod windows {
    use std::io;
    use std::os::windows::io::AsRawHandle;

    use tokio::net::windows::named_pipe::{NamedPipeServer, ServerOptions};
    use windows_sys::Win32::Foundation::{CloseHandle, HANDLE, LocalFree};
    use windows_sys::Win32::Security::Authorization::{
        ConvertSidToStringSidW, ConvertStringSecurityDescriptorToSecurityDescriptorW, SDDL_REVISION_1,
    };
    use windows_sys::Win32::Security::{
        GetTokenInformation, PSECURITY_DESCRIPTOR, SECURITY_ATTRIBUTES, TOKEN_QUERY, TOKEN_USER, TokenUser,
    };
    use windows_sys::Win32::System::Pipes::GetNamedPipeClientProcessId;
    use windows_sys::Win32::System::Pipes::GetNamedPipeServerProcessId;
    use windows_sys::Win32::System::Threading::{GetCurrentProcess, OpenProcessToken};
    use windows_sys::Win32::System::Threading::{OpenProcess, PROCESS_QUERY_LIMITED_INFORMATION};

    use super::Accepted;

    /// The daemon's named pipe: one instance waits for the next client.
    #[derive(Debug)]
    pub(super) struct Listener {
        name: String,
        security: OnlyThisUser,
        next: NamedPipeServer,
    }

    impl Listener {
        /// Makes the pipe `name`, its first instance.
        pub(super) fn create(name: &str) -> io::Result<Listener> {
            let security = OnlyThisUser::new()?;
            let next = instance(name, &security, true)?;
            Ok(Listener { name: name.to_owned(), security, next })
        }

        /// The next connection (never refused here: the pipe's access
        /// list keeps other users out).
        pub(super) async fn accept(&mut self) -> io::Result<Option<Accepted>> {
            if let Err(error) = self.next.connect().await {
                // This instance is of no more use: another waits instead.
                self.next = instance(&self.name, &self.security, false)?;
                return Err(error);
            }
            let following = instance(&self.name, &self.security, false)?;
            let stream = std::mem::replace(&mut self.next, following);
            let mut pid = 0u32;
            // SAFETY: the handle is the connected pipe's, open for the call.
            let known = unsafe { GetNamedPipeClientProcessId(stream.as_raw_handle() as HANDLE, &mut pid) } != 0;
            Ok(Some(Accepted { stream, pid: known.then_some(pid) }))
        }

        /// The pipe's instance that waits for a client, to look at its
        /// security in tests.
        #[cfg(test)]
        pub(crate) fn waiting(&self) -> &NamedPipeServer {
            &self.next
        }
    }

    /// One instance of the pipe, given `security`; the first one fails
    /// when the name is taken.
    fn instance(name: &str, security: &OnlyThisUser, first: bool) -> io::Result<NamedPipeServer> {
        let mut attributes = SECURITY_ATTRIBUTES {
            nLength: std::mem::size_of::<SECURITY_ATTRIBUTES>() as u32,
            lpSecurityDescriptor: security.0,
            bInheritHandle: 0,
        };
        let mut options = ServerOptions::new();
        options.first_pipe_instance(first).reject_remote_clients(true);
        // SAFETY: `attributes` is a valid SECURITY_ATTRIBUTES for the call,
        // its descriptor owned by `security`, which outlives it.
        unsafe { options.create_with_security_attributes_raw(name, (&raw mut attributes).cast()) }
    }

    /// A security descriptor whose access list has one entry, not
    /// inherited: this process's user may do everything.
    #[derive(Debug)]
    pub(crate) struct OnlyThisUser(PSECURITY_DESCRIPTOR);

    // SAFETY: the descriptor is memory of its own, only read after it is
    // made, and freed once.
    unsafe impl Send for OnlyThisUser {}
    // SAFETY: as for Send: nothing writes it.
    unsafe impl Sync for OnlyThisUser {}

    impl OnlyThisUser {
        fn new() -> io::Result<Self> {
            let sddl: Vec<u16> = format!("D:P(A;;GA;;;{})", user_sid()?).encode_utf16().chain([0]).collect();
            let mut descriptor: PSECURITY_DESCRIPTOR = std::ptr::null_mut();
            // SAFETY: `sddl` is a terminated wide string; the descriptor
            // is written on success and freed by Drop.
            let made = unsafe {
                ConvertStringSecurityDescriptorToSecurityDescriptorW(
                    sddl.as_ptr(),
                    SDDL_REVISION_1,
                    &mut descriptor,
                    std::ptr::null_mut(),
                )
            };
            if made == 0 {
                return Err(io::Error::last_os_error());
            }
            Ok(OnlyThisUser(descriptor))
        }
    }

    impl Drop for OnlyThisUser {
        fn drop(&mut self) {
            // SAFETY: allocated by ConvertStringSecurityDescriptorToSecurityDescriptorW.
            unsafe { LocalFree(self.0) };
        }
    }

    /// Whether the pipe a client opened (`pipe`, its end) was made by a
    /// process of this user: a pipe of the daemon's name made by another
    /// user (who saw the name, and made it once the daemon was gone) is
    /// not the daemon, and gets nothing.
    ///
    /// # Errors
    /// The pipe's server or its user cannot be known.
    pub fn served_by_this_user(pipe: &impl AsRawHandle) -> io::Result<bool> {
        let mut pid = 0u32;
        // SAFETY: the handle is the open pipe's; `pid` is written on success.
        if unsafe { GetNamedPipeServerProcessId(pipe.as_raw_handle() as HANDLE, &mut pid) } == 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: no pointer is passed; a null handle is checked.
        let process = unsafe { OpenProcess(PROCESS_QUERY_LIMITED_INFORMATION, 0, pid) };
        if process.is_null() {
            return Err(io::Error::last_os_error());
        }
        let server = process_user_sid(process);
        // SAFETY: opened above, closed once.
        unsafe { CloseHandle(process) };
        Ok(server? == user_sid()?)
    }

    /// This process's user's security identifier, as text (`S-1-5-21-…`).
    pub(crate) fn user_sid() -> io::Result<String> {
        // SAFETY: the pseudo-handle of this process needs no closing.
        process_user_sid(unsafe { GetCurrentProcess() })
    }

    /// The security identifier of the user `process` runs as.
    fn process_user_sid(process: HANDLE) -> io::Result<String> {
        let mut token: HANDLE = std::ptr::null_mut();
        // SAFETY: an open process handle; `token` is written on success.
        if unsafe { OpenProcessToken(process, TOKEN_QUERY, &mut token) } == 0 {
            return Err(io::Error::last_os_error());
        }
        let sid = token_user_sid(token);
        // SAFETY: opened above, closed once.
        unsafe { CloseHandle(token) };
        sid
    }

    /// The text of a terminated wide string the system allocated, which is
    /// freed.
    ///
    /// # Safety
    /// `text` is such a string (from `LocalAlloc`), not used after.
    pub(super) unsafe fn take_local_text(text: *mut u16) -> String {
        // SAFETY: terminated, as the caller says; freed once.
        unsafe {
            let length = (0..).take_while(|&i| *text.add(i) != 0).count();
            let string = String::from_utf16_lossy(std::slice::from_raw_parts(text, length));
            LocalFree(text.cast());
            string
        }
    }

    fn token_user_sid(token: HANDLE) -> io::Result<String> {
        let mut length = 0u32;
        // SAFETY: a size query: nothing is written but `length`.
        unsafe { GetTokenInformation(token, TokenUser, std::ptr::null_mut(), 0, &mut length) };
        // u64s: aligned for TOKEN_USER.
        let mut buffer = vec![0u64; (length as usize).div_ceil(8).max(1)];
        // SAFETY: `buffer` holds `length` bytes.
        let read = unsafe { GetTokenInformation(token, TokenUser, buffer.as_mut_ptr().cast(), length, &mut length) };
        if read == 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: filled with a TOKEN_USER (and the SID it points into).
        let user = unsafe { &*buffer.as_ptr().cast::<TOKEN_USER>() };
        let mut text: *mut u16 = std::ptr::null_mut();
        // SAFETY: the SID is valid while `buffer` lives; `text` is written on success.
        if unsafe { ConvertSidToStringSidW(user.User.Sid, &mut text) } == 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: a string of the call above, not used after.
        Ok(unsafe { take_local_text(text) })
    }

    #[cfg(test)]
    mod tests {
        use windows_sys::Win32::Security::Authorization::{
            ConvertSecurityDescriptorToStringSecurityDescriptorW, GetSecurityInfo, SE_KERNEL_OBJECT,
        };
        use windows_sys::Win32::Security::DACL_SECURITY_INFORMATION;

        use super::*;

        /// Whether this runs under Wine (its ntdll says its version).
        fn under_wine() -> bool {
            use windows_sys::Win32::System::LibraryLoader::{GetModuleHandleA, GetProcAddress};
            // SAFETY: terminated names; ntdll is loaded in every process.
            unsafe {
                let ntdll = GetModuleHandleA(c"ntdll.dll".as_ptr().cast());
                !ntdll.is_null() && GetProcAddress(ntdll, c"wine_get_version".as_ptr().cast()).is_some()
            }
        }

        /// The access list of a pipe's instance, as SDDL.
        fn access_list(pipe: &NamedPipeServer) -> String {
            let mut descriptor: PSECURITY_DESCRIPTOR = std::ptr::null_mut();
            let mut dacl = std::ptr::null_mut();
            // SAFETY: the pipe's handle is open; `descriptor` is written on success.
            let read = unsafe {
                GetSecurityInfo(
                    pipe.as_raw_handle() as HANDLE,
                    SE_KERNEL_OBJECT,
                    DACL_SECURITY_INFORMATION,
                    std::ptr::null_mut(),
                    std::ptr::null_mut(),
                    &mut dacl,
                    std::ptr::null_mut(),
                    &mut descriptor,
                )
            };
            assert_eq!(read, 0, "GetSecurityInfo: {read}");
            let mut text: *mut u16 = std::ptr::null_mut();
            // SAFETY: `descriptor` is the one read above; `text` is written on success.
            let converted = unsafe {
                ConvertSecurityDescriptorToStringSecurityDescriptorW(
                    descriptor,
                    SDDL_REVISION_1,
                    DACL_SECURITY_INFORMATION,
                    &mut text,
                    std::ptr::null_mut(),
                )
            };
            assert_ne!(converted, 0, "{}", io::Error::last_os_error());
            // SAFETY: both from the calls above, freed once.
            unsafe {
                LocalFree(descriptor);
                take_local_text(text)
            }
        }

        #[tokio::test]
        async fn the_pipe_is_this_users_alone_and_exists_once() {
            let name = format!(r"\\.\pipe\mcp-bridge-test-{}", std::process::id());
            let mut listener = Listener::create(&name).unwrap();
            let sid = user_sid().unwrap();
            assert!(sid.starts_with("S-1-"), "{sid}");
            let sddl = access_list(listener.waiting());
            assert!(sddl.starts_with("D:P"), "not inherited: {sddl}");
            assert_eq!(sddl.matches('(').count(), 1, "one entry: {sddl}");
            assert!(sddl.contains(&format!(";;;{sid})")), "this user's: {sddl}");
            match Listener::create(&name) {
                Err(taken) => assert_eq!(taken.kind(), io::ErrorKind::PermissionDenied, "{taken}"),
                // Wine makes no difference of a first instance (its own
                // tests mark it to do): Windows is checked by the release
                // workflow, which runs this test natively.
                Ok(_) if under_wine() => eprintln!("Wine: a second maker of a pipe's name is not refused"),
                Ok(_) => panic!("a second maker of the pipe's name was not refused"),
            }
            for _ in 0..2 {
                let client = tokio::net::windows::named_pipe::ClientOptions::new().open(&name).unwrap();
                assert!(served_by_this_user(&client).unwrap(), "made by this user");
                let accepted = listener.accept().await.unwrap().unwrap();
                assert_eq!(accepted.pid, Some(std::process::id()));
                assert!(access_list(listener.waiting()).contains(&sid), "each instance the same");
            }
        }
    }
}

/// A connection's bytes: read and write halves that serve apart.
#[cfg(unix)]
pub(crate) fn split(stream: Stream) -> (tokio::net::unix::OwnedReadHalf, tokio::net::unix::OwnedWriteHalf) {
    stream.into_split()
}

/// A connection's bytes: read and write halves that serve apart.
#[cfg(windows)]
pub(crate) fn split(stream: Stream) -> (tokio::io::ReadHalf<Stream>, tokio::io::WriteHalf<Stream>) {
    tokio::io::split(stream)
}

/// What [`split`] gives to read.
#[cfg(unix)]
pub(crate) type ReadHalf = tokio::net::unix::OwnedReadHalf;
/// What [`split`] gives to read.
#[cfg(windows)]
pub(crate) type ReadHalf = tokio::io::ReadHalf<Stream>;
/// What [`split`] gives to write.
#[cfg(unix)]
pub(crate) type WriteHalf = tokio::net::unix::OwnedWriteHalf;
/// What [`split`] gives to write.
#[cfg(windows)]
pub(crate) type WriteHalf = tokio::io::WriteHalf<Stream>;
