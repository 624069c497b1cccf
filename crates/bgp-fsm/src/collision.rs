//! Connection collision detection (RFC 4271 §6.8, RFC 6286 §2.3).
//!
//! When two connections to the same peer both reach OpenConfirm (or one is
//! in OpenConfirm and the other receives the OPEN), exactly one survives.
//! The runtime asks [`resolve`] and feeds [`crate::Event::OpenCollisionDump`]
//! to the FSM of the loser.

use std::net::Ipv4Addr;

use base::Asn;

/// Which of two colliding connections to keep.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Survivor {
    /// The connection we initiated (our outgoing TCP connection).
    LocallyInitiated,
    /// The connection the peer initiated (accepted by us).
    RemotelyInitiated,
}

/// RFC 4271 §6.8: "If the value of the local BGP Identifier is less than
/// the remote one, the local system closes the BGP connection that already
/// exists (the one that is already in the OpenConfirm state), and accepts
/// the BGP connection initiated by the remote system. Otherwise, the local
/// system closes the newly created BGP connection (the one associated with
/// the newly received OPEN message), and continues to use the existing one"
/// -- that is, the connection initiated by the speaker with the higher BGP
/// Identifier survives. The identifiers compare as 32-bit unsigned host
/// integers.
///
/// RFC 6286 §2.3: when the identifiers are equal (possible between
/// different ASes), the connection initiated by the speaker with the larger
/// AS number survives. Equal identifiers and ASes cannot pass OPEN
/// validation (RFC 6286 §2.2); we keep the remote one then, arbitrarily but
/// deterministically.
pub fn resolve(
    local_id: Ipv4Addr,
    local_asn: Asn,
    remote_id: Ipv4Addr,
    remote_asn: Asn,
) -> Survivor {
    let (l, r) = (u32::from(local_id), u32::from(remote_id));
    if l > r || (l == r && local_asn > remote_asn) {
        Survivor::LocallyInitiated
    } else {
        Survivor::RemotelyInitiated
    }
}

/// Whether a connection survives a collision: `locally_initiated` says
/// whether this connection is the one we opened. `false` means: feed it
/// [`crate::Event::OpenCollisionDump`].
pub fn keeps(
    locally_initiated: bool,
    local_id: Ipv4Addr,
    local_asn: Asn,
    remote_id: Ipv4Addr,
    remote_asn: Asn,
) -> bool {
    let s = resolve(local_id, local_asn, remote_id, remote_asn);
    (s == Survivor::LocallyInitiated) == locally_initiated
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: Asn = Asn(65001);
    const B: Asn = Asn(65002);

    #[test]
    fn higher_identifier_keeps_its_own_connection() {
        let lo = Ipv4Addr::new(10, 0, 0, 1);
        let hi = Ipv4Addr::new(10, 0, 0, 2);
        assert_eq!(resolve(hi, A, lo, B), Survivor::LocallyInitiated);
        assert_eq!(resolve(lo, A, hi, B), Survivor::RemotelyInitiated);
        // Numeric, not lexicographic on text: 9.x < 10.x.
        assert_eq!(
            resolve(
                Ipv4Addr::new(9, 255, 255, 255),
                A,
                Ipv4Addr::new(10, 0, 0, 0),
                A
            ),
            Survivor::RemotelyInitiated
        );
        assert!(keeps(true, hi, A, lo, B));
        assert!(!keeps(false, hi, A, lo, B));
        assert!(keeps(false, lo, A, hi, B));
        assert!(!keeps(true, lo, A, hi, B));
    }

    #[test]
    fn equal_identifiers_use_the_as_number() {
        let id = Ipv4Addr::new(192, 0, 2, 1);
        assert_eq!(resolve(id, B, id, A), Survivor::LocallyInitiated);
        assert_eq!(resolve(id, A, id, B), Survivor::RemotelyInitiated);
    }

    #[test]
    fn both_sides_agree() {
        // Each side runs the function with the roles swapped; the same
        // physical connection must win on both.
        let x = Ipv4Addr::new(1, 2, 3, 4);
        let y = Ipv4Addr::new(4, 3, 2, 1);
        for (ix, iy, ax, ay) in [(x, y, A, B), (y, x, A, B), (x, x, A, B), (x, x, B, A)] {
            let on_x = resolve(ix, ax, iy, ay);
            let on_y = resolve(iy, ay, ix, ax);
            assert_ne!(on_x, on_y, "x keeps its own iff y keeps the remote one");
        }
    }
}
