//! Parser for AS-path regular expressions (syntax in [`super`]).

use crate::error::RegexError;

/// A quantifier.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(super) enum Rep {
    Star,
    Plus,
    Opt,
}

/// A digit-level pattern matched against one ASN's decimal digits, from a
/// run such as `6450[0-9]` or `[1-9][0-9]*`. Item i is a set of digits
/// (bit d = digit d); `star` items loop, `skip` items may be skipped.
/// `+` is expanded to one item followed by a starred copy.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct DigitPat {
    masks: Vec<u16>,
    star: u64,
    skip: u64,
}

/// Digit-level items per run: states must fit a `u64`.
const MAX_DIGIT_ITEMS: usize = 63;

impl DigitPat {
    fn close(&self, mut s: u64) -> u64 {
        for i in 0..self.masks.len() {
            if s & self.skip & (1 << i) != 0 {
                s |= 1 << (i + 1);
            }
        }
        s
    }

    /// Whether the decimal form of `asn` matches the whole pattern.
    pub(super) fn matches(&self, asn: u32) -> bool {
        let mut digits = [0u8; 10];
        let mut k = 0;
        let mut v = asn;
        loop {
            if let Some(d) = digits.get_mut(k) {
                *d = (v % 10) as u8;
            }
            k += 1;
            v /= 10;
            if v == 0 || k == digits.len() {
                break;
            }
        }
        let mut cur = self.close(1);
        for d in digits.iter().take(k).rev() {
            let bit = 1u16 << d;
            let mut next = 0u64;
            for (i, m) in self.masks.iter().enumerate() {
                if cur & (1 << i) != 0 && m & bit != 0 {
                    next |= if self.star & (1 << i) != 0 {
                        1 << i
                    } else {
                        1 << (i + 1)
                    };
                }
            }
            cur = self.close(next);
            if cur == 0 {
                return false;
            }
        }
        cur & (1 << self.masks.len()) != 0
    }
}

/// What one ASN token is tested against.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Atom {
    Any,
    Exact(u32),
    Range(u32, u32),
    Digits(DigitPat),
}

impl Atom {
    #[inline]
    pub(super) fn matches(&self, asn: u32) -> bool {
        match self {
            Atom::Any => true,
            Atom::Exact(a) => *a == asn,
            Atom::Range(lo, hi) => (*lo..=*hi).contains(&asn),
            Atom::Digits(d) => d.matches(asn),
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Node {
    Empty,
    Atom(Atom),
    Start,
    End,
    Concat(Vec<Node>),
    Alt(Vec<Node>),
    Repeat(Box<Node>, Rep),
}

pub(super) type PResult<T> = Result<T, (usize, RegexError)>;

/// Nesting limit for parentheses, so that hostile input cannot exhaust the
/// stack of the recursive parser and compiler.
const MAX_DEPTH: usize = 32;

pub(super) struct Parser<'a> {
    s: &'a str,
    b: &'a [u8],
    pos: usize,
}

impl<'a> Parser<'a> {
    pub(super) fn new(s: &'a str) -> Parser<'a> {
        Parser {
            s,
            b: s.as_bytes(),
            pos: 0,
        }
    }

    fn peek(&self) -> Option<u8> {
        self.b.get(self.pos).copied()
    }
    fn peek2(&self) -> Option<u8> {
        self.b.get(self.pos + 1).copied()
    }
    fn err<T>(&self, e: RegexError) -> PResult<T> {
        Err((self.pos, e))
    }
    fn unexpected<T>(&self) -> PResult<T> {
        let c = self.s.get(self.pos..).and_then(|r| r.chars().next());
        self.err(RegexError::UnexpectedChar(c.unwrap_or('?')))
    }

    pub(super) fn parse(mut self) -> PResult<Node> {
        if self.s.trim().is_empty() {
            return self.err(RegexError::Empty);
        }
        let n = self.alt(0)?;
        if self.peek().is_some() {
            // Only a stray ')' stops the top-level alternation early.
            return self.err(RegexError::Unbalanced);
        }
        Ok(n)
    }

    fn alt(&mut self, depth: usize) -> PResult<Node> {
        if depth > MAX_DEPTH {
            return self.err(RegexError::TooComplex);
        }
        let mut branches = vec![self.concat(depth)?];
        while self.peek() == Some(b'|') {
            self.pos += 1;
            branches.push(self.concat(depth)?);
        }
        Ok(if branches.len() == 1 {
            branches.pop().unwrap_or(Node::Empty)
        } else {
            Node::Alt(branches)
        })
    }

    fn concat(&mut self, depth: usize) -> PResult<Node> {
        let mut items = Vec::new();
        while let Some(c) = self.peek() {
            let atom = match c {
                b'|' | b')' => break,
                b'^' => {
                    self.pos += 1;
                    items.push(Node::Start);
                    continue;
                }
                b'$' => {
                    self.pos += 1;
                    items.push(Node::End);
                    continue;
                }
                // `_` matches any boundary; between ASN tokens that is
                // always true, so it only separates.
                b'_' | b' ' | b'\t' => {
                    self.pos += 1;
                    continue;
                }
                b'(' => {
                    self.pos += 1;
                    let inner = self.alt(depth + 1)?;
                    if self.peek() != Some(b')') {
                        return self.err(RegexError::Unbalanced);
                    }
                    self.pos += 1;
                    inner
                }
                b'.' if !matches!(self.peek2(), Some(b'0'..=b'9' | b'[')) => {
                    self.pos += 1;
                    Node::Atom(Atom::Any)
                }
                b'<' => Node::Atom(self.range()?),
                b'0'..=b'9' | b'[' | b'.' => {
                    // Quantifiers inside a run are digit-level: the run
                    // takes them itself.
                    items.push(Node::Atom(self.run()?));
                    continue;
                }
                b'*' | b'+' | b'?' => return self.err(RegexError::NothingToRepeat),
                _ => return self.unexpected(),
            };
            items.push(self.quantified(atom));
        }
        Ok(match items.len() {
            0 => Node::Empty,
            1 => items.pop().unwrap_or(Node::Empty),
            _ => Node::Concat(items),
        })
    }

    fn quantified(&mut self, mut n: Node) -> Node {
        while let Some(r) = match self.peek() {
            Some(b'*') => Some(Rep::Star),
            Some(b'+') => Some(Rep::Plus),
            Some(b'?') => Some(Rep::Opt),
            _ => None,
        } {
            self.pos += 1;
            n = Node::Repeat(Box::new(n), r);
        }
        n
    }

    fn number(&mut self) -> PResult<Option<u32>> {
        let start = self.pos;
        let mut v: u64 = 0;
        while let Some(d @ b'0'..=b'9') = self.peek() {
            v = v * 10 + u64::from(d - b'0');
            if v > u64::from(u32::MAX) {
                return Err((start, RegexError::AsnTooLarge));
            }
            self.pos += 1;
        }
        Ok((self.pos > start).then_some(v as u32))
    }

    /// `<lo-hi>`.
    fn range(&mut self) -> PResult<Atom> {
        let start = self.pos;
        self.pos += 1;
        let lo = self.number()?;
        let dash = self.peek() == Some(b'-');
        self.pos += usize::from(dash);
        let hi = self.number()?;
        let close = self.peek() == Some(b'>');
        self.pos += usize::from(close);
        match (lo, dash, hi, close) {
            (Some(lo), true, Some(hi), true) if lo <= hi => Ok(Atom::Range(lo, hi)),
            _ => Err((start, RegexError::BadRange)),
        }
    }

    /// `[0-9]`, `[^0]`, `[135]`: a set of digits.
    fn class(&mut self) -> PResult<u16> {
        let start = self.pos;
        self.pos += 1;
        let neg = self.peek() == Some(b'^');
        self.pos += usize::from(neg);
        let mut m = 0u16;
        loop {
            match self.peek() {
                Some(b']') => {
                    self.pos += 1;
                    break;
                }
                Some(a @ b'0'..=b'9') => {
                    self.pos += 1;
                    let mut hi = a;
                    if self.peek() == Some(b'-') {
                        match self.peek2() {
                            Some(h @ b'0'..=b'9') if h >= a => hi = h,
                            _ => return Err((start, RegexError::BadClass)),
                        }
                        self.pos += 2;
                    }
                    for d in a..=hi {
                        m |= 1 << (d - b'0');
                    }
                }
                _ => return Err((start, RegexError::BadClass)),
            }
        }
        if neg {
            m = !m & 0x3ff;
        }
        if m == 0 {
            return Err((start, RegexError::BadClass));
        }
        Ok(m)
    }

    /// A run of digits, classes and `.` (any digit), each with an optional
    /// digit-level quantifier, tested against one ASN's decimal form.
    fn run(&mut self) -> PResult<Atom> {
        let start = self.pos;
        let mut items: Vec<(u16, Option<Rep>)> = Vec::new();
        loop {
            let m = match self.peek() {
                Some(d @ b'0'..=b'9') => {
                    self.pos += 1;
                    1u16 << (d - b'0')
                }
                Some(b'[') => self.class()?,
                Some(b'.') => {
                    self.pos += 1;
                    0x3ff
                }
                _ => break,
            };
            let q = match self.peek() {
                Some(b'*') => Some(Rep::Star),
                Some(b'+') => Some(Rep::Plus),
                Some(b'?') => Some(Rep::Opt),
                _ => None,
            };
            self.pos += usize::from(q.is_some());
            items.push((m, q));
        }
        // A plain number: compare as an integer.
        if items
            .iter()
            .all(|(m, q)| q.is_none() && m.count_ones() == 1)
        {
            let mut v: u64 = 0;
            for (m, _) in &items {
                v = v * 10 + u64::from(m.trailing_zeros());
                if v > u64::from(u32::MAX) {
                    return Err((start, RegexError::AsnTooLarge));
                }
            }
            return Ok(Atom::Exact(v as u32));
        }
        // `[0-9]+`, `.*` and the like: any ASN.
        if let [(0x3ff, Some(Rep::Plus | Rep::Star))] = items.as_slice() {
            return Ok(Atom::Any);
        }
        let mut p = DigitPat {
            masks: Vec::new(),
            star: 0,
            skip: 0,
        };
        for (m, q) in items {
            if matches!(q, Some(Rep::Plus)) {
                p.masks.push(m);
            }
            let i = p.masks.len();
            if i >= MAX_DIGIT_ITEMS {
                return Err((start, RegexError::TooComplex));
            }
            p.masks.push(m);
            match q {
                Some(Rep::Star | Rep::Plus) => {
                    p.star |= 1 << i;
                    p.skip |= 1 << i;
                }
                Some(Rep::Opt) => p.skip |= 1 << i,
                None => {}
            }
        }
        Ok(Atom::Digits(p))
    }
}
