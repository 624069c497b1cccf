//! Static routes: originated by the RIB from the [`STATIC_PEER`]
//! pseudo-peer, so they take part in best-path selection and export like
//! any learned route (BIRD's `protocol static` feeding BGP).

use base::Prefix;
use bgp_rib::{AcceptAll, AttrsBuilder};
use bgp_wire::Nlri;

use super::{RibState, STATIC_PEER};

/// One static route with the attributes it is originated with (ORIGIN,
/// empty AS_PATH, next hop, communities, ...).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StaticRoute {
    pub prefix: Prefix,
    pub attrs: AttrsBuilder,
}

/// Withdraws statics that are gone and (re)announces the rest; unchanged
/// routes produce no export because the Adj-RIB-Out only queues differences.
pub(super) fn replace(st: &mut RibState, routes: Vec<StaticRoute>) {
    // A shard thread originates only the prefixes it owns.
    let part = st.part;
    let routes: Vec<StaticRoute> = routes
        .into_iter()
        .filter(|r| part.owns(&r.prefix))
        .collect();
    let gone: Vec<Nlri> = st
        .statics
        .iter()
        .filter(|old| {
            !routes
                .iter()
                .any(|r| r.prefix.masked() == old.prefix.masked())
        })
        .map(|r| Nlri::new(r.prefix.masked()))
        .collect();
    if !gone.is_empty() {
        let _ = st.rib.apply_update(
            STATIC_PEER,
            &[],
            None,
            &gone,
            &mut AcceptAll,
            &mut st.changed,
        );
    }
    for r in &routes {
        let old = st
            .statics
            .iter()
            .find(|o| o.prefix.masked() == r.prefix.masked());
        if old == Some(r) {
            continue;
        }
        let n = [Nlri::new(r.prefix.masked())];
        let _ = st.rib.apply_update(
            STATIC_PEER,
            &n,
            Some(&r.attrs),
            &[],
            &mut AcceptAll,
            &mut st.changed,
        );
    }
    st.statics = routes;
}
