//! The configuration language: a small subset of Click's.
//!
//! ```text
//! // comments: // to end of line, or /* ... */
//! src :: FromDevice(eth0);           // declaration: NAME :: Class(args)
//! c   :: Classifier(12/0800, -);
//! src -> c;                          // connection, ports default to 0
//! c [1] -> Discard;                  // output port 1; anonymous element
//! c [0] -> CheckIpHeader -> [0] rt :: Ip4Lookup(ROUTE 0.0.0.0/0 0);
//! ```
//!
//! A statement is a chain `endpoint (-> endpoint)* ;`. An endpoint is
//! `[in] element [out]`, where the bracketed ports are optional (0), and
//! element is a declared name, `name :: Class(args)` (declared in place),
//! or `Class(args)` / `Class` (an anonymous element named `Class@N`, as in
//! Click). Arguments are split on top-level commas and kept as text with
//! their position; the element factory interprets them.
//!
//! Errors carry `file:line:col`.

use std::fmt;

/// A position in the source (1-based).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct Pos {
    /// Line, from 1.
    pub line: u32,
    /// Column in characters, from 1.
    pub col: u32,
}

/// A configuration error at a position.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigError {
    /// Source name (file name or `<string>`).
    pub file: String,
    /// Where.
    pub pos: Pos,
    /// What.
    pub msg: String,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}:{}:{}: {}",
            self.file, self.pos.line, self.pos.col, self.msg
        )
    }
}
impl std::error::Error for ConfigError {}

/// One argument of an element, as written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Arg {
    /// The text, trimmed.
    pub text: String,
    /// Where it starts.
    pub pos: Pos,
}

/// An element declaration.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Decl {
    /// Element name (generated `Class@N` for anonymous elements).
    pub name: String,
    /// Element class.
    pub class: String,
    /// Arguments.
    pub args: Vec<Arg>,
    /// Position of the class name.
    pub pos: Pos,
}

/// A connection `from [out] -> [in] to`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Conn {
    /// Upstream element name.
    pub from: String,
    /// Upstream output port.
    pub out: u16,
    /// Downstream element name.
    pub to: String,
    /// Downstream input port.
    pub input: u16,
    /// Position of the `->`.
    pub pos: Pos,
}

/// A parsed configuration.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Config {
    /// Declarations in source order.
    pub decls: Vec<Decl>,
    /// Connections in source order.
    pub conns: Vec<Conn>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Tok {
    Ident(String),
    Num(u32),
    Colons,
    Arrow,
    LBrack,
    RBrack,
    Semi,
    /// Raw argument text between balanced parentheses (without them).
    Args(String, Pos),
}

struct Lexer<'a> {
    chars: Vec<char>,
    i: usize,
    line: u32,
    col: u32,
    file: &'a str,
}

impl<'a> Lexer<'a> {
    fn err(&self, pos: Pos, msg: impl Into<String>) -> ConfigError {
        ConfigError {
            file: self.file.to_string(),
            pos,
            msg: msg.into(),
        }
    }
    fn pos(&self) -> Pos {
        Pos {
            line: self.line,
            col: self.col,
        }
    }
    fn peek(&self) -> Option<char> {
        self.chars.get(self.i).copied()
    }
    fn peek2(&self) -> Option<char> {
        self.chars.get(self.i + 1).copied()
    }
    fn bump(&mut self) -> Option<char> {
        let c = self.peek()?;
        self.i += 1;
        if c == '\n' {
            self.line += 1;
            self.col = 1;
        } else {
            self.col += 1;
        }
        Some(c)
    }
    fn skip_space(&mut self) -> Result<(), ConfigError> {
        loop {
            match (self.peek(), self.peek2()) {
                (Some(c), _) if c.is_whitespace() => {
                    self.bump();
                }
                (Some('/'), Some('/')) | (Some('#'), _) => {
                    while let Some(c) = self.peek() {
                        if c == '\n' {
                            break;
                        }
                        self.bump();
                    }
                }
                (Some('/'), Some('*')) => {
                    let start = self.pos();
                    self.bump();
                    self.bump();
                    loop {
                        match (self.peek(), self.peek2()) {
                            (Some('*'), Some('/')) => {
                                self.bump();
                                self.bump();
                                break;
                            }
                            (Some(_), _) => {
                                self.bump();
                            }
                            (None, _) => return Err(self.err(start, "unterminated comment")),
                        }
                    }
                }
                _ => return Ok(()),
            }
        }
    }
    fn next(&mut self) -> Result<Option<(Tok, Pos)>, ConfigError> {
        self.skip_space()?;
        let pos = self.pos();
        let Some(c) = self.peek() else {
            return Ok(None);
        };
        let tok = match c {
            ':' if self.peek2() == Some(':') => {
                self.bump();
                self.bump();
                Tok::Colons
            }
            '-' if self.peek2() == Some('>') => {
                self.bump();
                self.bump();
                Tok::Arrow
            }
            '[' => {
                self.bump();
                Tok::LBrack
            }
            ']' => {
                self.bump();
                Tok::RBrack
            }
            ';' => {
                self.bump();
                Tok::Semi
            }
            '(' => {
                self.bump();
                let apos = self.pos();
                let mut depth = 1u32;
                let mut s = String::new();
                loop {
                    match self.bump() {
                        None => return Err(self.err(pos, "unbalanced '('")),
                        Some('(') => {
                            depth += 1;
                            s.push('(');
                        }
                        Some(')') => {
                            depth -= 1;
                            if depth == 0 {
                                break;
                            }
                            s.push(')');
                        }
                        Some(c) => s.push(c),
                    }
                }
                Tok::Args(s, apos)
            }
            c if c.is_ascii_digit() => {
                let mut n: u32 = 0;
                while let Some(d) = self.peek().and_then(|c| c.to_digit(10)) {
                    n = n
                        .checked_mul(10)
                        .and_then(|n| n.checked_add(d))
                        .ok_or_else(|| self.err(pos, "number too large"))?;
                    self.bump();
                }
                Tok::Num(n)
            }
            c if c.is_alphabetic() || c == '_' => {
                let mut s = String::new();
                while let Some(c) = self.peek() {
                    let word = c.is_alphanumeric() || c == '_' || c == '@' || c == '.';
                    // '/' inside a name (Click allows `a/b`), not a comment.
                    let slash = c == '/' && self.peek2().is_some_and(|d| d.is_alphanumeric());
                    if word || slash {
                        s.push(c);
                        self.bump();
                    } else {
                        break;
                    }
                }
                Tok::Ident(s)
            }
            other => return Err(self.err(pos, format!("unexpected character '{other}'"))),
        };
        Ok(Some((tok, pos)))
    }
}

/// Splits raw argument text on top-level commas.
fn split_args(s: &str, start: Pos) -> Vec<Arg> {
    let mut out = Vec::new();
    let (mut line, mut col) = (start.line, start.col);
    let mut depth = 0u32;
    let mut cur = String::new();
    let mut cur_pos: Option<Pos> = None;
    for c in s.chars() {
        match c {
            ',' if depth == 0 => {
                out.push(Arg {
                    text: cur.trim().to_string(),
                    pos: cur_pos.unwrap_or(Pos { line, col }),
                });
                cur.clear();
                cur_pos = None;
            }
            _ => {
                if c == '(' {
                    depth += 1;
                } else if c == ')' {
                    depth = depth.saturating_sub(1);
                }
                if cur_pos.is_none() && !c.is_whitespace() {
                    cur_pos = Some(Pos { line, col });
                }
                cur.push(c);
            }
        }
        if c == '\n' {
            line += 1;
            col = 1;
        } else {
            col += 1;
        }
    }
    let last = cur.trim();
    if !last.is_empty() || !out.is_empty() {
        out.push(Arg {
            text: last.to_string(),
            pos: cur_pos.unwrap_or(Pos { line, col }),
        });
    }
    out
}

struct Parser<'a> {
    toks: Vec<(Tok, Pos)>,
    i: usize,
    file: &'a str,
    cfg: Config,
    anon: u32,
    end: Pos,
}

impl<'a> Parser<'a> {
    fn err(&self, pos: Pos, msg: impl Into<String>) -> ConfigError {
        ConfigError {
            file: self.file.to_string(),
            pos,
            msg: msg.into(),
        }
    }
    fn peek(&self) -> Option<&Tok> {
        self.toks.get(self.i).map(|t| &t.0)
    }
    fn pos(&self) -> Pos {
        self.toks.get(self.i).map(|t| t.1).unwrap_or(self.end)
    }
    fn next(&mut self) -> Option<(Tok, Pos)> {
        let t = self.toks.get(self.i).cloned();
        self.i += 1;
        t
    }
    fn port(&mut self) -> Result<Option<u16>, ConfigError> {
        if self.peek() != Some(&Tok::LBrack) {
            return Ok(None);
        }
        self.next();
        let pos = self.pos();
        let n = match self.next() {
            Some((Tok::Num(n), _)) => {
                u16::try_from(n).map_err(|_| self.err(pos, "port number too large"))?
            }
            _ => return Err(self.err(pos, "expected a port number")),
        };
        match self.next() {
            Some((Tok::RBrack, _)) => Ok(Some(n)),
            _ => Err(self.err(pos, "expected ']'")),
        }
    }
    fn declared(&self, name: &str) -> bool {
        self.cfg.decls.iter().any(|d| d.name == name)
    }
    /// element := NAME [:: CLASS [ARGS]] | CLASS [ARGS]
    fn element(&mut self) -> Result<String, ConfigError> {
        let pos = self.pos();
        let name = match self.next() {
            Some((Tok::Ident(s), _)) => s,
            _ => return Err(self.err(pos, "expected an element name or class")),
        };
        if self.peek() == Some(&Tok::Colons) {
            self.next();
            let cpos = self.pos();
            let class = match self.next() {
                Some((Tok::Ident(s), _)) => s,
                _ => return Err(self.err(cpos, "expected a class name after '::'")),
            };
            if self.declared(&name) {
                return Err(self.err(pos, format!("element '{name}' declared twice")));
            }
            let args = self.args();
            self.cfg.decls.push(Decl {
                name: name.clone(),
                class,
                args,
                pos: cpos,
            });
            return Ok(name);
        }
        let has_args = matches!(self.peek(), Some(Tok::Args(..)));
        if !has_args && self.declared(&name) {
            return Ok(name);
        }
        if has_args && self.declared(&name) {
            return Err(self.err(pos, format!("'{name}' is an element name, not a class")));
        }
        // Anonymous element of class `name`, numbered past any name
        // already declared (`Class@N` is also a legal explicit name).
        let anon = loop {
            self.anon += 1;
            let anon = format!("{name}@{}", self.anon);
            if !self.declared(&anon) {
                break anon;
            }
        };
        let args = self.args();
        self.cfg.decls.push(Decl {
            name: anon.clone(),
            class: name,
            args,
            pos,
        });
        Ok(anon)
    }
    fn args(&mut self) -> Vec<Arg> {
        if let Some(Tok::Args(s, p)) = self.peek().cloned() {
            self.next();
            return split_args(&s, p);
        }
        Vec::new()
    }
    fn statement(&mut self) -> Result<(), ConfigError> {
        let in0 = self.port()?;
        if in0.is_some() {
            return Err(self.err(self.pos(), "a chain cannot start with an input port"));
        }
        let mut prev = self.element()?;
        let mut prev_out = self.port()?;
        loop {
            let pos = self.pos();
            match self.next() {
                Some((Tok::Semi, _)) => {
                    if prev_out.is_some() {
                        return Err(self.err(pos, "output port with no connection"));
                    }
                    return Ok(());
                }
                Some((Tok::Arrow, _)) => {
                    let input = self.port()?.unwrap_or(0);
                    let next = self.element()?;
                    self.cfg.conns.push(Conn {
                        from: prev,
                        out: prev_out.unwrap_or(0),
                        to: next.clone(),
                        input,
                        pos,
                    });
                    prev = next;
                    prev_out = self.port()?;
                }
                None => return Err(self.err(pos, "expected ';' at end of statement")),
                Some(_) => return Err(self.err(pos, "expected '->' or ';'")),
            }
        }
    }
}

/// Parses configuration text. `file` names the source in errors.
pub fn parse(src: &str, file: &str) -> Result<Config, ConfigError> {
    let mut lx = Lexer {
        chars: src.chars().collect(),
        i: 0,
        line: 1,
        col: 1,
        file,
    };
    let mut toks = Vec::new();
    while let Some(t) = lx.next()? {
        toks.push(t);
    }
    let mut p = Parser {
        toks,
        i: 0,
        file,
        cfg: Config::default(),
        anon: 0,
        end: lx.pos(),
    };
    while p.peek().is_some() {
        if p.peek() == Some(&Tok::Semi) {
            p.next();
            continue;
        }
        p.statement()?;
    }
    Ok(p.cfg)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn declarations_chains_ports() {
        let src = "// router\nsrc :: FromDevice(eth0);\nc :: Classifier(12/0806, 12/0800, -);\n\
                   src -> c;\nc [1] -> Strip(14) -> [0] out :: Discard;\nc[2]->out; /* x */ c [0] -> Discard();\n";
        let cfg = parse(src, "t.click").unwrap();
        let names: Vec<_> = cfg
            .decls
            .iter()
            .map(|d| (d.name.as_str(), d.class.as_str()))
            .collect();
        assert_eq!(
            names,
            vec![
                ("src", "FromDevice"),
                ("c", "Classifier"),
                ("Strip@1", "Strip"),
                ("out", "Discard"),
                ("Discard@2", "Discard")
            ]
        );
        assert_eq!(cfg.decls[1].args.len(), 3);
        assert_eq!(cfg.decls[1].args[2].text, "-");
        assert_eq!(cfg.decls[1].args[1].pos, Pos { line: 3, col: 26 });
        let c: Vec<_> = cfg
            .conns
            .iter()
            .map(|c| (c.from.as_str(), c.out, c.to.as_str(), c.input))
            .collect();
        assert_eq!(
            c,
            vec![
                ("src", 0, "c", 0),
                ("c", 1, "Strip@1", 0),
                ("Strip@1", 0, "out", 0),
                ("c", 2, "out", 0),
                ("c", 0, "Discard@2", 0)
            ]
        );
    }

    #[test]
    fn errors_have_positions() {
        let e = parse("a :: X;\na :: Y;", "f").unwrap_err();
        assert_eq!(e.to_string(), "f:2:1: element 'a' declared twice");
        let e = parse("a :: X\nb :: Y;", "f").unwrap_err();
        assert_eq!((e.pos.line, e.pos.col), (2, 1));
        let e = parse("a :: X(1;", "f").unwrap_err();
        assert!(e.msg.contains("unbalanced"), "{e}");
        let e = parse("a :: X; a [x] -> a;", "f").unwrap_err();
        assert_eq!(e.pos.col, 12);
        let e = parse("a :: X; a [1];", "f").unwrap_err();
        assert!(e.msg.contains("output port"));
        let e = parse("/* open", "f").unwrap_err();
        assert_eq!(e.msg, "unterminated comment");
        let e = parse("a :: X; a -> ;", "f").unwrap_err();
        assert_eq!(e.pos, Pos { line: 1, col: 14 });
        let e = parse("a :: X; a(1) -> a;", "f").unwrap_err();
        assert!(e.msg.contains("not a class"));
        assert!(parse("a :: X; $", "f").is_err());
    }

    #[test]
    fn nested_args() {
        let cfg = parse("x :: E(a (b, c), d);", "f").unwrap();
        let a: Vec<_> = cfg.decls[0].args.iter().map(|a| a.text.as_str()).collect();
        assert_eq!(a, vec!["a (b, c)", "d"]);
        let cfg = parse("x :: E();", "f").unwrap();
        assert!(cfg.decls[0].args.is_empty());
    }

    #[test]
    fn anonymous_names_never_clash_with_declared_ones() {
        // `Discard@1` is a legal name; the first anonymous Discard must
        // not be given it too.
        let cfg = parse("Discard@1 :: Queue; Discard -> Discard@1;", "f").unwrap();
        let names: Vec<_> = cfg.decls.iter().map(|d| d.name.as_str()).collect();
        assert_eq!(names, vec!["Discard@1", "Discard@2"]);
        assert_eq!(cfg.conns[0].from, "Discard@2");
        assert_eq!(cfg.conns[0].to, "Discard@1");
        // Declared after the anonymous one took the name: an error.
        let e = parse("Discard -> q :: Queue; Discard@1 :: Queue;", "f").unwrap_err();
        assert_eq!(e.to_string(), "f:1:24: element 'Discard@1' declared twice");
    }
}
