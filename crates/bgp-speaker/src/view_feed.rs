//! Views for forwarding planes other than the main one: the best routes
//! among the paths of some named neighbours (`bgp_core::views`), each
//! followed through its own bounded channel of [`BestChange`] batches, the
//! same type and rhythm as the main feed ([`crate::fib_feed`]). tesserad
//! feeds a virtual router's FIB (`[[dataplane.vr]] neighbors = [...]`)
//! with one.
//!
//! * [`ViewFeed`]: the views of one RIB thread (or stripe): registration
//!   sends that part's snapshot on the view's channel (in batches of
//!   [`SNAPSHOT_BATCH`]), and every export round's [`bgp_core::ViewBatch`]
//!   goes to its view's channel, blocking while the channel is full (a
//!   forwarding plane that cannot keep up slows the RIB, as with the main
//!   feed). A view whose receiver hung up is dropped.
//! * [`ViewRegistry`]: the daemon-wide handle. It keeps the set of views
//!   and installs it in every RIB part, at start (before the first route)
//!   and on each change later, in every pipeline mode (through the same
//!   control channels as `show` and reload). Each part sends its own
//!   prefixes on a clone of the channel: the snapshot is the union of the
//!   parts' snapshots.
//!
//! Not done: after a graceful restart (`tesserad -R`) a view gets no
//! end-of-sync marker (the main feed's empty batch).

use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use tokio::sync::mpsc::Sender;

use crate::pipeline::CallError;
pub use crate::rib::views::{ViewFeed, ViewSpec};
use crate::rib::{RibMsg, RibState};
pub use bgp_core::{BestChange, ViewBatch};

/// How long a registration waits for every RIB part (each sends its
/// snapshot on the view's channel first: the receiver must be read).
pub const REGISTER_TIMEOUT: Duration = Duration::from_secs(30);

#[derive(Default)]
struct Inner {
    views: Vec<ViewSpec>,
    /// The RIB parts' control channels, once they run.
    rib: Option<Vec<Sender<RibMsg>>>,
}

/// The daemon-wide set of views (see the module docs). Create it before
/// the daemon starts ([`crate::daemon::Hooks::views`]); register views
/// before or after.
#[derive(Default)]
pub struct ViewRegistry {
    inner: Mutex<Inner>,
}

impl std::fmt::Debug for ViewRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<String> = self.lock().views.iter().map(|v| v.name.clone()).collect();
        f.debug_struct("ViewRegistry")
            .field("views", &names)
            .finish()
    }
}

fn call_error(e: CallError) -> String {
    match e {
        CallError::Gone => "a RIB thread is gone".into(),
        CallError::Timeout => format!(
            "a RIB thread did not answer in {} s (is the view's receiver read?)",
            REGISTER_TIMEOUT.as_secs()
        ),
    }
}

impl ViewRegistry {
    /// An empty registry.
    pub fn new() -> Arc<ViewRegistry> {
        Arc::new(ViewRegistry::default())
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Runs `f` on every RIB part, from a thread of its own: the parts'
    /// control channels block, which a tokio worker thread may not.
    fn on_parts(
        rib: &[Sender<RibMsg>],
        f: impl Fn(&mut RibState) + Send + Sync + 'static,
    ) -> Result<(), String> {
        let rib = rib.to_vec();
        let t = std::thread::Builder::new()
            .name("view-register".into())
            .spawn(move || crate::pipeline::call_all(&rib, REGISTER_TIMEOUT, f))
            .map_err(|e| format!("cannot start a thread: {e}"))?;
        match t.join() {
            Ok(r) => r.map(|_| ()).map_err(call_error),
            Err(_) => Err("a RIB thread panicked".into()),
        }
    }

    /// Registers `v` (replacing a view of the same name): once the RIB
    /// runs, every part sends its snapshot on `v.tx` before this returns,
    /// so the receiver must be read meanwhile (from another thread).
    pub fn register(&self, v: ViewSpec) -> Result<(), String> {
        let mut g = self.lock();
        g.views.retain(|x| x.name != v.name);
        g.views.push(v.clone());
        match g.rib.clone() {
            Some(rib) => Self::on_parts(&rib, move |st| {
                st.set_view(&v);
            }),
            None => Ok(()),
        }
    }

    /// Stops the view `name`; returns whether it was registered.
    pub fn remove(&self, name: &str) -> Result<bool, String> {
        let mut g = self.lock();
        let n = g.views.len();
        g.views.retain(|x| x.name != name);
        let was = g.views.len() != n;
        if let Some(rib) = g.rib.clone() {
            let name = name.to_string();
            Self::on_parts(&rib, move |st| {
                st.remove_view(&name);
            })?;
        }
        Ok(was)
    }

    /// Replaces the whole set (a reload): every view in `views` gets a
    /// snapshot, every other one stops.
    pub fn replace(&self, views: Vec<ViewSpec>) -> Result<(), String> {
        let mut g = self.lock();
        g.views = views.clone();
        match g.rib.clone() {
            Some(rib) => Self::on_parts(&rib, move |st| st.set_views(&views)),
            None => Ok(()),
        }
    }

    /// The names of the registered views.
    pub fn names(&self) -> Vec<String> {
        self.lock().views.iter().map(|v| v.name.clone()).collect()
    }

    /// Connects the registry to RIB parts that already run (the daemon
    /// uses [`Self::starting`] instead; for in-process pipelines, e.g.
    /// `testkit::inproc`): the views registered so far are installed in
    /// every part, each sending its snapshot.
    pub fn attach(&self, rib: Vec<Sender<RibMsg>>) -> Result<(), String> {
        let mut g = self.lock();
        g.rib = Some(rib.clone());
        let views = g.views.clone();
        Self::on_parts(&rib, move |st| st.set_views(&views))
    }

    /// Holds registrations back while the RIB parts are created: the
    /// parts start with [`Starting::views`], and [`Starting::attach`]
    /// connects later registrations to them.
    pub(crate) fn starting(&self) -> Starting<'_> {
        Starting(self.lock())
    }
}

/// [`ViewRegistry::starting`].
pub(crate) struct Starting<'a>(MutexGuard<'a, Inner>);

impl Starting<'_> {
    /// The views registered before the start.
    pub(crate) fn views(&self) -> Vec<ViewSpec> {
        self.0.views.clone()
    }

    /// The parts run: later registrations go to them.
    pub(crate) fn attach(mut self, rib: Vec<Sender<RibMsg>>) {
        self.0.rib = Some(rib);
    }
}
