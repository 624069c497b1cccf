//! Commands that talk to a running tesserad over its control socket, in
//! BIRD's words:
//!
//! ```text
//! tessera [--socket PATH] [--json] show protocols [all] [NAME]
//! tessera show route [PREFIX] [all] [protocol NAME] [multicast]
//! tessera show route [PREFIX] count [protocol NAME] [multicast]
//! tessera show route damped
//! tessera show neighbor ADDR|NAME
//! tessera show status
//! tessera neighbor ADDR|NAME enable|disable [MESSAGE]|restart|refresh
//! tessera configure [check]
//! ```
//!
//! `--socket` and `--json` are accepted before the command or after any
//! word of it. The socket is `--socket`, else `$TESSERA_SOCKET`, else
//! `/run/tessera/tesserad.sock`. Exit status: 0 on success, 1 when the
//! daemon answered with an error, 2 when it could not be reached.
//! Protocol, rendering and client live in the `mgmt` crate; this file is
//! argument parsing and wiring.

use super::CmdResult;
use base::Prefix;
use mgmt::client::{self, DEFAULT_SOCKET, SOCKET_ENV};
use mgmt::proto::{NeighborAction, Request, Response};
use mgmt::render::{render, RenderOpts};
use std::ffi::OsString;
use std::io::Write;
use std::net::IpAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

/// Options given before the command (`tessera --json show ...`).
#[derive(clap::Args, Debug, Default, Clone)]
pub struct GlobalArgs {
    /// tesserad's control socket [default: $TESSERA_SOCKET, else
    /// /run/tessera/tesserad.sock]. Only for daemon commands.
    #[arg(long, value_name = "PATH")]
    pub socket: Option<PathBuf>,
    /// Print the daemon's answer as JSON. Only for daemon commands.
    #[arg(long)]
    pub json: bool,
}

impl GlobalArgs {
    /// Whether any of these was given (they mean nothing to other commands).
    pub fn is_set(&self) -> bool {
        self.socket.is_some() || self.json
    }
}

/// Options accepted after the command words too.
#[derive(clap::Args, Debug, Default, Clone)]
pub struct ConnArgs {
    /// tesserad's control socket.
    #[arg(long, value_name = "PATH", global = true)]
    socket: Option<PathBuf>,
    /// Print the daemon's answer as JSON.
    #[arg(long, global = true)]
    json: bool,
    /// Seconds to wait for each read/write on the socket.
    #[arg(long, value_name = "SECS", global = true, default_value_t = 30.0)]
    timeout: f64,
}

/// The daemon commands, flattened into `tessera`'s command list.
#[derive(clap::Subcommand, Debug)]
pub enum CtlCommand {
    /// Show tesserad state (protocols, routes, a neighbor, status).
    Show(ShowArgs),
    /// Act on a BGP neighbor: enable, disable [MESSAGE], restart, refresh.
    Neighbor(NeighborArgs),
    /// Reload tesserad's configuration file, or with `check` only validate it.
    Configure(ConfigureArgs),
}

#[derive(clap::Args, Debug)]
pub struct ShowArgs {
    #[command(flatten)]
    conn: ConnArgs,
    #[command(subcommand)]
    what: ShowWhat,
}

#[derive(clap::Subcommand, Debug)]
enum ShowWhat {
    /// Protocols and their state: `show protocols [all] [NAME]`.
    Protocols {
        /// `all` for the detail block, and/or a protocol name.
        #[arg(value_name = "all|NAME")]
        words: Vec<String>,
    },
    /// Routes: `show route [PREFIX] [all|count] [protocol NAME] [multicast]`
    /// (`multicast`: the SAFI 2 table).
    Route {
        #[arg(value_name = "PREFIX|all|count|protocol NAME")]
        words: Vec<String>,
    },
    /// The detail block of one BGP neighbor, by address or protocol name.
    Neighbor {
        #[arg(value_name = "ADDR|NAME")]
        addr: String,
    },
    /// Daemon version, router ID, start and reconfiguration times.
    Status,
    /// BGP next hops tracked (`router.next_hop_tracking`): reachability,
    /// IGP cost, prefixes through each.
    Nexthop,
    /// BFD sessions (RFC 5880/5881): state, negotiated interval,
    /// detection time, diagnostic.
    Bfd,
    /// BMP collectors (RFC 7854): state, messages sent, queue, drops.
    Bmp,
    /// RPKI: the RTR caches, their state and serial, the VRPs in use
    Rpki,
    /// The forwarding plane's element graph: which graph runs, each
    /// element's packets in and out, drops by reason and counters.
    Dataplane,
}

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
enum ActionWord {
    Enable,
    Disable,
    Restart,
    Refresh,
}

#[derive(clap::Args, Debug)]
pub struct NeighborArgs {
    #[command(flatten)]
    conn: ConnArgs,
    /// Neighbor address or protocol name.
    #[arg(value_name = "ADDR|NAME")]
    addr: String,
    action: ActionWord,
    /// With `disable`: shutdown communication sent to the peer (RFC 8203).
    message: Option<String>,
}

#[derive(clap::Args, Debug)]
pub struct ConfigureArgs {
    #[command(flatten)]
    conn: ConnArgs,
    /// `check`: only parse and validate the configuration.
    #[arg(value_name = "check")]
    mode: Option<String>,
}

/// Maps `show protocols` words to a request.
fn protocols_request(words: &[String]) -> Result<Request, String> {
    let mut all = false;
    let mut name = None;
    for w in words {
        if w == "all" && !all {
            all = true;
        } else if name.is_none() {
            name = Some(w.clone());
        } else {
            return Err(format!("show protocols: unexpected word '{w}'"));
        }
    }
    Ok(Request::ShowProtocols { all, name })
}

/// Canonical text of a prefix argument; a bare address means its host
/// route (/32 or /128), as in BIRD.
fn parse_prefix(w: &str) -> Option<String> {
    if w.contains('/') {
        return w.parse::<Prefix>().ok().map(|p| p.to_string());
    }
    let a: IpAddr = w.parse().ok()?;
    let len = if a.is_ipv4() { 32 } else { 128 };
    Prefix::new(a, len).ok().map(|p| p.to_string())
}

/// Maps `show route` words to a request.
fn route_request(words: &[String]) -> Result<Request, String> {
    // `show route damped`: the paths flap damping suppresses.
    if let [w] = words {
        if w == "damped" {
            return Ok(Request::ShowRouteDamped);
        }
    }
    // `show route filtered protocol NAME [all]`, `show route export NAME
    // [all]` (BIRD's words): import-rejected routes, the Adj-RIB-Out.
    let w: Vec<&str> = words.iter().map(String::as_str).collect();
    match w.as_slice() {
        ["filtered", "protocol", name, rest @ ..] | ["export" | "noexport", name, rest @ ..]
            if rest.is_empty() || rest == ["all"] =>
        {
            let (protocol, all) = (name.to_string(), !rest.is_empty());
            return Ok(match w[0] {
                "filtered" => Request::ShowRouteFiltered { protocol, all },
                "export" => Request::ShowRouteExport { protocol, all },
                _ => Request::ShowRouteNoexport { protocol, all },
            });
        }
        ["filtered", ..] => {
            return Err("show route filtered: expected 'protocol NAME [all]'".into())
        }
        ["export", ..] => return Err("show route export: expected 'NAME [all]'".into()),
        ["noexport", ..] => return Err("show route noexport: expected 'NAME [all]'".into()),
        _ => {}
    }
    let (mut prefix, mut all, mut count, mut protocol) = (None, false, false, None);
    let (mut multicast, mut longest_match) = (false, false);
    let mut it = words.iter();
    while let Some(w) = it.next() {
        match w.as_str() {
            "all" if !all => all = true,
            "count" if !count => count = true,
            "multicast" if !multicast => multicast = true,
            "protocol" if protocol.is_none() => {
                let n = it
                    .next()
                    .ok_or("show route: 'protocol' needs a protocol name")?;
                protocol = Some(n.clone());
            }
            "for" if prefix.is_none() => {
                let w = it
                    .next()
                    .ok_or("show route: 'for' needs an address or a prefix")?;
                prefix = Some(parse_prefix(w).ok_or_else(|| {
                    format!("show route for: '{w}' is not an address or a prefix")
                })?);
                longest_match = true;
            }
            _ if prefix.is_none() => {
                prefix = Some(
                    parse_prefix(w)
                        .ok_or_else(|| format!("show route: '{w}' is not a prefix or keyword"))?,
                );
            }
            _ => return Err(format!("show route: unexpected word '{w}'")),
        }
    }
    if all && count {
        return Err("show route: 'all' and 'count' exclude each other".into());
    }
    if longest_match && count {
        return Err("show route: 'for' and 'count' exclude each other".into());
    }
    Ok(Request::ShowRoute {
        prefix,
        longest_match,
        all,
        protocol,
        count_only: count,
        multicast,
    })
}

/// The request a command line asks for, and its connection options.
fn to_request(cmd: &CtlCommand) -> Result<(Request, &ConnArgs), String> {
    Ok(match cmd {
        CtlCommand::Show(s) => {
            let req = match &s.what {
                ShowWhat::Protocols { words } => protocols_request(words)?,
                ShowWhat::Route { words } => route_request(words)?,
                ShowWhat::Neighbor { addr } => Request::ShowNeighbor { addr: addr.clone() },
                ShowWhat::Status => Request::ShowStatus,
                ShowWhat::Nexthop => Request::ShowNexthop,
                ShowWhat::Bfd => Request::ShowBfd,
                ShowWhat::Bmp => Request::ShowBmp,
                ShowWhat::Rpki => Request::ShowRpki,
                ShowWhat::Dataplane => Request::ShowDataplane,
            };
            (req, &s.conn)
        }
        CtlCommand::Neighbor(n) => {
            if n.message.is_some() && n.action != ActionWord::Disable {
                return Err("neighbor: a message goes only with 'disable'".into());
            }
            let action = match n.action {
                ActionWord::Enable => NeighborAction::Enable,
                ActionWord::Disable => NeighborAction::Disable {
                    message: n.message.clone(),
                },
                ActionWord::Restart => NeighborAction::Restart,
                ActionWord::Refresh => NeighborAction::Refresh,
            };
            let req = Request::Neighbor {
                addr_or_name: n.addr.clone(),
                action,
            };
            (req, &n.conn)
        }
        CtlCommand::Configure(c) => {
            let check = match c.mode.as_deref() {
                None => false,
                Some("check") => true,
                Some(w) => return Err(format!("configure: unexpected word '{w}'")),
            };
            (Request::Configure { check }, &c.conn)
        }
    })
}

/// `--socket`, else the environment variable, else the default.
pub(crate) fn resolve_socket(flag: Option<PathBuf>, env: Option<OsString>) -> PathBuf {
    flag.or_else(|| env.filter(|v| !v.is_empty()).map(PathBuf::from))
        .unwrap_or_else(|| PathBuf::from(DEFAULT_SOCKET))
}

/// What to print for a response: (stdout, stderr, exit status).
fn output(req: &Request, resp: &Response, json: bool) -> (String, String, u8) {
    match (resp, json) {
        (Response::Ok(data), true) => {
            // The payload without its type tag: what scripts want.
            let v = serde_json::to_value(data)
                .ok()
                .and_then(|mut v| v.get_mut("data").map(serde_json::Value::take))
                .unwrap_or(serde_json::Value::Null);
            (format!("{v}\n"), String::new(), 0)
        }
        (Response::Error { .. }, true) => {
            let v = serde_json::to_value(resp).unwrap_or(serde_json::Value::Null);
            (format!("{v}\n"), String::new(), 1)
        }
        (Response::Ok(_), false) => (render(req, resp, &RenderOpts::default()), String::new(), 0),
        (Response::Error { message, .. }, false) => {
            (String::new(), format!("tessera: {message}\n"), 1)
        }
    }
}

/// Runs a daemon command.
pub fn run(global: GlobalArgs, cmd: CtlCommand) -> CmdResult {
    let (req, conn) = to_request(&cmd)?;
    let json = global.json || conn.json;
    let socket = resolve_socket(
        conn.socket.clone().or(global.socket),
        std::env::var_os(SOCKET_ENV),
    );
    if !(conn.timeout.is_finite() && conn.timeout > 0.0) {
        return Err("--timeout must be a positive number of seconds".into());
    }
    let timeout = Duration::from_secs_f64(conn.timeout.min(86_400.0));
    let resp = match client::request(&socket, &req, timeout) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("tessera: {e}");
            return Ok(ExitCode::from(2));
        }
    };
    let (out, err, code) = output(&req, &resp, json);
    if !out.is_empty() {
        let mut stdout = std::io::stdout().lock();
        // A closed pipe (`| head`) is not an error worth reporting.
        let _ = stdout
            .write_all(out.as_bytes())
            .and_then(|_| stdout.flush());
    }
    if !err.is_empty() {
        eprint!("{err}");
    }
    Ok(ExitCode::from(code))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Cli, Command};
    use clap::Parser;
    use mgmt::proto::{ActionResult, Data, ErrorCode};

    /// Parses a command line into (request, json, socket flag).
    fn parse(args: &[&str]) -> Result<(Request, bool, Option<PathBuf>), String> {
        let cli = Cli::try_parse_from(std::iter::once("tessera").chain(args.iter().copied()))
            .map_err(|e| e.to_string())?;
        let Command::Ctl(cmd) = cli.command else {
            return Err("not a daemon command".into());
        };
        let (req, conn) = to_request(&cmd)?;
        let json = cli.ctl.json || conn.json;
        Ok((req, json, conn.socket.clone().or(cli.ctl.socket)))
    }

    fn req(args: &[&str]) -> Request {
        parse(args).unwrap_or_else(|e| panic!("{args:?}: {e}")).0
    }

    #[test]
    fn show_protocols() {
        assert_eq!(
            req(&["show", "protocols"]),
            Request::ShowProtocols {
                all: false,
                name: None
            }
        );
        assert_eq!(
            req(&["show", "protocols", "all", "peer1"]),
            Request::ShowProtocols {
                all: true,
                name: Some("peer1".into())
            }
        );
        assert!(parse(&["show", "protocols", "a", "b"]).is_err());
    }

    #[test]
    fn show_route_words() {
        assert_eq!(
            req(&["show", "route"]),
            Request::ShowRoute {
                prefix: None,
                all: false,
                protocol: None,
                count_only: false,
                multicast: false,
                longest_match: false,
            }
        );
        assert_eq!(
            req(&["show", "route", "10.0.0.0/8", "all", "protocol", "peer1"]),
            Request::ShowRoute {
                prefix: Some("10.0.0.0/8".into()),
                all: true,
                protocol: Some("peer1".into()),
                count_only: false,
                multicast: false,
                longest_match: false,
            }
        );
        assert_eq!(
            req(&["show", "route", "10.0.0.0/8", "multicast"]),
            Request::ShowRoute {
                prefix: Some("10.0.0.0/8".into()),
                all: false,
                protocol: None,
                count_only: false,
                multicast: true,
                longest_match: false,
            }
        );
        assert_eq!(
            req(&["show", "route", "count"]),
            Request::ShowRoute {
                prefix: None,
                all: false,
                protocol: None,
                count_only: true,
                multicast: false,
                longest_match: false,
            }
        );
        assert_eq!(
            req(&["show", "route", "2001:db8::1"]),
            Request::ShowRoute {
                prefix: Some("2001:db8::1/128".into()),
                all: false,
                protocol: None,
                count_only: false,
                multicast: false,
                longest_match: false,
            }
        );
        assert_eq!(
            req(&["show", "route", "for", "198.18.1.7", "all"]),
            Request::ShowRoute {
                prefix: Some("198.18.1.7/32".into()),
                all: true,
                protocol: None,
                count_only: false,
                multicast: false,
                longest_match: true,
            }
        );
        assert_eq!(
            req(&["show", "route", "for", "2001:db8:1::/48"]),
            Request::ShowRoute {
                prefix: Some("2001:db8:1::/48".into()),
                all: false,
                protocol: None,
                count_only: false,
                multicast: false,
                longest_match: true,
            }
        );
        for bad in [
            &["show", "route", "for"][..],
            &["show", "route", "for", "banana"],
            &["show", "route", "for", "10.0.0.1", "count"],
            &["show", "route", "10.0.0.0/8", "for", "10.0.0.1"],
            &["show", "route", "all", "count"],
            &["show", "route", "protocol"],
            &["show", "route", "10.0.0.0/33"],
            &["show", "route", "banana"],
            &["show", "route", "10.0.0.0/8", "10.1.0.0/16"],
        ] {
            assert!(parse(bad).is_err(), "{bad:?} accepted");
        }
    }

    #[test]
    fn neighbor_and_configure() {
        assert_eq!(
            req(&["neighbor", "192.0.2.1", "disable", "going down"]),
            Request::Neighbor {
                addr_or_name: "192.0.2.1".into(),
                action: NeighborAction::Disable {
                    message: Some("going down".into())
                }
            }
        );
        assert_eq!(
            req(&["neighbor", "peer1", "refresh"]),
            Request::Neighbor {
                addr_or_name: "peer1".into(),
                action: NeighborAction::Refresh
            }
        );
        assert!(parse(&["neighbor", "peer1", "restart", "msg"]).is_err());
        assert!(parse(&["neighbor", "peer1", "explode"]).is_err());
        assert_eq!(
            req(&["show", "neighbor", "192.0.2.1"]),
            Request::ShowNeighbor {
                addr: "192.0.2.1".into()
            }
        );
        assert_eq!(req(&["configure"]), Request::Configure { check: false });
        assert_eq!(
            req(&["configure", "check"]),
            Request::Configure { check: true }
        );
        assert!(parse(&["configure", "soft"]).is_err());
        assert_eq!(req(&["show", "status"]), Request::ShowStatus);
        assert_eq!(req(&["show", "nexthop"]), Request::ShowNexthop);
        assert_eq!(req(&["show", "bfd"]), Request::ShowBfd);
        assert_eq!(req(&["show", "dataplane"]), Request::ShowDataplane);
        assert_eq!(req(&["show", "bmp"]), Request::ShowBmp);
        assert_eq!(req(&["show", "rpki"]), Request::ShowRpki);
        assert_eq!(req(&["show", "route", "damped"]), Request::ShowRouteDamped);
        assert_eq!(
            req(&["show", "route", "filtered", "protocol", "p1", "all"]),
            Request::ShowRouteFiltered {
                protocol: "p1".into(),
                all: true
            }
        );
        assert_eq!(
            req(&["show", "route", "export", "p1"]),
            Request::ShowRouteExport {
                protocol: "p1".into(),
                all: false
            }
        );
        assert_eq!(
            req(&["show", "route", "noexport", "p1", "all"]),
            Request::ShowRouteNoexport {
                protocol: "p1".into(),
                all: true
            }
        );
    }

    #[test]
    fn json_and_socket_anywhere() {
        for args in [
            &["--json", "show", "protocols"][..],
            &["show", "--json", "protocols"],
            &["show", "protocols", "--json"],
        ] {
            let (_, json, _) = parse(args).unwrap();
            assert!(json, "{args:?}");
        }
        let (_, json, sock) = parse(&["--socket", "/tmp/a.sock", "configure", "check"]).unwrap();
        assert!(!json);
        assert_eq!(sock, Some(PathBuf::from("/tmp/a.sock")));
        let (_, _, sock) = parse(&["neighbor", "p", "enable", "--socket", "/tmp/b"]).unwrap();
        assert_eq!(sock, Some(PathBuf::from("/tmp/b")));
        // The MRT commands keep their own --json.
        assert!(Cli::try_parse_from(["tessera", "mrt", "stats", "--json", "f"]).is_ok());
    }

    #[test]
    fn socket_resolution() {
        let flag = Some(PathBuf::from("/a"));
        let env = Some(OsString::from("/b"));
        assert_eq!(
            resolve_socket(flag.clone(), env.clone()),
            PathBuf::from("/a")
        );
        assert_eq!(resolve_socket(None, env), PathBuf::from("/b"));
        assert_eq!(
            resolve_socket(None, Some(OsString::new())),
            PathBuf::from(DEFAULT_SOCKET)
        );
        assert_eq!(resolve_socket(None, None), PathBuf::from(DEFAULT_SOCKET));
    }

    #[test]
    fn output_modes() {
        let r = Request::Neighbor {
            addr_or_name: "peer1".into(),
            action: NeighborAction::Enable,
        };
        let ok = Response::Ok(Data::Action(vec![ActionResult {
            protocol: "peer1".into(),
            result: "enabled".into(),
        }]));
        assert_eq!(
            output(&r, &ok, false),
            ("peer1: enabled\n".into(), String::new(), 0)
        );
        assert_eq!(
            output(&r, &ok, true),
            (
                "[{\"protocol\":\"peer1\",\"result\":\"enabled\"}]\n".into(),
                String::new(),
                0
            )
        );
        let err = Response::error(ErrorCode::NotFound, "no such neighbor peer1");
        assert_eq!(
            output(&r, &err, false),
            (String::new(), "tessera: no such neighbor peer1\n".into(), 1)
        );
        let (out, _, code) = output(&r, &err, true);
        assert_eq!(code, 1);
        assert_eq!(
            out,
            "{\"error\":{\"code\":\"not_found\",\"message\":\"no such neighbor peer1\"}}\n"
        );
    }
}
