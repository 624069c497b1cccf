//! `[[dataplane.vr]]` in the daemon: validated by crate `config`, but not
//! run yet. Every entry point that would run a dataplane (`--check`,
//! start, `--dataplane`, reload) refuses VRs with this one clear error,
//! so that no VR key is silently ignored. The scheduler the VRs will run
//! under is `graph::VrScheduler` (measured in
//! `crates/elements/examples/vr_isolation.rs`).
//!
//! A VR's routes with `neighbors = [...]` (issue 19, control-plane half):
//! the best of the routes learned from those neighbours, chosen by the
//! Loc-RIB's own decision process, come from a *view* of the RIB
//! (`bgp_core::views`, `bgp_speaker::view_feed`) on a
//! `SyncSender<Vec<fib::Change>>`, the type and rhythm of the main
//! best-route hook: a snapshot at registration, then one batch per export
//! round of each RIB part with the prefixes whose next hops changed.
//! * [`view_registry`] makes the daemon's registry; give it to
//!   `bgp_speaker::daemon::Hooks::views` before `run_with` (views
//!   registered before the start are installed in every RIB part before
//!   the first route; later ones at once).
//! * [`register_view`] adds (or replaces) a VR's view; it blocks until
//!   every RIB part sent its snapshot, so the receiver must be read from
//!   another thread meanwhile (a FIB thread). [`remove_view`] stops one;
//!   [`replace_views`] is a reload's whole new set (each listed view gets
//!   a new snapshot, the others stop).
//! * Neighbour names are checked by config validation; a neighbour that
//!   is not up contributes nothing, one whose session goes down takes its
//!   routes out of the view as out of the Loc-RIB.

/// Why a configuration with VRs cannot run (issue 19).
pub const NOT_SUPPORTED: &str = "is not supported yet: tesserad's dataplane runs one FIB and \
     one graph per core; virtual routers (graph::VrScheduler) run in process only (issue 19). \
     Remove the [[dataplane.vr]] entries";

/// Refuses `[[dataplane.vr]]`, naming the first VR.
pub fn refuse(d: &config::Dataplane) -> Result<(), String> {
    match d.vrs.first() {
        None => Ok(()),
        Some(v) => Err(format!(
            "dataplane.vr[0] ({:?}): [[dataplane.vr]] {NOT_SUPPORTED}",
            v.name
        )),
    }
}

use std::sync::mpsc::SyncSender;
use std::sync::Arc;

use bgp_speaker::view_feed::{ViewRegistry, ViewSpec};

/// The daemon's view registry (for `Hooks::views`).
// Called by the VR dataplane (issue 19), which is not connected yet.
#[allow(dead_code)]
pub fn view_registry() -> Arc<ViewRegistry> {
    ViewRegistry::new()
}

/// Follows VR `name`'s view: the best routes among the paths learned from
/// `neighbors` (`[[neighbor]]` names), on `tx` (see the module docs).
/// Replaces a view of the same name.
// Called by the VR dataplane (issue 19), which is not connected yet.
#[allow(dead_code)]
pub fn register_view(
    views: &ViewRegistry,
    name: &str,
    neighbors: &[String],
    tx: SyncSender<Vec<fib::Change>>,
) -> Result<(), String> {
    views
        .register(ViewSpec {
            name: name.to_string(),
            neighbors: neighbors.to_vec(),
            tx,
        })
        .map_err(|e| format!("dataplane.vr {name:?}: {e}"))
}

/// Stops VR `name`'s view; whether it was registered.
// Called by the VR dataplane (issue 19), which is not connected yet.
#[allow(dead_code)]
pub fn remove_view(views: &ViewRegistry, name: &str) -> Result<bool, String> {
    views
        .remove(name)
        .map_err(|e| format!("dataplane.vr {name:?}: {e}"))
}

/// A reload: the views become exactly `list` (VR name, neighbour names,
/// channel); each gets a new snapshot, every other view stops.
// Called by the VR dataplane (issue 19), which is not connected yet.
#[allow(dead_code)]
pub fn replace_views(
    views: &ViewRegistry,
    list: Vec<(String, Vec<String>, SyncSender<Vec<fib::Change>>)>,
) -> Result<(), String> {
    views.replace(
        list.into_iter()
            .map(|(name, neighbors, tx)| ViewSpec {
                name,
                neighbors,
                tx,
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    #[test]
    fn refuses_vrs_and_names_the_first() {
        let c = config::parse(
            "[router]\nid = \"192.0.2.1\"\nasn = 65000\n[dataplane]\n\
             [[dataplane.interface]]\nname = \"r0\"\n\
             [[dataplane.vr]]\nname = \"red\"\nvlan = 10\ntable = \"main\"\n",
            "t.toml",
        )
        .expect("valid");
        let d = c.dataplane.expect("dataplane");
        let e = super::refuse(&d).expect_err("refused");
        assert!(
            e.contains("\"red\"") && e.contains("not supported yet"),
            "{e}"
        );
        let none = config::Dataplane {
            vrs: Vec::new(),
            ..d
        };
        assert!(super::refuse(&none).is_ok());
    }

    /// Before the RIB runs, registrations are kept (installed at start);
    /// a replacement is the new set.
    #[test]
    fn views_before_the_start_are_kept_and_replaced() {
        let reg = super::view_registry();
        let (tx, _rx) = std::sync::mpsc::sync_channel(1);
        super::register_view(&reg, "red", &["bird-red".into()], tx.clone()).expect("kept");
        super::register_view(&reg, "blue", &["bird-blue".into()], tx.clone()).expect("kept");
        assert_eq!(reg.names(), ["red", "blue"]);
        assert_eq!(super::remove_view(&reg, "red"), Ok(true));
        assert_eq!(super::remove_view(&reg, "red"), Ok(false));
        super::replace_views(&reg, vec![("green".into(), vec!["x".into()], tx)]).expect("set");
        assert_eq!(reg.names(), ["green"]);
    }
}
