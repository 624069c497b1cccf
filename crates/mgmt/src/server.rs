//! The control socket: a Unix stream socket served by std threads (the
//! daemon's tokio runtime and RIB thread never block on a CLI client).
//!
//! One accept thread polls a non-blocking listener so that
//! [`ServerHandle::shutdown`] can stop it without a wake-up connection;
//! each connection gets its own thread (at most [`MAX_CONNECTIONS`] at
//! once, plus one slot kept for the daemon's own user, see [`Limits`]),
//! with a deadline for each whole request and a write timeout, and carries
//! request/response lines until the client closes or is idle for a
//! request's deadline. Nothing a client sends can panic the server: an
//! unparsable or oversized line gets an error response, and a panic inside
//! the handler is caught and answered with [`ErrorCode::Internal`].

use crate::deadline::Deadline;
use crate::line::{read_line, LineRead};
use crate::proto::{
    ErrorCode, Request, RequestEnvelope, Response, ResponseEnvelope, MAX_REQUEST_BYTES,
    PROTOCOL_VERSION,
};
use std::fs;
use std::io::{self, BufReader, Write};
use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::os::unix::net::{UnixListener, UnixStream};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::{self, JoinHandle};
use std::time::Duration;

/// Answers CLI requests. Implemented by the daemon; called from the
/// connection threads, possibly several at once.
pub trait ControlHandler: Send + Sync + 'static {
    fn handle(&self, req: Request) -> Response;
}

/// Concurrent CLI connections; more are answered with [`ErrorCode::Busy`].
pub const MAX_CONNECTIONS: usize = 16;
/// A client must send each whole request line within this time of
/// connecting or of the previous response (however it spreads its bytes).
pub const READ_TIMEOUT: Duration = Duration::from_secs(10);
/// A response write that makes no progress for this long is abandoned.
pub const WRITE_TIMEOUT: Duration = Duration::from_secs(30);

/// How many connections a server takes and how long a request may take.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Connections of any client at once.
    pub max: usize,
    /// Connections beyond `max` kept for a privileged client (the control
    /// socket: one of the daemon's own user or root, by the socket's peer
    /// credentials; metrics: a client on a loopback address), so that
    /// slow or stuck clients elsewhere cannot lock it out.
    pub reserved: usize,
    /// Deadline for each whole request (see [`READ_TIMEOUT`]).
    pub request: Duration,
    /// The same in a reserved slot: short, since the CLI writes its
    /// request at once.
    pub reserved_request: Duration,
}

/// The control socket's limits.
pub const CONTROL_LIMITS: Limits = Limits {
    max: MAX_CONNECTIONS,
    reserved: 1,
    request: READ_TIMEOUT,
    reserved_request: Duration::from_secs(2),
};
/// How often the accept loop looks at the stop flag.
const POLL: Duration = Duration::from_millis(20);

/// Permissions of the control socket: owner and group (the operators'
/// group) may connect; nobody else.
pub const SOCKET_MODE: u32 = 0o660;

enum Local {
    Unix(PathBuf),
}

/// A running server. Dropping it (or [`ServerHandle::shutdown`]) stops the
/// accept thread and, for the control socket, removes the socket file;
/// connections already accepted finish their current request.
pub struct ServerHandle {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
    local: Local,
}

impl ServerHandle {
    /// The socket path (control server).
    pub fn socket_path(&self) -> Option<&Path> {
        match &self.local {
            Local::Unix(p) => Some(p),
        }
    }

    /// Stops accepting and waits for the accept thread.
    pub fn shutdown(mut self) {
        self.stop_now();
    }

    fn stop_now(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
            let Local::Unix(p) = &self.local;
            let _ = fs::remove_file(p);
        }
    }
}

impl Drop for ServerHandle {
    fn drop(&mut self) {
        self.stop_now();
    }
}

/// Counts a connection thread for as long as it lives.
pub(crate) struct ConnSlot(Arc<AtomicUsize>);

impl ConnSlot {
    /// A slot, or `None` when `max` connections are already open.
    pub(crate) fn try_take(active: &Arc<AtomicUsize>, max: usize) -> Option<ConnSlot> {
        let prev = active.fetch_add(1, Ordering::SeqCst);
        if prev >= max {
            active.fetch_sub(1, Ordering::SeqCst);
            return None;
        }
        Some(ConnSlot(Arc::clone(active)))
    }
}

impl Drop for ConnSlot {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Runs `accept` (non-blocking) until `stop`, passing each accepted item
/// to `on_conn`. Shared by the control and metrics servers.
pub(crate) fn spawn_accept_loop<T, A, C>(
    name: &str,
    stop: Arc<AtomicBool>,
    mut accept: A,
    mut on_conn: C,
) -> io::Result<JoinHandle<()>>
where
    A: FnMut() -> io::Result<T> + Send + 'static,
    C: FnMut(T) + Send + 'static,
{
    thread::Builder::new().name(name.into()).spawn(move || {
        while !stop.load(Ordering::SeqCst) {
            match accept() {
                Ok(c) => on_conn(c),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => thread::sleep(POLL),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                // Out of descriptors and the like: back off, keep serving.
                Err(_) => thread::sleep(POLL * 5),
            }
        }
    })
}

pub(crate) fn with_ctx(e: io::Error, what: &str, path: &Path) -> io::Error {
    io::Error::new(e.kind(), format!("{what} {}: {e}", path.display()))
}

/// Removes a socket file left by a daemon that died, refusing to remove
/// anything that is not a socket or a socket someone still listens on.
fn remove_stale(path: &Path) -> io::Result<()> {
    match fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_socket() => {
            if UnixStream::connect(path).is_ok() {
                return Err(io::Error::new(
                    io::ErrorKind::AddrInUse,
                    format!(
                        "{}: another process is listening on this socket",
                        path.display()
                    ),
                ));
            }
            fs::remove_file(path).map_err(|e| with_ctx(e, "cannot remove stale socket", path))
        }
        Ok(_) => Err(io::Error::new(
            io::ErrorKind::AlreadyExists,
            format!("{}: exists and is not a socket", path.display()),
        )),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(with_ctx(e, "cannot stat", path)),
    }
}

/// A slot for a new connection: a normal one, else a reserved one when
/// `privileged` says the client may have it; with the request deadline
/// that comes with it. `None`: all taken.
pub(crate) fn take_slot(
    active: &Arc<AtomicUsize>,
    reserve: &Arc<AtomicUsize>,
    limits: &Limits,
    privileged: impl FnOnce() -> bool,
) -> Option<(ConnSlot, Duration)> {
    if let Some(s) = ConnSlot::try_take(active, limits.max) {
        return Some((s, limits.request));
    }
    if limits.reserved == 0 || !privileged() {
        return None;
    }
    ConnSlot::try_take(reserve, limits.reserved).map(|s| (s, limits.reserved_request))
}

/// Whether the peer of `s` runs as root or as our own user (SO_PEERCRED):
/// the operator's CLI on this host, as opposed to others of the socket's
/// group.
fn own_user(s: &UnixStream) -> bool {
    let mut cred = libc::ucred {
        pid: 0,
        uid: u32::MAX,
        gid: u32::MAX,
    };
    let mut len = std::mem::size_of::<libc::ucred>() as libc::socklen_t;
    // SAFETY: getsockopt writes at most `len` bytes into `cred`, a
    // `ucred` of that size, on a descriptor `s` keeps open.
    let r = unsafe {
        libc::getsockopt(
            std::os::fd::AsRawFd::as_raw_fd(s),
            libc::SOL_SOCKET,
            libc::SO_PEERCRED,
            (&mut cred as *mut libc::ucred).cast(),
            &mut len,
        )
    };
    // SAFETY: geteuid cannot fail.
    r == 0 && (cred.uid == 0 || cred.uid == unsafe { libc::geteuid() })
}

/// Serves the control protocol on a Unix socket at `path` (mode 0660).
pub fn serve_unix(path: &Path, handler: Arc<dyn ControlHandler>) -> io::Result<ServerHandle> {
    serve_unix_with(path, handler, CONTROL_LIMITS)
}

/// [`serve_unix`] with other limits (tests use short deadlines).
pub fn serve_unix_with(
    path: &Path,
    handler: Arc<dyn ControlHandler>,
    limits: Limits,
) -> io::Result<ServerHandle> {
    remove_stale(path)?;
    let listener = UnixListener::bind(path).map_err(|e| with_ctx(e, "cannot bind", path))?;
    // Between bind and chmod the socket has the umask's mode; the daemon's
    // runtime directory (/run/tessera, 0750) is what keeps others out then.
    fs::set_permissions(path, fs::Permissions::from_mode(SOCKET_MODE))
        .map_err(|e| with_ctx(e, "cannot chmod", path))?;
    listener.set_nonblocking(true)?;
    let stop = Arc::new(AtomicBool::new(false));
    let active = Arc::new(AtomicUsize::new(0));
    let reserve = Arc::new(AtomicUsize::new(0));
    let thread = spawn_accept_loop(
        "mgmt-cli",
        Arc::clone(&stop),
        move || listener.accept().map(|(s, _)| s),
        move |stream: UnixStream| {
            let Some((slot, request)) = take_slot(&active, &reserve, &limits, || own_user(&stream))
            else {
                let mut s = stream;
                let _ = s.set_nonblocking(false);
                let _ = s.set_write_timeout(Some(Duration::from_secs(1)));
                let busy = Response::error(ErrorCode::Busy, "tesserad: too many CLI connections");
                let _ = s.write_all(&encode_response(&busy));
                return;
            };
            let h = Arc::clone(&handler);
            let spawned = thread::Builder::new()
                .name("mgmt-cli-conn".into())
                .spawn(move || {
                    let _slot = slot;
                    serve_conn(stream, &*h, request);
                });
            // Thread creation failing (resource limits) only drops this
            // connection; the client sees it closed.
            drop(spawned);
        },
    )?;
    Ok(ServerHandle {
        stop,
        thread: Some(thread),
        local: Local::Unix(path.to_path_buf()),
    })
}

/// One response line, newline included.
pub fn encode_response(resp: &Response) -> Vec<u8> {
    let env = ResponseEnvelope {
        version: PROTOCOL_VERSION,
        response: resp.clone(),
    };
    let mut v = serde_json::to_vec(&env).unwrap_or_else(|_| {
        // Not reachable with these types (no maps with non-string keys, no
        // floats); kept so a future type cannot take the server down.
        br#"{"version":1,"response":{"error":{"code":"internal","message":"cannot encode response"}}}"#
            .to_vec()
    });
    v.push(b'\n');
    v
}

/// Parses one request line and runs the handler on it.
pub fn handle_line(line: &[u8], handler: &dyn ControlHandler) -> Response {
    let env: RequestEnvelope = match serde_json::from_slice(line) {
        Ok(e) => e,
        Err(e) => {
            return Response::error(ErrorCode::BadRequest, format!("invalid request: {e}"));
        }
    };
    if env.version > PROTOCOL_VERSION {
        return Response::error(
            ErrorCode::VersionMismatch,
            format!(
                "request uses protocol version {}, tesserad speaks {PROTOCOL_VERSION}; upgrade tesserad",
                env.version
            ),
        );
    }
    match catch_unwind(AssertUnwindSafe(|| handler.handle(env.request))) {
        Ok(r) => r,
        Err(_) => Response::error(ErrorCode::Internal, "internal error in tesserad"),
    }
}

fn serve_conn(stream: UnixStream, handler: &dyn ControlHandler, request: Duration) {
    // Accepted sockets do not inherit O_NONBLOCK on Linux; be explicit.
    if stream.set_nonblocking(false).is_err()
        || stream.set_write_timeout(Some(WRITE_TIMEOUT)).is_err()
    {
        return;
    }
    let Ok(mut writer) = stream.try_clone() else {
        return;
    };
    // The deadline runs from the connection's start and then from each
    // response: blank lines do not renew it.
    let mut reader = BufReader::new(Deadline::new(&stream, request));
    let mut line = Vec::new();
    loop {
        line.clear();
        let resp = match read_line(&mut reader, &mut line, MAX_REQUEST_BYTES) {
            Ok(LineRead::Eof) | Err(_) => return,
            Ok(LineRead::TooLong) => {
                let r = Response::error(
                    ErrorCode::TooLarge,
                    format!("request longer than {MAX_REQUEST_BYTES} bytes"),
                );
                let _ = writer.write_all(&encode_response(&r));
                return;
            }
            Ok(LineRead::Line) => {
                if line.iter().all(u8::is_ascii_whitespace) {
                    continue;
                }
                handle_line(&line, handler)
            }
        };
        if writer.write_all(&encode_response(&resp)).is_err() {
            return;
        }
        reader.get_mut().restart(request);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::Data;

    struct Panics;
    impl ControlHandler for Panics {
        fn handle(&self, _req: Request) -> Response {
            panic!("handler bug");
        }
    }

    struct Echo;
    impl ControlHandler for Echo {
        fn handle(&self, req: Request) -> Response {
            match req {
                Request::ShowStatus => Response::Ok(Data::Action(vec![])),
                _ => Response::error(ErrorCode::Unsupported, "no"),
            }
        }
    }

    fn code(r: &Response) -> Option<ErrorCode> {
        match r {
            Response::Error { code, .. } => Some(*code),
            Response::Ok(_) => None,
        }
    }

    #[test]
    fn garbage_lines_get_bad_request() {
        for g in [
            &b""[..],
            b"{",
            b"null",
            b"\xff\xfe",
            b"{\"version\":1}",
            b"{\"version\":1,\"request\":{\"command\":\"rm -rf\"}}",
            b"{\"version\":-1,\"request\":{\"command\":\"show_status\"}}",
        ] {
            assert_eq!(code(&handle_line(g, &Echo)), Some(ErrorCode::BadRequest));
        }
        let ok = br#"{"version":1,"request":{"command":"show_status"}}"#;
        assert_eq!(code(&handle_line(ok, &Echo)), None);
        let newer = br#"{"version":99,"request":{"command":"show_status"}}"#;
        assert_eq!(
            code(&handle_line(newer, &Echo)),
            Some(ErrorCode::VersionMismatch)
        );
    }

    #[test]
    fn handler_panic_is_an_internal_error() {
        let ok = br#"{"version":1,"request":{"command":"show_status"}}"#;
        assert_eq!(code(&handle_line(ok, &Panics)), Some(ErrorCode::Internal));
    }

    #[test]
    fn connection_slots_are_bounded() {
        let active = Arc::new(AtomicUsize::new(0));
        let a = ConnSlot::try_take(&active, 2).unwrap();
        let _b = ConnSlot::try_take(&active, 2).unwrap();
        assert!(ConnSlot::try_take(&active, 2).is_none());
        drop(a);
        assert!(ConnSlot::try_take(&active, 2).is_some());
    }
}
