//! Numeric code points, named as in the RFCs and the IANA registries.

/// BGP message types (RFC 4271 §4.1, RFC 2918).
pub mod msg_type {
    /// OPEN (RFC 4271 §4.2).
    pub const OPEN: u8 = 1;
    /// UPDATE (RFC 4271 §4.3).
    pub const UPDATE: u8 = 2;
    /// NOTIFICATION (RFC 4271 §4.5).
    pub const NOTIFICATION: u8 = 3;
    /// KEEPALIVE (RFC 4271 §4.4).
    pub const KEEPALIVE: u8 = 4;
    /// RFC 2918.
    pub const ROUTE_REFRESH: u8 = 5;
}

/// Path attribute type codes (IANA "BGP Path Attributes").
pub mod attr_type {
    /// RFC 4271 §5.1.1.
    pub const ORIGIN: u8 = 1;
    /// RFC 4271 §5.1.2.
    pub const AS_PATH: u8 = 2;
    /// RFC 4271 §5.1.3.
    pub const NEXT_HOP: u8 = 3;
    /// RFC 4271 §5.1.4 (MULTI_EXIT_DISC).
    pub const MULTI_EXIT_DISC: u8 = 4;
    /// RFC 4271 §5.1.5.
    pub const LOCAL_PREF: u8 = 5;
    /// RFC 4271 §5.1.6.
    pub const ATOMIC_AGGREGATE: u8 = 6;
    /// RFC 4271 §5.1.7.
    pub const AGGREGATOR: u8 = 7;
    /// RFC 1997.
    pub const COMMUNITIES: u8 = 8;
    /// RFC 4456.
    pub const ORIGINATOR_ID: u8 = 9;
    /// RFC 4456.
    pub const CLUSTER_LIST: u8 = 10;
    /// RFC 4760.
    pub const MP_REACH_NLRI: u8 = 14;
    /// RFC 4760.
    pub const MP_UNREACH_NLRI: u8 = 15;
    /// RFC 4360.
    pub const EXTENDED_COMMUNITIES: u8 = 16;
    /// RFC 6793.
    pub const AS4_PATH: u8 = 17;
    /// RFC 6793.
    pub const AS4_AGGREGATOR: u8 = 18;
    /// RFC 5701.
    pub const IPV6_EXTENDED_COMMUNITIES: u8 = 25;
    /// RFC 8092.
    pub const LARGE_COMMUNITY: u8 = 32;
    /// RFC 9234.
    pub const ONLY_TO_CUSTOMER: u8 = 35;
}

/// Path attribute flag bits (RFC 4271 §4.3).
pub mod attr_flags {
    /// Optional (bit 0): unset for well-known attributes.
    pub const OPTIONAL: u8 = 0x80;
    /// Transitive (bit 1): always set for well-known attributes.
    pub const TRANSITIVE: u8 = 0x40;
    /// Partial (bit 2): an optional transitive attribute some speaker did not recognise.
    pub const PARTIAL: u8 = 0x20;
    /// Extended Length (bit 3): the length field is two octets.
    pub const EXTENDED_LENGTH: u8 = 0x10;
}

/// Capability codes (IANA "Capability Codes", RFC 5492).
pub mod cap_code {
    /// RFC 4760.
    pub const MULTIPROTOCOL: u8 = 1;
    /// RFC 2918.
    pub const ROUTE_REFRESH: u8 = 2;
    /// RFC 8950 (Extended Next Hop Encoding).
    pub const EXTENDED_NEXT_HOP: u8 = 5;
    /// RFC 8654.
    pub const EXTENDED_MESSAGE: u8 = 6;
    /// RFC 9234.
    pub const ROLE: u8 = 9;
    /// RFC 4724.
    pub const GRACEFUL_RESTART: u8 = 64;
    /// RFC 6793.
    pub const FOUR_OCTET_AS: u8 = 65;
    /// RFC 7911.
    pub const ADD_PATH: u8 = 69;
    /// RFC 7313.
    pub const ENHANCED_ROUTE_REFRESH: u8 = 70;
    /// RFC 9494.
    pub const LONG_LIVED_GRACEFUL_RESTART: u8 = 71;
    /// draft-walton-bgp-hostname-capability.
    pub const FQDN: u8 = 73;
    /// Pre-standard Cisco route refresh; parsed as an unknown capability.
    pub const ROUTE_REFRESH_CISCO: u8 = 128;
}

/// OPEN optional parameter types (RFC 5492, RFC 9072).
pub mod opt_param {
    /// RFC 5492.
    pub const CAPABILITIES: u8 = 2;
    /// RFC 9072 §2: marks the extended optional parameters length form.
    pub const EXTENDED_LENGTH: u8 = 255;
}

/// NOTIFICATION error codes and subcodes (RFC 4271 §4.5, §6; RFC 4486,
/// RFC 7313, RFC 8203/9003).
pub mod notify {
    /// Message Header Error (1).
    pub const MESSAGE_HEADER_ERROR: u8 = 1;
    /// OPEN Message Error (2).
    pub const OPEN_MESSAGE_ERROR: u8 = 2;
    /// UPDATE Message Error (3).
    pub const UPDATE_MESSAGE_ERROR: u8 = 3;
    /// Hold Timer Expired (4).
    pub const HOLD_TIMER_EXPIRED: u8 = 4;
    /// Finite State Machine Error (5).
    pub const FSM_ERROR: u8 = 5;
    /// Cease (6).
    pub const CEASE: u8 = 6;
    /// RFC 7313 §5.
    pub const ROUTE_REFRESH_MESSAGE_ERROR: u8 = 7;

    /// Subcode 0, "Unspecific" (IANA; RFC 4271 erratum 4493).
    pub const UNSPECIFIC: u8 = 0;

    // Message Header Error subcodes.
    /// Message Header Error 1: Connection Not Synchronized (bad marker).
    pub const CONNECTION_NOT_SYNCHRONIZED: u8 = 1;
    /// Message Header Error 2: Bad Message Length.
    pub const BAD_MESSAGE_LENGTH: u8 = 2;
    /// Message Header Error 3: Bad Message Type.
    pub const BAD_MESSAGE_TYPE: u8 = 3;

    // OPEN Message Error subcodes.
    /// OPEN Message Error 1: Unsupported Version Number.
    pub const UNSUPPORTED_VERSION_NUMBER: u8 = 1;
    /// OPEN Message Error 2: Bad Peer AS.
    pub const BAD_PEER_AS: u8 = 2;
    /// OPEN Message Error 3: Bad BGP Identifier.
    pub const BAD_BGP_IDENTIFIER: u8 = 3;
    /// OPEN Message Error 4: Unsupported Optional Parameter.
    pub const UNSUPPORTED_OPTIONAL_PARAMETER: u8 = 4;
    /// OPEN Message Error 6: Unacceptable Hold Time.
    pub const UNACCEPTABLE_HOLD_TIME: u8 = 6;
    /// RFC 5492.
    pub const UNSUPPORTED_CAPABILITY: u8 = 7;
    /// RFC 9234.
    pub const ROLE_MISMATCH: u8 = 11;

    // UPDATE Message Error subcodes.
    /// UPDATE Message Error 1: Malformed Attribute List.
    pub const MALFORMED_ATTRIBUTE_LIST: u8 = 1;
    /// UPDATE Message Error 2: Unrecognized Well-known Attribute.
    pub const UNRECOGNIZED_WELL_KNOWN_ATTRIBUTE: u8 = 2;
    /// UPDATE Message Error 3: Missing Well-known Attribute.
    pub const MISSING_WELL_KNOWN_ATTRIBUTE: u8 = 3;
    /// UPDATE Message Error 4: Attribute Flags Error.
    pub const ATTRIBUTE_FLAGS_ERROR: u8 = 4;
    /// UPDATE Message Error 5: Attribute Length Error.
    pub const ATTRIBUTE_LENGTH_ERROR: u8 = 5;
    /// UPDATE Message Error 6: Invalid ORIGIN Attribute.
    pub const INVALID_ORIGIN_ATTRIBUTE: u8 = 6;
    /// UPDATE Message Error 8: Invalid NEXT_HOP Attribute.
    pub const INVALID_NEXT_HOP_ATTRIBUTE: u8 = 8;
    /// UPDATE Message Error 9: Optional Attribute Error.
    pub const OPTIONAL_ATTRIBUTE_ERROR: u8 = 9;
    /// UPDATE Message Error 10: Invalid Network Field.
    pub const INVALID_NETWORK_FIELD: u8 = 10;
    /// UPDATE Message Error 11: Malformed AS_PATH.
    pub const MALFORMED_AS_PATH: u8 = 11;

    // ROUTE-REFRESH Message Error subcodes (RFC 7313 §5).
    /// ROUTE-REFRESH Message Error 1: Invalid Message Length.
    pub const INVALID_MESSAGE_LENGTH: u8 = 1;

    // Cease subcodes (RFC 4486, RFC 9003).
    /// Cease 1: Maximum Number of Prefixes Reached.
    pub const MAXIMUM_PREFIXES_REACHED: u8 = 1;
    /// Cease 2: Administrative Shutdown.
    pub const ADMINISTRATIVE_SHUTDOWN: u8 = 2;
    /// Cease 3: Peer De-configured.
    pub const PEER_DECONFIGURED: u8 = 3;
    /// Cease 4: Administrative Reset.
    pub const ADMINISTRATIVE_RESET: u8 = 4;
    /// Cease 5: Connection Rejected.
    pub const CONNECTION_REJECTED: u8 = 5;
    /// Cease 6: Other Configuration Change.
    pub const OTHER_CONFIGURATION_CHANGE: u8 = 6;
    /// Cease 7: Connection Collision Resolution.
    pub const CONNECTION_COLLISION_RESOLUTION: u8 = 7;
    /// Cease 8: Out of Resources.
    pub const OUT_OF_RESOURCES: u8 = 8;
    /// RFC 8538.
    pub const HARD_RESET: u8 = 9;
    /// Cease 10: BFD Down (RFC 9384), sent when BFD tears the session down.
    pub const BFD_DOWN: u8 = 10;
}

/// ROUTE-REFRESH message subtypes in the former reserved octet (RFC 7313 §3.2).
pub mod rr_subtype {
    /// Normal route refresh request (RFC 2918).
    pub const NORMAL: u8 = 0;
    /// Beginning of Route Refresh.
    pub const BORR: u8 = 1;
    /// End of Route Refresh.
    pub const EORR: u8 = 2;
}
