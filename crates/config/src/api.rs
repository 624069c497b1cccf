//! `[api]`: tesserad's gRPC API (GoBGP's `apipb.GobgpApi`, crate `api`).
//!
//! ```toml
//! [api]
//! listen = "/run/tessera/api.sock"   # default; or "127.0.0.1:50051" (TCP)
//! tls_cert = "/etc/tessera/api.crt"  # TCP: PEM certificate chain
//! tls_key = "/etc/tessera/api.key"   # TCP: its PEM private key
//! tls_client_ca = "/etc/tessera/ca.crt"  # optional: client certificates required
//! insecure = false                   # TCP without TLS: plain text, on purpose
//! ```
//!
//! The API is off without an `[api]` table. A Unix socket is guarded by
//! its file mode (0600: the user tesserad runs as). A TCP listener needs
//! TLS (`tls_cert` and `tls_key`; with `tls_client_ca`, a client must
//! present a certificate signed by that CA), unless `insecure = true` says
//! that plain text on that address is intended. The files are read when
//! the listener starts (tesserad start), so that a bad file stops the
//! start with its path.

use std::net::SocketAddr;
use std::path::PathBuf;

use serde::Deserialize;

use crate::validate::{Ctx, R};

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawApi {
    pub listen: Option<String>,
    pub insecure: Option<bool>,
    pub tls_cert: Option<String>,
    pub tls_key: Option<String>,
    pub tls_client_ca: Option<String>,
}

/// The default `api.listen`.
pub const DEFAULT_API_SOCKET: &str = "/run/tessera/api.sock";

/// Where the API listens.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ApiListen {
    /// A Unix stream socket at this path (`unix:PATH` or an absolute path).
    Unix(PathBuf),
    /// TCP: with TLS ([`Api::tls`]), or plain text (`insecure = true`).
    Tcp(SocketAddr),
}

/// `api.tls_*`: TLS on a TCP listener.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ApiTls {
    /// `tls_cert`: the server's PEM certificate chain.
    pub cert: PathBuf,
    /// `tls_key`: its PEM private key.
    pub key: PathBuf,
    /// `tls_client_ca`: PEM CA certificates; when set, every client must
    /// present a certificate that chains to one of them.
    pub client_ca: Option<PathBuf>,
}

/// `[api]`, validated.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Api {
    /// `api.listen`.
    pub listen: ApiListen,
    /// TLS on a TCP listener; `None` on a Unix socket and with
    /// `insecure = true`.
    pub tls: Option<ApiTls>,
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
        if !insecure && r.tls_cert.is_none() && r.tls_key.is_none() {
            return Err(c.err(
                "api.listen",
                "a TCP listener needs TLS (api.tls_cert and api.tls_key), \
                 or api.insecure = true for plain text on a trusted address",
            ));
        }
        ApiListen::Tcp(a)
    };
    let unix = matches!(listen, ApiListen::Unix(_));
    if insecure && unix {
        return Err(c.err(
            "api.insecure",
            "only applies to a TCP listen address (a Unix socket is not encrypted anyway)",
        ));
    }
    let file = |key: &str, v: &Option<String>| -> R<Option<PathBuf>> {
        match v.as_deref() {
            None => Ok(None),
            Some(_) if unix => Err(c.err(
                &format!("api.{key}"),
                "only applies to a TCP listen address (a Unix socket has no TLS)",
            )),
            Some("") => Err(c.err(&format!("api.{key}"), "an empty file name")),
            Some(p) => Ok(Some(PathBuf::from(p))),
        }
    };
    let cert = file("tls_cert", &r.tls_cert)?;
    let key = file("tls_key", &r.tls_key)?;
    let client_ca = file("tls_client_ca", &r.tls_client_ca)?;
    let tls = match (cert, key) {
        (Some(cert), Some(key)) => {
            if insecure {
                return Err(c.err(
                    "api.insecure",
                    "contradicts api.tls_cert: TLS is on (drop insecure = true)",
                ));
            }
            Some(ApiTls {
                cert,
                key,
                client_ca,
            })
        }
        (Some(_), None) => return Err(c.err("api.tls_cert", "needs api.tls_key as well")),
        (None, Some(_)) => return Err(c.err("api.tls_key", "needs api.tls_cert as well")),
        (None, None) => {
            if client_ca.is_some() {
                return Err(c.err(
                    "api.tls_client_ca",
                    "needs api.tls_cert and api.tls_key (TLS on the listener)",
                ));
            }
            None
        }
    };
    Ok(Api { listen, tls })
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

    #[test]
    fn tls_keys() {
        let tcp = "[api]\nlisten = \"127.0.0.1:50051\"\n";
        let a = parse(&format!(
            "{tcp}tls_cert = \"/c.pem\"\ntls_key = \"/k.pem\"\ntls_client_ca = \"/ca.pem\"\n"
        ))
        .unwrap()
        .api
        .unwrap();
        assert_eq!(
            a.tls,
            Some(ApiTls {
                cert: "/c.pem".into(),
                key: "/k.pem".into(),
                client_ca: Some("/ca.pem".into()),
            })
        );
        let a = parse(&format!(
            "{tcp}tls_cert = \"/c.pem\"\ntls_key = \"/k.pem\"\n"
        ))
        .unwrap()
        .api
        .unwrap();
        assert_eq!(a.tls.unwrap().client_ca, None);
        let a = parse(&format!("{tcp}insecure = true\n"))
            .unwrap()
            .api
            .unwrap();
        assert_eq!(a.tls, None);
        for (bad, want) in [
            (
                format!("{tcp}tls_cert = \"/c.pem\"\n"),
                "api.tls_cert: needs api.tls_key",
            ),
            (
                format!("{tcp}tls_key = \"/k.pem\"\n"),
                "api.tls_key: needs api.tls_cert",
            ),
            (
                format!("{tcp}insecure = true\ntls_client_ca = \"/ca.pem\"\n"),
                "api.tls_client_ca: needs",
            ),
            (
                format!("{tcp}insecure = true\ntls_cert = \"/c.pem\"\ntls_key = \"/k.pem\"\n"),
                "api.insecure: contradicts",
            ),
            (
                "[api]\ntls_cert = \"/c.pem\"\ntls_key = \"/k.pem\"\n".to_string(),
                "api.tls_cert: only applies to a TCP",
            ),
            (
                format!("{tcp}tls_cert = \"\"\ntls_key = \"/k\"\n"),
                "an empty file name",
            ),
        ] {
            let e = parse(&bad).unwrap_err();
            assert!(e.contains(want), "{bad}: {e}");
        }
    }
}
