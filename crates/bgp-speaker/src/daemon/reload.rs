//! `configure` and SIGHUP: read the file again, and if it is valid apply
//! the difference. An invalid file changes nothing (the error names file,
//! line and field). Only neighbours whose session parameters changed are
//! reset; policy changes are applied to the stored routes.

use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use bgp_wire::consts::notify;
use bgp_wire::NotificationMessage;
use mgmt::proto::{ConfigureResult, ErrorCode, Response};
use tracing::info;

use super::control::PeerChange;
use super::query::unix_ms;
use super::{Running, Spec};
use crate::rib::RibMsg;
use crate::rib::{ControlFn, PeerHandle, RibState};

/// Runs a job on every RIB thread; `make(i)` builds the one for shard `i`
/// (each gets its own copy of what it applies).
fn run_on_all(running: &Running, mut make: impl FnMut(usize) -> ControlFn) {
    for (i, tx) in running.rib_txs.iter().enumerate() {
        let _ = tx.blocking_send(RibMsg::Control(make(i)));
    }
}

/// How long a reload waits for the RIB threads to take new neighbours.
const RIB_BARRIER: std::time::Duration = std::time::Duration::from_secs(30);

pub(super) fn reload(
    running: &Arc<Mutex<Running>>,
    check: bool,
) -> Result<ConfigureResult, String> {
    let mut r = running
        .lock()
        .map_err(|_| "reload state poisoned".to_string())?;
    let mut c = config::load(&r.path).map_err(|e| e.to_string())?;
    // Neighbours added at run time (gRPC AddPeer) stay, as in GoBGP,
    // unless the file now has a neighbour of the same name or address:
    // then the file's replaces it.
    let mut notes = Vec::new();
    let mut replaced = Vec::new();
    for name in &r.api_neighbors {
        let Some(n) = r.spec.config.neighbor(name) else {
            continue;
        };
        if c.neighbors
            .iter()
            .any(|f| f.name == n.name || f.address == n.address)
        {
            notes.push(format!(
                "neighbor {name} (added through the API) is replaced by the file's"
            ));
            replaced.push(name.clone());
        } else {
            c.neighbors.push(n.clone());
        }
    }
    let new = Spec::from_config(c)?;
    let res = apply(&mut r, new, check, notes)?;
    if !check {
        for name in replaced {
            r.api_neighbors.remove(&name);
        }
    }
    Ok(res)
}

/// gRPC `AddPeer` / `DeletePeer`: the running configuration with one
/// neighbour more or less, applied as a reload applies a new file (the
/// same [`apply`]: a fresh session registered with every RIB part, or the
/// session terminated and its routes withdrawn). Only neighbours added
/// this way can be removed this way; the file's are the file's.
pub(super) fn change_peer(
    running: &Arc<Mutex<Running>>,
    change: PeerChange,
) -> Result<Vec<String>, Response> {
    let mut r = running
        .lock()
        .map_err(|_| Response::error(ErrorCode::Internal, "reload state poisoned"))?;
    let mut c = r.spec.config.clone();
    let bad = |e: String| Response::error(ErrorCode::Config, e);
    let (name, added) = match change {
        PeerChange::Add(keys) => {
            let n = config::runtime_neighbor(&c, &keys, "AddPeer").map_err(bad)?;
            let name = n.name.clone();
            c.neighbors.push(n);
            (name, true)
        }
        PeerChange::Delete(key) => {
            let Some(n) = c
                .neighbors
                .iter()
                .find(|n| n.name == key || n.address.to_string() == key)
            else {
                return Err(Response::error(
                    ErrorCode::NotFound,
                    format!("no neighbor {key}"),
                ));
            };
            let name = n.name.clone();
            if !r.api_neighbors.contains(&name) {
                return Err(bad(format!(
                    "neighbor {name} is configured in {}: remove it there and run `tessera configure`",
                    r.path.display()
                )));
            }
            c.neighbors.retain(|n| n.name != name);
            (name, false)
        }
    };
    let new = Spec::from_config(c).map_err(bad)?;
    let res = apply(&mut r, new, false, Vec::new()).map_err(bad)?;
    if added {
        r.api_neighbors.insert(name);
    } else {
        r.api_neighbors.remove(&name);
    }
    Ok(res.messages)
}

/// Applies `new` (or with `check` only describes it): the difference to
/// the running configuration, as [`reload`] and [`change_peer`] need it.
fn apply(
    r: &mut Running,
    new: Spec,
    check: bool,
    notes: Vec<String>,
) -> Result<ConfigureResult, String> {
    let plan = config::diff(&r.spec.config, &new.config);
    let mut messages = plan.describe();
    messages.extend(notes);
    let path = r.path.display().to_string();
    if check {
        if messages.is_empty() {
            messages.push("no changes".into());
        }
        return Ok(ConfigureResult {
            path,
            check,
            changed: !plan.is_empty(),
            messages,
        });
    }
    if plan.global_reset {
        return Err(format!(
            "{path}: router id, AS or listen addresses changed; restart tesserad to apply"
        ));
    }
    info!(changes = messages.len(), "applying new configuration");
    let reset_note = |sub: u8| NotificationMessage::shutdown(sub, "configuration changed");
    // Removed and reset neighbours: terminate their sessions.
    let mut gone = Vec::new();
    for name in plan.removed.iter().chain(&plan.reset) {
        if let Some(id) = r.ids.remove(name) {
            let sub = if plan.removed.contains(name) {
                notify::PEER_DECONFIGURED
            } else {
                notify::OTHER_CONFIGURATION_CHANGE
            };
            gone.push((id, reset_note(sub)));
        }
        if let Some(old) = r.spec.neighbor(name) {
            r.registry.unregister(old.remote.ip());
        }
        r.cmds.remove(name);
        if plan.removed.contains(name) {
            if let Some(old) = r.spec.neighbor(name).cloned() {
                r.bfd_sync(&crate::daemon::NeighborSpec { bfd: None, ..old });
            }
        }
    }
    run_on_all(r, |_| {
        let gone = gone.clone();
        Box::new(move |st: &mut RibState| {
            for (id, n) in gone {
                st.remove_peer(id, n);
            }
        })
    });
    // New and reset neighbours: fresh sessions under fresh ids.
    // Their sessions start only once every RIB part has them (below): a
    // session up before its RIB part knows the peer would never be sent
    // the table.
    let mut fresh: Vec<(bgp_rib::PeerId, PeerHandle)> = Vec::new();
    let mut to_start = Vec::new();
    for name in plan.added.iter().chain(&plan.reset) {
        if let Some(n) = new.neighbor(name).cloned() {
            let _guard = r.rt.enter();
            if let Some(x) = r.start_neighbor(&n, true) {
                fresh.push(x);
                if n.enabled {
                    to_start.push(name.clone());
                }
            }
        }
    }
    // Soft changes: new metadata (policies, RR/RS flags, max-prefix), then
    // re-import from the stored Adj-RIB-In and re-export.
    let mut soft = Vec::new();
    for name in &plan.soft {
        if let (Some(id), Some(n)) = (r.ids.get(name), new.neighbor(name)) {
            soft.push((*id, n.meta.clone(), n.enabled));
        }
        // BFD on/off, its timers, or the owner's `enabled`: live.
        if let Some(n) = new.neighbor(name).cloned() {
            r.bfd_sync(&n);
        }
    }
    let statics = plan.statics_changed.then(|| new.statics.clone());
    // New selection options: every part selects again and exports what
    // changed (all pipelines: each shard or stripe is one RibState).
    if plan.bestpath_changed {
        let cfg = new.rib.bestpath;
        run_on_all(r, |_| {
            Box::new(move |st: &mut RibState| {
                st.core.set_bestpath(cfg);
                st.propagate();
            })
        });
    }
    // New aggregates: the old ones withdrawn, the new ones originated
    // from the contributors in the RIB.
    if r.spec.config.aggregates != new.config.aggregates {
        let aggs = new.aggregates();
        run_on_all(r, |_| {
            let aggs = aggs.clone();
            Box::new(move |st: &mut RibState| {
                st.core.set_aggregates(aggs);
                st.propagate();
            })
        });
    }
    // Damping switched on or off, or new parameters (which drop every
    // history); each neighbour's own switch follows with its metadata.
    let damping = new.damping();
    if damping != r.spec.damping() {
        run_on_all(r, |_| {
            Box::new(move |st: &mut RibState| {
                st.core.set_damping(damping);
                st.propagate();
            })
        });
    }
    run_on_all(r, |_| {
        let fresh: Vec<(bgp_rib::PeerId, PeerHandle)> =
            fresh.iter().map(|(id, e)| (*id, e.copy_idle())).collect();
        let soft = soft.clone();
        let statics = statics.clone();
        Box::new(move |st: &mut RibState| apply_soft(st, fresh, soft, statics))
    });
    if !to_start.is_empty() {
        // A barrier: every RIB part has run the job above.
        if let Err(e) = crate::pipeline::call_all(&r.rib_txs, RIB_BARRIER, |_| ()) {
            return Err(format!("the RIB threads do not answer ({e:?})"));
        }
        for name in &to_start {
            if let Some(c) = r.cmds.get(name) {
                let _ = c.send(crate::msg::SessionCmd::Start);
            }
        }
    }
    r.spec = new;
    r.last_reload_ms = Some(unix_ms(SystemTime::now()));
    if messages.is_empty() {
        messages.push("no changes".into());
    }
    Ok(ConfigureResult {
        path,
        check,
        changed: !plan.is_empty(),
        messages,
    })
}

/// The RIB thread's half of a reload: new neighbours, changed metadata
/// (re-import and re-export), static routes.
fn apply_soft(
    st: &mut RibState,
    fresh: Vec<(bgp_rib::PeerId, PeerHandle)>,
    soft: Vec<(bgp_rib::PeerId, crate::rib::PeerMeta, bool)>,
    statics: Option<Vec<crate::rib::StaticRoute>>,
) {
    let primary = st.part.is_primary();
    for (id, e) in fresh {
        st.insert_peer(id, e);
    }
    for (id, meta, enabled) in soft {
        let mut toggled = false;
        if let Some(e) = st.peer_mut(id) {
            e.meta = meta;
            if enabled == e.disabled {
                e.disabled = !enabled;
                toggled = true;
            }
        }
        st.core.sync_peer_damping(id);
        // The session hears it once, from the primary shard.
        if toggled && primary {
            st.send_cmd(
                id,
                if enabled {
                    crate::msg::SessionCmd::Start
                } else {
                    crate::msg::SessionCmd::Stop {
                        notification: NotificationMessage::shutdown(
                            notify::ADMINISTRATIVE_SHUTDOWN,
                            "disabled in the configuration",
                        ),
                        restart_after: None,
                    }
                },
            );
        }
        st.refresh_in(id, false);
        st.export_full(id);
    }
    if let Some(s) = statics {
        st.set_statics(s);
    }
}
