//! Argument parsing helpers shared by the element constructors.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use graph::{Arg, BuildError};
use pkt::Mac;

/// Splits an argument into its keyword and the rest (`"MAC 02:00:00:00:00:01"`).
pub fn keyword(a: &str) -> (&str, &str) {
    match a.split_once(char::is_whitespace) {
        Some((k, v)) => (k, v.trim()),
        None => (a, ""),
    }
}

/// Parses an unsigned number (decimal or 0x hex).
pub fn num(i: usize, s: &str) -> Result<u64, BuildError> {
    let s = s.trim();
    let r = match s.strip_prefix("0x") {
        Some(h) => u64::from_str_radix(h, 16),
        None => s.parse(),
    };
    r.map_err(|_| BuildError::arg(i, format!("expected a number, got '{s}'")))
}

/// Parses a number that must fit `u16`.
pub fn num16(i: usize, s: &str) -> Result<u16, BuildError> {
    u16::try_from(num(i, s)?).map_err(|_| BuildError::arg(i, "number too large"))
}

/// Parses an IPv4 address.
pub fn ip4(i: usize, s: &str) -> Result<Ipv4Addr, BuildError> {
    s.trim()
        .parse()
        .map_err(|_| BuildError::arg(i, format!("expected an IPv4 address, got '{s}'")))
}

/// Parses an IPv6 address.
pub fn ip6(i: usize, s: &str) -> Result<Ipv6Addr, BuildError> {
    s.trim()
        .parse()
        .map_err(|_| BuildError::arg(i, format!("expected an IPv6 address, got '{s}'")))
}

/// Parses an IP address of either family.
pub fn ip(i: usize, s: &str) -> Result<IpAddr, BuildError> {
    s.trim()
        .parse()
        .map_err(|_| BuildError::arg(i, format!("expected an IP address, got '{s}'")))
}

/// Parses a MAC address.
pub fn mac(i: usize, s: &str) -> Result<Mac, BuildError> {
    s.trim()
        .parse()
        .map_err(|_| BuildError::arg(i, format!("expected a MAC address, got '{s}'")))
}

/// Parses `true`/`false`.
pub fn boolean(i: usize, s: &str) -> Result<bool, BuildError> {
    match s.trim() {
        "true" | "yes" | "1" => Ok(true),
        "false" | "no" | "0" => Ok(false),
        _ => Err(BuildError::arg(
            i,
            format!("expected true or false, got '{s}'"),
        )),
    }
}

/// Iterates arguments with their index.
pub fn each(args: &[Arg]) -> impl Iterator<Item = (usize, &str)> {
    args.iter().enumerate().map(|(i, a)| (i, a.text.as_str()))
}

/// An error for an unknown keyword.
pub fn unknown(i: usize, k: &str) -> BuildError {
    BuildError::arg(i, format!("unknown keyword '{k}'"))
}
