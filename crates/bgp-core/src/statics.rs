//! Static routes: originated by the RIB from the [`STATIC_PEER`]
//! pseudo-peer, so they take part in best-path selection and export like
//! any learned route (BIRD's `protocol static` feeding BGP).

use base::Prefix;
use bgp_rib::{AcceptAll, AttrsBuilder, Rib};
use bgp_wire::Nlri;

use crate::settings::{Part, STATIC_PEER};

/// One static route with the attributes it is originated with (ORIGIN,
/// empty AS_PATH, next hop, communities, ...).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StaticRoute {
    /// The prefix.
    pub prefix: Prefix,
    /// Its attributes.
    pub attrs: AttrsBuilder,
}

/// Withdraws statics that are gone and (re)announces the rest; unchanged
/// routes produce no export because the Adj-RIB-Out only queues differences.
pub(crate) fn replace(
    rib: &mut Rib,
    statics: &mut Vec<StaticRoute>,
    changed: &mut Vec<Prefix>,
    part: Part,
    routes: Vec<StaticRoute>,
) {
    // A RIB part originates only the prefixes it owns.
    let routes: Vec<StaticRoute> = routes
        .into_iter()
        .filter(|r| part.owns(&r.prefix))
        .collect();
    let gone: Vec<Nlri> = statics
        .iter()
        .filter(|old| {
            !routes
                .iter()
                .any(|r| r.prefix.masked() == old.prefix.masked())
        })
        .map(|r| Nlri::new(r.prefix.masked()))
        .collect();
    if !gone.is_empty() {
        let _ = rib.apply_update(STATIC_PEER, &[], None, &gone, &mut AcceptAll, changed);
    }
    for r in &routes {
        let old = statics
            .iter()
            .find(|o| o.prefix.masked() == r.prefix.masked());
        if old == Some(r) {
            continue;
        }
        let n = [Nlri::new(r.prefix.masked())];
        let _ = rib.apply_update(
            STATIC_PEER,
            &n,
            Some(&r.attrs),
            &[],
            &mut AcceptAll,
            changed,
        );
    }
    *statics = routes;
}
