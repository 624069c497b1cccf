//! Compile errors: which policy, term and field, the offending text, and why.
//!
//! The reason ([`ErrorKind`]) is a small `Copy` enum. [`PolicyError`] also
//! owns the offending text and the term's name, so that the daemon can print
//! a complete message next to the config's file:line without keeping the
//! AST around; it is built only when compiling a config, never per route.

use std::fmt;

/// Why an AS-path regular expression was refused.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum RegexError {
    /// The expression is empty.
    Empty,
    /// A character that has no meaning in the accepted syntax.
    UnexpectedChar(char),
    /// `(` without `)` or the reverse.
    Unbalanced,
    /// `*`, `+` or `?` with nothing to repeat.
    NothingToRepeat,
    /// `[...]` not closed, empty, or holding something other than digits.
    BadClass,
    /// `<lo-hi>` malformed or lo > hi.
    BadRange,
    /// A literal ASN above 4294967295.
    AsnTooLarge,
    /// More states than the fixed-size matcher holds.
    TooComplex,
}

impl fmt::Display for RegexError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RegexError::Empty => f.write_str("empty expression"),
            RegexError::UnexpectedChar(c) => write!(f, "unexpected character {c:?}"),
            RegexError::Unbalanced => f.write_str("unbalanced parentheses"),
            RegexError::NothingToRepeat => f.write_str("quantifier with nothing to repeat"),
            RegexError::BadClass => f.write_str("bad [...] digit class"),
            RegexError::BadRange => f.write_str("bad <lo-hi> ASN range"),
            RegexError::AsnTooLarge => f.write_str("ASN larger than 4294967295"),
            RegexError::TooComplex => f.write_str("expression too complex"),
        }
    }
}

/// Why a value was refused.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum ErrorKind {
    /// Not `ADDRESS/LENGTH` (plus options where allowed).
    PrefixSyntax,
    /// A prefix length above the address width.
    PrefixLength {
        /// The length given.
        len: u8,
        /// The address width (32 or 128).
        max: u8,
    },
    /// Address bits set beyond the prefix length.
    HostBits,
    /// `ge`/`le` outside `len <= ge <= le <= max`.
    PrefixRange {
        /// The prefix length.
        len: u8,
        /// The `ge` bound.
        ge: u8,
        /// The `le` bound.
        le: u8,
        /// The address width.
        max: u8,
    },
    /// Not an IPv4 or IPv6 address or prefix.
    AddressSyntax,
    /// An AS-path regular expression was refused.
    Regex {
        /// Character offset in the expression.
        pos: u16,
        /// Why.
        err: RegexError,
    },
    /// Not a length comparison (`N`, `<= N`, `>= N`, `< N`, `> N`, `N-M`).
    LengthSyntax,
    /// Not a community of the expected form.
    CommunitySyntax,
    /// A wildcard or range where one exact value is needed (an action).
    WildcardNotAllowed,
    /// A field is larger than its encoding allows.
    ValueTooLarge {
        /// The largest value the field holds.
        max: u32,
    },
    /// Neither `ipv4` nor `ipv6`.
    UnknownAfi,
    /// Neither `accept` nor `reject`.
    UnknownVerdict,
    /// Not `N`, `+N` or `-N`.
    MedSyntax,
    /// More copies than [`crate::MAX_PREPEND`].
    PrependTooLong,
    /// `prepend_as` without `prepend`.
    PrependAsAlone,
    /// Not `valid`, `invalid` or `not-found`.
    UnknownRpkiState,
    /// Not `valid`, `invalid` or `unknown`.
    UnknownAspaState,
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            ErrorKind::PrefixSyntax => f.write_str(
                "expected ADDRESS/LENGTH, optionally followed by \"ge N\", \"le N\" or \"+\"",
            ),
            ErrorKind::PrefixLength { len, max } => write!(f, "prefix length {len} > {max}"),
            ErrorKind::HostBits => f.write_str("address has bits set beyond the prefix length"),
            ErrorKind::PrefixRange { len, ge, le, max } => write!(
                f,
                "need length <= ge <= le <= {max}, have length {len}, ge {ge}, le {le}"
            ),
            ErrorKind::AddressSyntax => f.write_str("expected an IP address or prefix"),
            ErrorKind::Regex { pos, err } => write!(f, "at character {pos}: {err}"),
            ErrorKind::LengthSyntax => {
                f.write_str("expected N, \"<= N\", \">= N\", \"< N\", \"> N\" or \"N-M\"")
            }
            ErrorKind::CommunitySyntax => f.write_str("not a community of the expected form"),
            ErrorKind::WildcardNotAllowed => {
                f.write_str("wildcards and ranges are only allowed in matches and removals")
            }
            ErrorKind::ValueTooLarge { max } => write!(f, "value larger than {max}"),
            ErrorKind::UnknownAfi => f.write_str("expected \"ipv4\" or \"ipv6\""),
            ErrorKind::UnknownVerdict => f.write_str("expected \"accept\" or \"reject\""),
            ErrorKind::MedSyntax => f.write_str("expected N, +N or -N"),
            ErrorKind::PrependTooLong => {
                write!(f, "at most {} copies can be prepended", crate::MAX_PREPEND)
            }
            ErrorKind::PrependAsAlone => f.write_str("prepend_as needs prepend = COUNT"),
            ErrorKind::UnknownRpkiState => {
                f.write_str("expected \"valid\", \"invalid\" or \"not-found\"")
            }
            ErrorKind::UnknownAspaState => {
                f.write_str("expected \"valid\", \"invalid\" or \"unknown\"")
            }
        }
    }
}

/// A policy that does not compile. Displays as
/// `policy "p": term 2 (name "x"): match.prefix[1]: "10.0.0.0/33": prefix length 33 > 32`.
/// Term and list indices are 0-based, as in the TOML arrays.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PolicyError {
    /// Set by [`crate::compile_all`].
    pub policy: Option<Box<str>>,
    /// Index of the term in `term`; `None` for the policy's `default`.
    pub term: Option<usize>,
    /// The term's name, if it has one.
    pub term_name: Option<Box<str>>,
    /// The TOML key path, e.g. `match.prefix` or `then.med`.
    pub field: &'static str,
    /// Position in the field's list, for list fields.
    pub index: Option<usize>,
    /// The offending text.
    pub value: Box<str>,
    /// What is wrong.
    pub kind: ErrorKind,
}

impl fmt::Display for PolicyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(p) = &self.policy {
            write!(f, "policy {p:?}: ")?;
        }
        if let Some(t) = self.term {
            write!(f, "term {t}")?;
            if let Some(n) = &self.term_name {
                write!(f, " (name {n:?})")?;
            }
            f.write_str(": ")?;
        }
        f.write_str(self.field)?;
        if let Some(i) = self.index {
            write!(f, "[{i}]")?;
        }
        write!(f, ": {:?}: {}", self.value, self.kind)
    }
}

impl std::error::Error for PolicyError {}
