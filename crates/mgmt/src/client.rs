//! The client side of the control socket, used by `tessera`.

use crate::line::{read_line, LineRead};
use crate::proto::{
    Request, RequestEnvelope, Response, ResponseEnvelope, MAX_RESPONSE_BYTES, PROTOCOL_VERSION,
};
use std::io::{self, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::Duration;

/// Where tesserad listens unless configured otherwise.
pub const DEFAULT_SOCKET: &str = "/run/tessera/tesserad.sock";
/// Environment variable that overrides [`DEFAULT_SOCKET`].
pub const SOCKET_ENV: &str = "TESSERA_SOCKET";

/// `e`'s text without std's " (os error N)" suffix, which says nothing to
/// an operator.
fn describe(e: &io::Error) -> String {
    let s = e.to_string();
    match s.rfind(" (os error ") {
        Some(i) => s.get(..i).unwrap_or(&s).to_string(),
        None => s,
    }
}

fn connect_error(path: &Path, e: &io::Error) -> io::Error {
    let hint = match e.kind() {
        io::ErrorKind::NotFound | io::ErrorKind::ConnectionRefused => " (is tesserad running?)",
        io::ErrorKind::PermissionDenied => " (is your user in the socket's group?)",
        _ => "",
    };
    io::Error::new(
        e.kind(),
        format!(
            "cannot connect to tesserad at {}: {}{hint}",
            path.display(),
            describe(e)
        ),
    )
}

fn io_error(path: &Path, what: &str, e: &io::Error, timeout: Duration) -> io::Error {
    let text = match e.kind() {
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut => {
            format!("no answer within {:.1}s", timeout.as_secs_f64())
        }
        _ => describe(e),
    };
    io::Error::new(
        e.kind(),
        format!("tesserad at {}: {what}: {text}", path.display()),
    )
}

/// Sends `req` and waits for the response. `timeout` bounds each read and
/// write (a large `show route` streams for longer than one timeout, as
/// long as data keeps coming).
pub fn request(path: &Path, req: &Request, timeout: Duration) -> io::Result<Response> {
    let stream = UnixStream::connect(path).map_err(|e| connect_error(path, &e))?;
    // A zero timeout is an error for std; treat it as the smallest one.
    let t = timeout.max(Duration::from_millis(1));
    stream.set_read_timeout(Some(t))?;
    stream.set_write_timeout(Some(t))?;
    let env = RequestEnvelope {
        version: PROTOCOL_VERSION,
        request: req.clone(),
    };
    let mut line = serde_json::to_vec(&env)
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e.to_string()))?;
    line.push(b'\n');
    let mut w = &stream;
    w.write_all(&line)
        .map_err(|e| io_error(path, "sending request", &e, t))?;
    let mut reader = BufReader::new(&stream);
    let mut resp = Vec::new();
    match read_line(&mut reader, &mut resp, MAX_RESPONSE_BYTES) {
        Ok(LineRead::Line) => {}
        Ok(LineRead::Eof) => {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                format!(
                    "tesserad at {} closed the connection without answering",
                    path.display()
                ),
            ))
        }
        Ok(LineRead::TooLong) => {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!(
                "tesserad at {}: response larger than {MAX_RESPONSE_BYTES} bytes; narrow the query",
                path.display()
            ),
            ))
        }
        Err(e) => return Err(io_error(path, "reading response", &e, t)),
    }
    let env: ResponseEnvelope = serde_json::from_slice(&resp).map_err(|e| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!("tesserad at {}: invalid response: {e}", path.display()),
        )
    })?;
    Ok(env.response)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_socket_message() {
        let p = Path::new("/nonexistent-dir-for-tessera-test/tesserad.sock");
        let e = request(p, &Request::ShowStatus, Duration::from_secs(1)).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::NotFound);
        assert_eq!(
            e.to_string(),
            "cannot connect to tesserad at /nonexistent-dir-for-tessera-test/tesserad.sock: \
             No such file or directory (is tesserad running?)"
        );
    }
}
