//! `[api]`: tesserad's gRPC API (GoBGP's `apipb.GobgpApi`, crate `api`).
//!
//! ```toml
//! [api]
//! listen = "/run/tessera/api.sock"   # default; or "127.0.0.1:50051" (TCP)
//! insecure = false                   # TCP needs it: TLS is not built yet
//! ```
//!
//! The API is off without an `[api]` table. A Unix socket is guarded by
//! its file mode (0600: the user tesserad runs as). A TCP listener would
//! need TLS, which is not built yet, so TCP is refused unless
//! `insecure = true` says that plain text on that address is intended.

use std::net::SocketAddr;
use std::path::PathBuf;

use serde::Deserialize;

use crate::validate::{Ctx, R};

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawApi {
    pub listen: Option<String>,
    pub insecure: Option<bool>,
}

/// The default `api.listen`.
pub const DEFAULT_API_SOCKET: &str = "/run/tessera/api.sock";

/// Where the API listens.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ApiListen {
    /// A Unix stream socket at this path (`unix:PATH` or an absolute path).
    Unix(PathBuf),
    /// Plain TCP (`insecure = true` only).
    Tcp(SocketAddr),
}

/// `[api]`, validated.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Api {
    /// `api.listen`.
    pub listen: ApiListen,
}

pub(crate) fn validate(c: &Ctx<'_>, r: &RawApi) -> R<Api> {
    let text = r.listen.as_deref().unwrap_or(DEFAULT_API_SOCKET);
    let insecure = r.insecure.unwrap_or(false);
    let listen = if let Some(p) = text.strip_prefix("unix:") {
        let p = p.trim_start_matches("//");
        if p.is_empty() {
            return Err(c.err("api.listen", "an empty socket path"));
        }
        ApiListen::Unix(PathBuf::from(p))
    } else if text.starts_with('/') {
        ApiListen::Unix(PathBuf::from(text))
    } else {
        let a: SocketAddr = text.parse().map_err(|_| {
            c.err(
                "api.listen",
                format!(
                    "{text:?} is neither a socket path (\"/run/tessera/api.sock\", \
                     \"unix:PATH\") nor ADDR:PORT"
                ),
            )
        })?;
        if !insecure {
            return Err(c.err(
                "api.listen",
                "a TCP listener needs TLS, which is not supported yet: use a Unix socket, \
                 or set api.insecure = true for plain text on a trusted address",
            ));
        }
        ApiListen::Tcp(a)
    };
    if insecure && matches!(listen, ApiListen::Unix(_)) {
        return Err(c.err(
            "api.insecure",
            "only applies to a TCP listen address (a Unix socket is not encrypted anyway)",
        ));
    }
    Ok(Api { listen })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(t: &str) -> Result<crate::Config, String> {
        crate::parse(
            &format!("[router]\nid = \"192.0.2.1\"\nasn = 65000\n\n{t}"),
            "t.toml",
        )
        .map_err(|e| e.to_string())
    }

    #[test]
    fn absent_is_off_and_table_defaults_to_the_unix_socket() {
        assert_eq!(parse("").unwrap().api, None);
        assert_eq!(
            parse("[api]\n").unwrap().api.unwrap().listen,
            ApiListen::Unix(PathBuf::from(DEFAULT_API_SOCKET))
        );
        assert_eq!(
            parse("[api]\nlisten = \"unix:///tmp/x.sock\"\n")
                .unwrap()
                .api
                .unwrap()
                .listen,
            ApiListen::Unix(PathBuf::from("/tmp/x.sock"))
        );
    }

    #[test]
    fn tcp_needs_insecure_with_file_line() {
        let e = parse("[api]\nlisten = \"127.0.0.1:50051\"\n").unwrap_err();
        assert!(
            e.starts_with("t.toml:6:10: api.listen: a TCP listener needs TLS"),
            "{e}"
        );
        let a = parse("[api]\nlisten = \"127.0.0.1:50051\"\ninsecure = true\n").unwrap();
        assert_eq!(
            a.api.unwrap().listen,
            ApiListen::Tcp("127.0.0.1:50051".parse().unwrap())
        );
        let e = parse("[api]\ninsecure = true\n").unwrap_err();
        assert!(e.starts_with("t.toml:6:12: api.insecure:"), "{e}");
        let e = parse("[api]\nlisten = \"nowhere\"\n").unwrap_err();
        assert!(e.contains("api.listen: \"nowhere\" is neither"), "{e}");
        let e = parse("[api]\ntls = true\n").unwrap_err();
        assert!(e.contains("tls"), "{e}");
    }
}
