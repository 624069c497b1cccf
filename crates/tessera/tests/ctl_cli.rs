//! The `tessera` binary against a control socket served in this process
//! by `mgmt::server` with a test handler: argument words become the right
//! requests, answers are printed as BIRD text or JSON, and exit statuses
//! follow the documented rule (0 ok, 1 daemon error, 2 unreachable).

use mgmt::proto::*;
use mgmt::server::{serve_unix, ControlHandler};
use std::path::PathBuf;
use std::process::{Command, Output};
use std::sync::{Arc, Mutex};

struct Recorder {
    seen: Mutex<Vec<Request>>,
}

impl ControlHandler for Recorder {
    fn handle(&self, req: Request) -> Response {
        if let Ok(mut s) = self.seen.lock() {
            s.push(req.clone());
        }
        match req {
            Request::ShowProtocols { .. } => Response::Ok(Data::Protocols(vec![ProtocolInfo {
                name: "static1".into(),
                kind: ProtocolKind::Static,
                table: Some("master4".into()),
                state: ProtoState::Up,
                since_ms: 1_700_000_000_000,
                info: None,
                last_error: None,
                description: None,
                routes: RouteCounts::default(),
                channels: vec![],
                bgp: None,
            }])),
            Request::ShowRoute {
                count_only: true, ..
            } => Response::Ok(Data::RouteCount(RouteCount {
                tables: vec![TableCount {
                    table: "master4".into(),
                    matched: 5,
                    paths: 6,
                    prefixes: 4,
                }],
                per_protocol: vec![],
            })),
            _ => Response::error(ErrorCode::NotFound, "no such neighbor"),
        }
    }
}

struct Dir(PathBuf);
impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn tessera(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_tessera"))
        .args(args)
        .env_remove("TESSERA_SOCKET")
        .output()
        .expect("run tessera")
}

#[test]
fn cli_against_test_daemon() {
    let dir = Dir(std::env::temp_dir().join(format!("tessera-ctl-{}", std::process::id())));
    std::fs::create_dir_all(&dir.0).unwrap();
    let sock = dir.0.join("d.sock");
    let h = Arc::new(Recorder {
        seen: Mutex::new(Vec::new()),
    });
    let _srv = serve_unix(&sock, h.clone()).unwrap();
    let s = sock.to_str().unwrap();

    let o = tessera(&["--socket", s, "show", "protocols"]);
    assert_eq!(o.status.code(), Some(0), "{o:?}");
    assert_eq!(
        String::from_utf8_lossy(&o.stdout),
        "Name       Proto      Table      State  Since         Info\n\
         static1    Static     master4    up     22:13:20.000\n"
    );

    let o = tessera(&["show", "route", "count", "--socket", s]);
    assert_eq!(o.status.code(), Some(0), "{o:?}");
    assert_eq!(
        String::from_utf8_lossy(&o.stdout),
        "5 of 6 routes for 4 networks in table master4\n"
    );

    let o = tessera(&["--json", "--socket", s, "show", "route", "count"]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("JSON on stdout");
    assert_eq!(v["tables"][0]["matched"], 5);

    // The environment variable picks the socket when --socket is absent.
    let o = Command::new(env!("CARGO_BIN_EXE_tessera"))
        .args(["neighbor", "192.0.2.1", "disable", "bye"])
        .env("TESSERA_SOCKET", s)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1), "{o:?}");
    assert_eq!(
        String::from_utf8_lossy(&o.stderr),
        "tessera: no such neighbor\n"
    );

    let seen = h.seen.lock().unwrap().clone();
    assert_eq!(
        seen.last(),
        Some(&Request::Neighbor {
            addr_or_name: "192.0.2.1".into(),
            action: NeighborAction::Disable {
                message: Some("bye".into())
            }
        })
    );
    assert_eq!(seen.len(), 4);

    let missing = dir.0.join("none.sock");
    let o = tessera(&["--socket", missing.to_str().unwrap(), "show", "status"]);
    assert_eq!(o.status.code(), Some(2), "{o:?}");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("is tesserad running?"), "{err}");

    // Bad words never reach the daemon.
    let o = tessera(&["--socket", s, "show", "route", "banana"]);
    assert_eq!(o.status.code(), Some(1), "{o:?}");
    assert_eq!(h.seen.lock().unwrap().len(), 4);
}
