//! AS-path regular expressions, compiled to an automaton over ASN tokens.
//!
//! The syntax follows FRR/Cisco `ip as-path access-list`, but the input is
//! the sequence of ASNs, not a rendered string, so no route is ever
//! formatted:
//!
//! | syntax        | meaning                                                     |
//! |---------------|-------------------------------------------------------------|
//! | `65001`       | exactly the ASN 65001 (a whole ASN, never a part of one)     |
//! | `6450[0-9]`   | one ASN whose decimal form matches digit by digit; a *run* of digits, `[...]` classes (`[0-9]`, `[^0]`, `[135]`) and `.` (any digit), each optionally followed by `*`, `+` or `?` **applied to that digit**: `[0-9]+` is any one ASN, `65001?` is 6500 or 65001 |
//! | `.`           | any one ASN (when not inside a run)                          |
//! | `<64512-65534>` | one ASN in this inclusive range (an extension)             |
//! | `_`, space    | a boundary; between ASNs it always holds, so it only separates runs |
//! | `^` `$`       | start and end of the path                                    |
//! | `(...)`       | grouping; `*`, `+`, `?` after a group or `.` repeat ASNs      |
//! | `a\|b`        | alternation, at any level                                   |
//!
//! Without `^` and `$` the expression may match anywhere in the path, as in
//! FRR: `_3356_` means "3356 appears", `^65001_` "learned from 65001",
//! `_65001$` "originated by 65001", `^$` "empty path", `.*` anything,
//! `^65001(_65001)*$` "only 65001, possibly prepended".
//!
//! Differences from a string regex: literals are whole ASNs (FRR's
//! unanchored `1` would match inside `3356`; here it matches only ASN 1);
//! to repeat an ASN use a group, `(65001)+`, since `65001+` repeats the
//! digit `1`. Back-references and `{m,n}` are not supported.
//!
//! The path is the ASNs of all segments in order; AS_SET and confederation
//! members appear as ordinary tokens (FRR would print braces around them).
//!
//! Matching is a Thompson NFA simulation with fixed-size bitsets (at most
//! [`MAX_STATES`] states), ε-closures precomputed for each combination of
//! "at start" / "at end"; it allocates nothing and reads each ASN once.

mod parse;
#[cfg(test)]
mod tests;

use std::fmt;

use crate::error::RegexError;
use parse::{Atom, Node, Parser, Rep};

/// The most automaton states an expression may compile to.
pub const MAX_STATES: usize = 256;
const WORDS: usize = MAX_STATES / 64;

#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
struct Bits([u64; WORDS]);

impl Bits {
    fn set(&mut self, i: usize) {
        if let Some(w) = self.0.get_mut(i / 64) {
            *w |= 1 << (i % 64);
        }
    }
    fn has(&self, i: usize) -> bool {
        self.0.get(i / 64).is_some_and(|w| w & (1 << (i % 64)) != 0)
    }
    /// `or` over the first `n` words only (the rest are zero).
    #[inline]
    fn or_n(&mut self, o: &Bits, n: usize) {
        for (a, b) in self.0.iter_mut().zip(o.0).take(n) {
            *a |= b;
        }
    }
    fn is_empty(&self) -> bool {
        self.0.iter().all(|w| *w == 0)
    }
    /// Calls `f` with each set index within the first `n` words.
    #[inline]
    fn for_each(&self, n: usize, mut f: impl FnMut(usize)) {
        for (wi, w) in self.0.iter().enumerate().take(n) {
            let mut w = *w;
            while w != 0 {
                let b = w.trailing_zeros() as usize;
                f(wi * 64 + b);
                w &= w - 1;
            }
        }
    }
}

#[derive(Clone, Debug)]
enum St {
    Accept,
    Tok(Atom, u16),
    Split(u16, u16),
    AssertStart(u16),
    AssertEnd(u16),
}

const ACCEPT: usize = 0;
/// Closure flags: position is the start / the end of the path.
const AT_START: usize = 1;
const AT_END: usize = 2;

/// A compiled AS-path expression (see the module docs for the syntax).
#[derive(Clone)]
pub struct AsPathRegex {
    states: Vec<St>,
    start: usize,
    /// Per state, per flag combination: the consuming states and ACCEPT
    /// reachable through ε-moves.
    closure: Vec<[Bits; 4]>,
    /// The start state needs to be re-entered at later positions (the
    /// expression is not anchored with `^` on every branch).
    search: bool,
    /// Bitset words in use: states / 64, rounded up.
    words: usize,
    source: Box<str>,
}

impl fmt::Debug for AsPathRegex {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "AsPathRegex({:?}, {} states)",
            self.source,
            self.states.len()
        )
    }
}

struct Builder {
    states: Vec<St>,
}

impl Builder {
    fn push(&mut self, s: St) -> Result<u16, RegexError> {
        if self.states.len() >= MAX_STATES {
            return Err(RegexError::TooComplex);
        }
        self.states.push(s);
        Ok((self.states.len() - 1) as u16)
    }

    /// Compiles `n` so that it continues at `next`; returns its entry.
    fn compile(&mut self, n: &Node, next: u16) -> Result<u16, RegexError> {
        Ok(match n {
            Node::Empty => next,
            Node::Atom(a) => self.push(St::Tok(a.clone(), next))?,
            Node::Start => self.push(St::AssertStart(next))?,
            Node::End => self.push(St::AssertEnd(next))?,
            Node::Concat(v) => {
                let mut nx = next;
                for c in v.iter().rev() {
                    nx = self.compile(c, nx)?;
                }
                nx
            }
            Node::Alt(v) => {
                let mut entry: Option<u16> = None;
                for c in v.iter().rev() {
                    let s = self.compile(c, next)?;
                    entry = Some(match entry {
                        None => s,
                        Some(rest) => self.push(St::Split(s, rest))?,
                    });
                }
                entry.unwrap_or(next)
            }
            Node::Repeat(body, rep) => match rep {
                Rep::Opt => {
                    let b = self.compile(body, next)?;
                    self.push(St::Split(b, next))?
                }
                Rep::Star | Rep::Plus => {
                    let s = self.push(St::Split(next, next))?;
                    let b = self.compile(body, s)?;
                    if let Some(St::Split(x, _)) = self.states.get_mut(usize::from(s)) {
                        *x = b;
                    }
                    if *rep == Rep::Star {
                        s
                    } else {
                        b
                    }
                }
            },
        })
    }
}

impl AsPathRegex {
    /// Compiles `src`; the error carries the character offset.
    pub fn new(src: &str) -> Result<AsPathRegex, (usize, RegexError)> {
        let ast = Parser::new(src).parse()?;
        let mut b = Builder {
            states: vec![St::Accept],
        };
        let start = b.compile(&ast, ACCEPT as u16).map_err(|e| (0, e))?;
        let states = b.states;
        let states_len = states.len();
        let mut closure = vec![[Bits::default(); 4]; states.len()];
        let mut stack = Vec::new();
        for (s, row) in closure.iter_mut().enumerate() {
            for (flags, out) in row.iter_mut().enumerate() {
                let mut seen = Bits::default();
                stack.clear();
                stack.push(s);
                while let Some(x) = stack.pop() {
                    if seen.has(x) {
                        continue;
                    }
                    seen.set(x);
                    match states.get(x) {
                        Some(St::Accept | St::Tok(..)) => out.set(x),
                        Some(St::Split(a, b)) => {
                            stack.push(usize::from(*a));
                            stack.push(usize::from(*b));
                        }
                        Some(St::AssertStart(n)) if flags & AT_START != 0 => {
                            stack.push(usize::from(*n))
                        }
                        Some(St::AssertEnd(n)) if flags & AT_END != 0 => {
                            stack.push(usize::from(*n))
                        }
                        _ => {}
                    }
                }
            }
        }
        let start = usize::from(start);
        let search = closure
            .get(start)
            .is_some_and(|r| !r[0].is_empty() || !r[AT_END].is_empty());
        Ok(AsPathRegex {
            states,
            start,
            closure,
            search,
            words: states_len.div_ceil(64),
            source: src.into(),
        })
    }

    /// The expression as written.
    pub fn as_str(&self) -> &str {
        &self.source
    }

    #[inline]
    fn close(&self, pre: &Bits, flags: usize) -> Bits {
        let mut out = Bits::default();
        pre.for_each(self.words, |s| {
            if let Some(row) = self.closure.get(s) {
                out.or_n(&row[flags & 3], self.words);
            }
        });
        out
    }

    /// Whether the expression matches the path given as its ASNs in order.
    pub fn matches<I: IntoIterator<Item = u32>>(&self, path: I) -> bool {
        let mut pre = Bits::default();
        pre.set(self.start);
        let mut first = true;
        for asn in path {
            let cur = self.close(&pre, if first { AT_START } else { 0 });
            if cur.has(ACCEPT) {
                return true;
            }
            pre = Bits::default();
            cur.for_each(self.words, |s| {
                if let Some(St::Tok(a, next)) = self.states.get(s) {
                    if a.matches(asn) {
                        pre.set(usize::from(*next));
                    }
                }
            });
            first = false;
            if self.search {
                pre.set(self.start);
            } else if pre.is_empty() {
                return false;
            }
        }
        let flags = AT_END | if first { AT_START } else { 0 };
        self.close(&pre, flags).has(ACCEPT)
    }

    /// Number of automaton states (for tests).
    pub fn state_count(&self) -> usize {
        self.states.len()
    }
}
