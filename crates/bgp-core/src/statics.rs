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

/// Routes originated beside the configured statics (the gRPC API's
/// AddPath/DeletePath), from the same pseudo-peer: `add` is announced
/// (consecutive routes with equal attributes in one RIB update), then
/// `withdraw` is withdrawn. Prefixes this part does not own and prefixes
/// of configured statics (`statics`) are skipped. Returns the number of
/// routes applied.
pub(crate) fn originate(
    rib: &mut Rib,
    statics: &[StaticRoute],
    changed: &mut Vec<Prefix>,
    part: Part,
    add: &[StaticRoute],
    withdraw: &[Prefix],
) -> usize {
    let ours =
        |p: &Prefix| part.owns(p) && !statics.iter().any(|s| s.prefix.masked() == p.masked());
    let mut n = 0;
    let mut i = 0;
    while i < add.len() {
        let attrs = &add[i].attrs;
        let mut nlri = Vec::new();
        while let Some(r) = add.get(i).filter(|r| &r.attrs == attrs) {
            if ours(&r.prefix) {
                nlri.push(Nlri::new(r.prefix.masked()));
            }
            i += 1;
        }
        if !nlri.is_empty() {
            n += nlri.len();
            let _ = rib.apply_update(
                STATIC_PEER,
                &nlri,
                Some(attrs),
                &[],
                &mut AcceptAll,
                changed,
            );
        }
    }
    let gone: Vec<Nlri> = withdraw
        .iter()
        .filter(|p| ours(p))
        .map(|p| Nlri::new(p.masked()))
        .collect();
    if !gone.is_empty() {
        n += gone.len();
        let _ = rib.apply_update(STATIC_PEER, &[], None, &gone, &mut AcceptAll, changed);
    }
    n
}
