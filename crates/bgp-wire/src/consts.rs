//! Numeric code points, named as in the RFCs and the IANA registries.

/// BGP message types (RFC 4271 §4.1, RFC 2918).
pub mod msg_type {
    pub const OPEN: u8 = 1;
    pub const UPDATE: u8 = 2;
    pub const NOTIFICATION: u8 = 3;
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
    pub const OPTIONAL: u8 = 0x80;
    pub const TRANSITIVE: u8 = 0x40;
    pub const PARTIAL: u8 = 0x20;
    pub const EXTENDED_LENGTH: u8 = 0x10;
}

/// Capability codes (IANA "Capability Codes", RFC 5492).
pub mod cap_code {
    /// RFC 4760.
    pub const MULTIPROTOCOL: u8 = 1;
    /// RFC 2918.
    pub const ROUTE_REFRESH: u8 = 2;
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
    pub const MESSAGE_HEADER_ERROR: u8 = 1;
    pub const OPEN_MESSAGE_ERROR: u8 = 2;
    pub const UPDATE_MESSAGE_ERROR: u8 = 3;
    pub const HOLD_TIMER_EXPIRED: u8 = 4;
    pub const FSM_ERROR: u8 = 5;
    pub const CEASE: u8 = 6;
    /// RFC 7313 §5.
    pub const ROUTE_REFRESH_MESSAGE_ERROR: u8 = 7;

    /// Subcode 0, "Unspecific" (IANA; RFC 4271 erratum 4493).
    pub const UNSPECIFIC: u8 = 0;

    // Message Header Error subcodes.
    pub const CONNECTION_NOT_SYNCHRONIZED: u8 = 1;
    pub const BAD_MESSAGE_LENGTH: u8 = 2;
    pub const BAD_MESSAGE_TYPE: u8 = 3;

    // OPEN Message Error subcodes.
    pub const UNSUPPORTED_VERSION_NUMBER: u8 = 1;
    pub const BAD_PEER_AS: u8 = 2;
    pub const BAD_BGP_IDENTIFIER: u8 = 3;
    pub const UNSUPPORTED_OPTIONAL_PARAMETER: u8 = 4;
    pub const UNACCEPTABLE_HOLD_TIME: u8 = 6;
    /// RFC 5492.
    pub const UNSUPPORTED_CAPABILITY: u8 = 7;
    /// RFC 9234.
    pub const ROLE_MISMATCH: u8 = 11;

    // UPDATE Message Error subcodes.
    pub const MALFORMED_ATTRIBUTE_LIST: u8 = 1;
    pub const UNRECOGNIZED_WELL_KNOWN_ATTRIBUTE: u8 = 2;
    pub const MISSING_WELL_KNOWN_ATTRIBUTE: u8 = 3;
    pub const ATTRIBUTE_FLAGS_ERROR: u8 = 4;
    pub const ATTRIBUTE_LENGTH_ERROR: u8 = 5;
    pub const INVALID_ORIGIN_ATTRIBUTE: u8 = 6;
    pub const INVALID_NEXT_HOP_ATTRIBUTE: u8 = 8;
    pub const OPTIONAL_ATTRIBUTE_ERROR: u8 = 9;
    pub const INVALID_NETWORK_FIELD: u8 = 10;
    pub const MALFORMED_AS_PATH: u8 = 11;

    // ROUTE-REFRESH Message Error subcodes (RFC 7313 §5).
    pub const INVALID_MESSAGE_LENGTH: u8 = 1;

    // Cease subcodes (RFC 4486, RFC 9003).
    pub const MAXIMUM_PREFIXES_REACHED: u8 = 1;
    pub const ADMINISTRATIVE_SHUTDOWN: u8 = 2;
    pub const PEER_DECONFIGURED: u8 = 3;
    pub const ADMINISTRATIVE_RESET: u8 = 4;
    pub const CONNECTION_REJECTED: u8 = 5;
    pub const OTHER_CONFIGURATION_CHANGE: u8 = 6;
    pub const CONNECTION_COLLISION_RESOLUTION: u8 = 7;
    pub const OUT_OF_RESOURCES: u8 = 8;
    /// RFC 8538.
    pub const HARD_RESET: u8 = 9;
}

/// ROUTE-REFRESH message subtypes in the former reserved octet (RFC 7313 §3.2).
pub mod rr_subtype {
    pub const NORMAL: u8 = 0;
    /// Beginning of Route Refresh.
    pub const BORR: u8 = 1;
    /// End of Route Refresh.
    pub const EORR: u8 = 2;
}
