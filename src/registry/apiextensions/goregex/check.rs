//! Whether a `pattern` compiles as a Go regular expression (RE2 syntax with Perl extensions,
//! what `regexp.Compile` accepts), and if not, Go's error text, e.g.
//! ``error parsing regexp: invalid or unsupported Perl syntax: `(?=` ``. A port of the parser of
//! Go's regexp/syntax that keeps only what decides errors: the stack of groups and operands,
//! the repetition rules and the escape, class and flag syntax. Not ported: the size limits
//! ("expression too large", "expression nests too deeply") and the check of `\p{Name}` names
//! against Go's Unicode tables (any well-formed name is accepted).

/// A parse stack entry: an operand (with the largest product of nested `{n,m}` counts below
/// it, for Go's repeatIsValid) or one of the pseudo-operators `(` and `|`.
#[derive(Clone, Copy, PartialEq)]
enum Item {
    Operand(u64),
    LeftParen,
    VerticalBar,
}

const MAX_REPEAT: u64 = 1000;

struct Error {
    code: &'static str,
    expr: String,
}

impl Error {
    fn new(code: &'static str, expr: &str) -> Self {
        Error {
            code,
            expr: expr.to_string(),
        }
    }
}

type Result<T> = std::result::Result<T, Error>;

/// Checks `re`; the error is Go's message.
pub(crate) fn check(re: &str) -> std::result::Result<(), String> {
    Parser {
        stack: Vec::new(),
        whole: re,
    }
    .parse()
    .map_err(|e| format!("error parsing regexp: {}: `{}`", e.code, e.expr))
}

struct Parser<'a> {
    stack: Vec<Item>,
    whole: &'a str,
}

/// The part of `before` that `after` does not cover.
fn consumed<'a>(before: &'a str, after: &str) -> &'a str {
    &before[..before.len() - after.len()]
}

fn first_char(s: &str) -> Option<(char, &str)> {
    let c = s.chars().next()?;
    Some((c, &s[c.len_utf8()..]))
}

impl<'a> Parser<'a> {
    fn push(&mut self, p: u64) {
        self.stack.push(Item::Operand(p));
    }

    fn parse(mut self) -> Result<()> {
        let mut t = self.whole;
        let mut last_repeat = "";
        while !t.is_empty() {
            let mut repeat = "";
            let b = t.as_bytes()[0];
            match b {
                b'(' if t.len() >= 2 && t.as_bytes()[1] == b'?' => t = self.perl_flags(t)?,
                b'(' => {
                    self.stack.push(Item::LeftParen);
                    t = &t[1..];
                }
                b'|' => {
                    self.concat();
                    if !self.swap_vertical_bar() {
                        self.stack.push(Item::VerticalBar);
                    }
                    t = &t[1..];
                }
                b')' => {
                    self.right_paren()?;
                    t = &t[1..];
                }
                b'^' | b'$' | b'.' => {
                    self.push(1);
                    t = &t[1..];
                }
                b'[' => t = self.class(t)?,
                b'*' | b'+' | b'?' => {
                    let before = t;
                    t = self.repeat(None, before, &t[1..], last_repeat)?;
                    repeat = before;
                }
                b'{' => {
                    let before = t;
                    match parse_repeat(t) {
                        None => {
                            self.push(1);
                            t = &t[1..];
                        }
                        Some((min, max, after)) => {
                            if !(0..=1000).contains(&min) || max > 1000 || (max >= 0 && min > max) {
                                return Err(Error::new(
                                    "invalid repeat count",
                                    consumed(before, after),
                                ));
                            }
                            t = self.repeat(Some((min, max)), before, after, last_repeat)?;
                            repeat = before;
                        }
                    }
                }
                b'\\' => t = self.backslash(t)?,
                _ => {
                    t = first_char(t).map_or("", |(_, rest)| rest);
                    self.push(1);
                }
            }
            last_repeat = repeat;
        }
        self.concat();
        if self.swap_vertical_bar() {
            self.stack.pop();
        }
        self.alternate();
        if self.stack.len() != 1 {
            return Err(Error::new("missing closing )", self.whole));
        }
        Ok(())
    }

    fn backslash(&mut self, t: &'a str) -> Result<&'a str> {
        if let Some(&c) = t.as_bytes().get(1) {
            match c {
                b'A' | b'b' | b'B' | b'z' => {
                    self.push(1);
                    return Ok(&t[2..]);
                }
                b'C' => return Err(Error::new("invalid escape sequence", &t[..2])),
                b'Q' => {
                    let rest = &t[2..];
                    let (lit, after) = rest.split_once("\\E").unwrap_or((rest, ""));
                    for _ in lit.chars() {
                        self.push(1);
                    }
                    return Ok(after);
                }
                _ => {}
            }
        }
        if let Some(rest) = unicode_class(t)? {
            self.push(1);
            return Ok(rest);
        }
        if let Some(rest) = perl_class(t) {
            self.push(1);
            return Ok(rest);
        }
        let (_, rest) = escape(t)?;
        self.push(1);
        Ok(rest)
    }

    /// `*`, `+`, `?` (counts `None`) or `{min,max}` applied to the top operand.
    fn repeat(
        &mut self,
        counts: Option<(i64, i64)>,
        before: &'a str,
        after: &'a str,
        last_repeat: &str,
    ) -> Result<&'a str> {
        let after = after.strip_prefix('?').unwrap_or(after);
        if !last_repeat.is_empty() {
            return Err(Error::new(
                "invalid nested repetition operator",
                consumed(last_repeat, after),
            ));
        }
        let Some(Item::Operand(sub)) = self.stack.last().copied() else {
            return Err(Error::new(
                "missing argument to repetition operator",
                consumed(before, after),
            ));
        };
        let Some((min, max)) = counts else {
            return Ok(after);
        };
        // repeatIsValid: the product of nested counts along any path stays within 1000.
        let p = if max == 0 {
            1
        } else {
            let m = if max < 0 { min } else { max };
            (m.max(1) as u64).saturating_mul(sub)
        };
        if let Some(top) = self.stack.last_mut() {
            *top = Item::Operand(p);
        }
        if (min >= 2 || max >= 2) && p > MAX_REPEAT {
            return Err(Error::new("invalid repeat count", consumed(before, after)));
        }
        Ok(after)
    }

    /// Pops the operands above the topmost pseudo-operator; their largest repeat product.
    fn pop_operands(&mut self) -> Option<u64> {
        let mut p = None;
        while let Some(Item::Operand(x)) = self.stack.last().copied() {
            self.stack.pop();
            p = Some(p.map_or(x, |q: u64| q.max(x)));
        }
        p
    }

    fn concat(&mut self) {
        let p = self.pop_operands().unwrap_or(1);
        self.push(p);
    }

    fn alternate(&mut self) {
        let p = self.pop_operands().unwrap_or(1);
        self.push(p);
    }

    fn swap_vertical_bar(&mut self) -> bool {
        let n = self.stack.len();
        if n >= 2 && self.stack[n - 2] == Item::VerticalBar {
            self.stack.swap(n - 1, n - 2);
            return true;
        }
        false
    }

    fn right_paren(&mut self) -> Result<()> {
        self.concat();
        if self.swap_vertical_bar() {
            self.stack.pop();
        }
        self.alternate();
        let n = self.stack.len();
        if n < 2 || self.stack[n - 2] != Item::LeftParen {
            return Err(Error::new("unexpected )", self.whole));
        }
        let top = self.stack.pop();
        self.stack.pop();
        if let Some(Item::Operand(p)) = top {
            self.push(p);
        }
        Ok(())
    }

    /// parsePerlFlags: `(?P<name>`, `(?<name>`, `(?flags)` and `(?flags:`.
    fn perl_flags(&mut self, s: &'a str) -> Result<&'a str> {
        let b = s.as_bytes();
        let with_p = s.len() > 4 && b[2] == b'P' && b[3] == b'<';
        let with_name = s.len() > 3 && b[2] == b'<';
        if with_p || with_name {
            let start = if with_p { 4 } else { 3 };
            let Some(end) = s.find('>') else {
                return Err(Error::new("invalid named capture", s));
            };
            let name = &s[start..end];
            if name.is_empty() || !name.chars().all(|c| c == '_' || c.is_ascii_alphanumeric()) {
                return Err(Error::new("invalid named capture", &s[..=end]));
            }
            self.stack.push(Item::LeftParen);
            return Ok(&s[end + 1..]);
        }
        let mut t = &s[2..];
        let mut negated = false;
        let mut saw_flag = false;
        while let Some((c, rest)) = first_char(t) {
            t = rest;
            match c {
                'i' | 'm' | 's' | 'U' => saw_flag = true,
                '-' if !negated => {
                    negated = true;
                    saw_flag = false;
                }
                ':' | ')' if !negated || saw_flag => {
                    if c == ':' {
                        self.stack.push(Item::LeftParen);
                    }
                    return Ok(t);
                }
                _ => break,
            }
        }
        Err(Error::new(
            "invalid or unsupported Perl syntax",
            consumed(s, t),
        ))
    }

    /// parseClass: `[...]`.
    fn class(&mut self, s: &'a str) -> Result<&'a str> {
        let mut t = &s[1..];
        if t.starts_with('^') {
            t = &t[1..];
        }
        let mut first = true;
        while t.is_empty() || !t.starts_with(']') || first {
            first = false;
            if t.len() > 2 && t.starts_with("[:") {
                if let Some(rest) = named_class(t)? {
                    t = rest;
                    continue;
                }
            }
            if let Some(rest) = unicode_class(t)? {
                t = rest;
                continue;
            }
            if let Some(rest) = perl_class(t) {
                t = rest;
                continue;
            }
            let range = t;
            let (lo, rest) = class_char(t, s)?;
            t = rest;
            if t.len() >= 2 && t.starts_with('-') && !t[1..].starts_with(']') {
                let (hi, rest) = class_char(&t[1..], s)?;
                t = rest;
                if hi < lo {
                    return Err(Error::new(
                        "invalid character class range",
                        consumed(range, t),
                    ));
                }
            }
        }
        self.push(1);
        Ok(&t[1..])
    }
}

/// parseRepeat: `{min}`, `{min,}` or `{min,max}`; `None` when `{` is a literal. Counts over
/// 10^8 come back as -1, like Go.
fn parse_repeat(s: &str) -> Option<(i64, i64, &str)> {
    let s = s.strip_prefix('{')?;
    let (mut min, s) = parse_int(s)?;
    let (max, s) = match s.strip_prefix(',') {
        None => {
            if s.is_empty() {
                return None;
            }
            (min, s)
        }
        Some(s) if s.starts_with('}') => (-1, s),
        Some(s) => {
            let (max, s) = parse_int(s)?;
            if max < 0 {
                min = -1;
            }
            (max, s)
        }
    };
    let rest = s.strip_prefix('}')?;
    Some((min, max, rest))
}

fn parse_int(s: &str) -> Option<(i64, &str)> {
    let digits = s.bytes().take_while(u8::is_ascii_digit).count();
    if digits == 0 || (digits >= 2 && s.starts_with('0')) {
        return None;
    }
    let mut n: i64 = 0;
    for d in s[..digits].bytes() {
        if n >= 100_000_000 {
            n = -1;
            break;
        }
        n = n * 10 + i64::from(d - b'0');
    }
    Some((n, &s[digits..]))
}

/// parsePerlClassEscape: `\d`, `\D`, `\s`, `\S`, `\w`, `\W`.
fn perl_class(s: &str) -> Option<&str> {
    let b = s.as_bytes();
    (b.len() >= 2 && b[0] == b'\\' && b"dDsSwW".contains(&b[1])).then(|| &s[2..])
}

/// parseNamedClass: `[:alpha:]`, `[:^alpha:]`...
fn named_class(s: &str) -> Result<Option<&str>> {
    const NAMES: [&str; 14] = [
        "alnum", "alpha", "ascii", "blank", "cntrl", "digit", "graph", "lower", "print", "punct",
        "space", "upper", "word", "xdigit",
    ];
    let Some(i) = s[2..].find(":]") else {
        return Ok(None);
    };
    let name = &s[..i + 4];
    let bare = &name[2..name.len() - 2];
    if NAMES.contains(&bare.strip_prefix('^').unwrap_or(bare)) {
        Ok(Some(&s[i + 4..]))
    } else {
        Err(Error::new("invalid character class range", name))
    }
}

/// parseUnicodeClass: `\pL`, `\p{Greek}`, `\P{^Lu}`.
fn unicode_class(s: &str) -> Result<Option<&str>> {
    let b = s.as_bytes();
    if b.len() < 2 || b[0] != b'\\' || (b[1] != b'p' && b[1] != b'P') {
        return Ok(None);
    }
    let t = &s[2..];
    let (seq, name, rest) = match first_char(t) {
        Some(('{', _)) => {
            let Some(end) = s.find('}') else {
                return Err(Error::new("invalid character class range", s));
            };
            (&s[..=end], &s[3..end], &s[end + 1..])
        }
        Some((_, rest)) => {
            let seq = consumed(s, rest);
            (seq, &seq[2..], rest)
        }
        None => (s, "", ""),
    };
    let name = name.strip_prefix('^').unwrap_or(name);
    let known = name.starts_with(|c: char| c.is_ascii_alphabetic())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | ' '));
    if !known {
        return Err(Error::new("invalid character class range", seq));
    }
    Ok(Some(rest))
}

/// parseClassChar: a character (or escape) inside a class.
fn class_char<'s>(s: &'s str, whole_class: &str) -> Result<(char, &'s str)> {
    if s.is_empty() {
        return Err(Error::new("missing closing ]", whole_class));
    }
    if s.starts_with('\\') {
        return escape(s);
    }
    first_char(s).ok_or_else(|| Error::new("missing closing ]", whole_class))
}

fn unhex(c: char) -> Option<u32> {
    c.to_digit(16)
}

/// parseEscape: a single-character escape at the start of `s` (which starts with `\`).
fn escape(s: &str) -> Result<(char, &str)> {
    let t = &s[1..];
    let Some((c, mut t)) = first_char(t) else {
        return Err(Error::new("trailing backslash at end of expression", ""));
    };
    let invalid = |t: &str| Error::new("invalid escape sequence", consumed(s, t));
    match c {
        '1'..='7' if !t.starts_with(|d: char| ('0'..='7').contains(&d)) => Err(invalid(t)),
        '0'..='7' => {
            let mut r = c as u32 - '0' as u32;
            for _ in 1..3 {
                match t.as_bytes().first() {
                    Some(d @ b'0'..=b'7') => {
                        r = r * 8 + u32::from(d - b'0');
                        t = &t[1..];
                    }
                    _ => break,
                }
            }
            Ok((char::from_u32(r).unwrap_or('\0'), t))
        }
        'x' => {
            let Some((c, rest)) = first_char(t) else {
                return Err(invalid(t));
            };
            t = rest;
            if c == '{' {
                let mut r: u32 = 0;
                let mut nhex = 0;
                loop {
                    let Some((c, rest)) = first_char(t) else {
                        return Err(invalid(t));
                    };
                    t = rest;
                    if c == '}' {
                        break;
                    }
                    let Some(v) = unhex(c) else {
                        return Err(invalid(t));
                    };
                    r = r * 16 + v;
                    if r > 0x10FFFF {
                        return Err(invalid(t));
                    }
                    nhex += 1;
                }
                if nhex == 0 {
                    return Err(invalid(t));
                }
                return Ok((char::from_u32(r).unwrap_or('\u{FFFD}'), t));
            }
            let x = unhex(c);
            let Some((c2, rest)) = first_char(t) else {
                // Go reads past the end as U+FFFD, which is no hex digit.
                return Err(invalid(t));
            };
            t = rest;
            match (x, unhex(c2)) {
                (Some(x), Some(y)) => Ok((char::from_u32(x * 16 + y).unwrap_or('\0'), t)),
                _ => Err(invalid(t)),
            }
        }
        'a' => Ok(('\u{7}', t)),
        'f' => Ok(('\u{c}', t)),
        'n' => Ok(('\n', t)),
        'r' => Ok(('\r', t)),
        't' => Ok(('\t', t)),
        'v' => Ok(('\u{b}', t)),
        c if c.is_ascii() && !c.is_ascii_alphanumeric() => Ok((c, t)),
        _ => Err(invalid(t)),
    }
}
