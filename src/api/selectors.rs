//! Label and field selectors: parsers for the full grammar of apimachinery pkg/labels
//! (`k=v`, `k==v`, `k!=v`, `k in (a,b)`, `k notin (a,b)`, `k`, `!k`, `k>1`, `k<1`) and
//! pkg/fields (`f=v`, `f==v`, `f!=v`, backslash escapes), plus matching.
//! May use: nothing internal.

use std::collections::BTreeMap;

/// One label requirement operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LabelOp {
    /// `=` or `==`.
    Equals,
    /// `!=`.
    NotEquals,
    /// `in (...)`.
    In,
    /// `notin (...)`.
    NotIn,
    /// bare key.
    Exists,
    /// `!key`.
    DoesNotExist,
    /// `>`.
    GreaterThan,
    /// `<`.
    LessThan,
}

/// One requirement of a label selector.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Requirement {
    /// Label key.
    pub key: String,
    /// Operator.
    pub op: LabelOp,
    /// Values (one for =, !=, >, <; any number for in/notin; none for exists).
    pub values: Vec<String>,
}

/// A parsed label selector: requirements ANDed. Empty matches everything.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct LabelSelector {
    /// The requirements.
    pub requirements: Vec<Requirement>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Token {
    Ident(String),
    Not,
    NotEquals,
    Equals,
    DoubleEquals,
    In,
    NotIn,
    Open,
    Close,
    Comma,
    Greater,
    Less,
    End,
}

impl Token {
    fn text(&self) -> String {
        match self {
            Token::Ident(s) => s.clone(),
            Token::Not => "!".into(),
            Token::NotEquals => "!=".into(),
            Token::Equals => "=".into(),
            Token::DoubleEquals => "==".into(),
            Token::In => "in".into(),
            Token::NotIn => "notin".into(),
            Token::Open => "(".into(),
            Token::Close => ")".into(),
            Token::Comma => ",".into(),
            Token::Greater => ">".into(),
            Token::Less => "<".into(),
            Token::End => "".into(),
        }
    }
}

fn is_special(c: char) -> bool {
    matches!(c, '!' | '=' | '(' | ')' | ',' | '>' | '<')
}

fn lex(s: &str) -> Vec<Token> {
    let chars: Vec<char> = s.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c.is_whitespace() {
            i += 1;
        } else if is_special(c) {
            let next = chars.get(i + 1).copied();
            let (tok, len) = match (c, next) {
                ('!', Some('=')) => (Token::NotEquals, 2),
                ('=', Some('=')) => (Token::DoubleEquals, 2),
                ('!', _) => (Token::Not, 1),
                ('=', _) => (Token::Equals, 1),
                ('(', _) => (Token::Open, 1),
                (')', _) => (Token::Close, 1),
                (',', _) => (Token::Comma, 1),
                ('>', _) => (Token::Greater, 1),
                _ => (Token::Less, 1),
            };
            out.push(tok);
            i += len;
        } else {
            let start = i;
            while i < chars.len() && !chars[i].is_whitespace() && !is_special(chars[i]) {
                i += 1;
            }
            let word: String = chars[start..i].iter().collect();
            out.push(match word.as_str() {
                "in" => Token::In,
                "notin" => Token::NotIn,
                _ => Token::Ident(word),
            });
        }
    }
    out.push(Token::End);
    out
}

struct Parser {
    tokens: Vec<Token>,
    pos: usize,
}

impl Parser {
    fn peek(&self) -> &Token {
        self.tokens.get(self.pos).unwrap_or(&Token::End)
    }
    fn next(&mut self) -> Token {
        let t = self.peek().clone();
        self.pos += 1;
        t
    }
    /// Keywords are identifiers in key/value position (as in k8s's lexer + parser).
    fn ident_like(t: &Token) -> Option<String> {
        match t {
            Token::Ident(s) => Some(s.clone()),
            Token::In => Some("in".into()),
            Token::NotIn => Some("notin".into()),
            _ => None,
        }
    }

    fn requirement(&mut self) -> Result<Requirement, String> {
        let mut negated = false;
        if *self.peek() == Token::Not {
            self.next();
            negated = true;
        }
        let tok = self.next();
        let key = Self::ident_like(&tok)
            .ok_or_else(|| format!("found '{}', expected: identifier", tok.text()))?;
        validate_label_key(&key).map_err(|e| format!("unable to parse requirement: {e}"))?;
        if matches!(self.peek(), Token::End | Token::Comma) {
            let op = if negated {
                LabelOp::DoesNotExist
            } else {
                LabelOp::Exists
            };
            return Ok(Requirement {
                key,
                op,
                values: vec![],
            });
        }
        if negated {
            return Err(format!(
                "found '{}', expected: ',' or 'end of string'",
                self.peek().text()
            ));
        }
        let op_tok = self.next();
        let op = match op_tok {
            Token::Equals | Token::DoubleEquals => LabelOp::Equals,
            Token::NotEquals => LabelOp::NotEquals,
            Token::In => LabelOp::In,
            Token::NotIn => LabelOp::NotIn,
            Token::Greater => LabelOp::GreaterThan,
            Token::Less => LabelOp::LessThan,
            other => {
                return Err(format!(
                    "found '{}', expected: '=', '!=', '==', 'in', notin'",
                    other.text()
                ))
            }
        };
        let values = match op {
            LabelOp::In | LabelOp::NotIn => self.value_set()?,
            _ => vec![self.exact_value()?],
        };
        for v in &values {
            validate_label_value(v).map_err(|e| format!("unable to parse requirement: {e}"))?;
        }
        if matches!(op, LabelOp::GreaterThan | LabelOp::LessThan)
            && values[0].parse::<i64>().is_err()
        {
            return Err(format!(
                "unable to parse requirement: for 'Gt', 'Lt' operators, the value must be an integer: {}",
                values[0]
            ));
        }
        Ok(Requirement { key, op, values })
    }

    fn exact_value(&mut self) -> Result<String, String> {
        match self.peek() {
            Token::End | Token::Comma => Ok(String::new()),
            t => match Self::ident_like(t) {
                Some(v) => {
                    self.next();
                    Ok(v)
                }
                None => Err(format!("found '{}', expected: identifier", t.text())),
            },
        }
    }

    fn value_set(&mut self) -> Result<Vec<String>, String> {
        let open = self.next();
        if open != Token::Open {
            return Err(format!("found '{}', expected: '('", open.text()));
        }
        let mut values = Vec::new();
        let mut expect_value = true;
        loop {
            let t = self.next();
            match t {
                Token::Close => {
                    if expect_value && !values.is_empty() {
                        values.push(String::new());
                    }
                    return Ok(values);
                }
                Token::Comma => {
                    if expect_value {
                        values.push(String::new());
                    }
                    expect_value = true;
                }
                ref other => match Self::ident_like(other) {
                    Some(v) if expect_value => {
                        values.push(v);
                        expect_value = false;
                    }
                    _ => {
                        return Err(format!(
                            "found '{}', expected: ',', ')' or identifier",
                            other.text()
                        ))
                    }
                },
            }
        }
    }
}

impl LabelSelector {
    /// Parses a label selector string (labels.Parse). Errors carry kube's parser messages.
    pub(crate) fn parse(s: &str) -> Result<Self, String> {
        let mut p = Parser {
            tokens: lex(s),
            pos: 0,
        };
        let mut requirements = Vec::new();
        if *p.peek() == Token::End {
            return Ok(LabelSelector::default());
        }
        loop {
            requirements.push(p.requirement()?);
            match p.next() {
                Token::End => break,
                Token::Comma => {
                    if *p.peek() == Token::End {
                        return Err("found '', expected: identifier after ','".into());
                    }
                }
                other => {
                    return Err(format!(
                        "found '{}', expected: ',' or 'end of string'",
                        other.text()
                    ))
                }
            }
        }
        Ok(LabelSelector { requirements })
    }

    /// Whether the selector is empty (matches everything).
    pub(crate) fn is_empty(&self) -> bool {
        self.requirements.is_empty()
    }

    /// Whether a label set satisfies every requirement.
    pub(crate) fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        self.requirements.iter().all(|r| {
            let v = labels.get(&r.key);
            match r.op {
                LabelOp::Equals => v == r.values.first(),
                LabelOp::NotEquals => v != r.values.first(),
                LabelOp::In => v.is_some_and(|v| r.values.contains(v)),
                LabelOp::NotIn => v.is_none_or(|v| !r.values.contains(v)),
                LabelOp::Exists => v.is_some(),
                LabelOp::DoesNotExist => v.is_none(),
                LabelOp::GreaterThan | LabelOp::LessThan => {
                    let (Some(have), Some(want)) = (
                        v.and_then(|v| v.parse::<i64>().ok()),
                        r.values.first().and_then(|w| w.parse::<i64>().ok()),
                    ) else {
                        return false;
                    };
                    if r.op == LabelOp::GreaterThan {
                        have > want
                    } else {
                        have < want
                    }
                }
            }
        })
    }
}

/// Validates a label key (qualified name with optional DNS-subdomain prefix).
pub(crate) fn validate_label_key(key: &str) -> Result<(), String> {
    let errs = qualified_name_errors(key);
    if errs.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "key: Invalid value: {:?}: {}",
            key,
            errs.join("; ")
        ))
    }
}

/// Validates a label value.
pub(crate) fn validate_label_value(v: &str) -> Result<(), String> {
    let errs = label_value_errors(v);
    if errs.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "values[0]: Invalid value: {:?}: {}",
            v,
            errs.join("; ")
        ))
    }
}

const QUALIFIED_NAME_MSG: &str = "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
const LABEL_VALUE_MSG: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";

fn is_name_part(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b[0].is_ascii_alphanumeric()
        && b[b.len() - 1].is_ascii_alphanumeric()
        && b.iter()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
}

/// Whether `s` is a DNS-1123 subdomain (lowercase, dots, ≤253).
pub(crate) fn is_dns1123_subdomain(s: &str) -> bool {
    s.len() <= 253 && !s.is_empty() && s.split('.').all(is_dns1123_label)
}

/// Whether `s` is a DNS-1123 label (lowercase alphanumerics and '-', ≤63).
pub(crate) fn is_dns1123_label(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b.len() <= 63
        && b[0].is_ascii_alphanumeric()
        && b[b.len() - 1].is_ascii_alphanumeric()
        && b.iter()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
}

/// The problems of a qualified name (IsQualifiedName in k8s), empty when valid.
pub(crate) fn qualified_name_errors(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    let parts: Vec<&str> = value.split('/').collect();
    let name = match parts.as_slice() {
        [name] => *name,
        [prefix, name] => {
            if prefix.is_empty() {
                errs.push("prefix part must be non-empty".to_string());
            } else if !is_dns1123_subdomain(prefix) {
                errs.push(format!("prefix part {DNS1123_SUBDOMAIN_MSG}"));
            }
            name
        }
        _ => {
            errs.push(format!(
                "a qualified name {} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
                &QUALIFIED_NAME_MSG["name part ".len()..]
            ));
            return errs;
        }
    };
    if name.is_empty() {
        errs.push("name part must be non-empty".into());
    } else if name.len() > 63 {
        errs.push("name part must be no more than 63 characters".into());
    }
    if !name.is_empty() && !is_name_part(name) {
        errs.push(QUALIFIED_NAME_MSG.into());
    }
    errs
}

/// The problems of a label value, empty when valid.
pub(crate) fn label_value_errors(v: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if v.len() > 63 {
        errs.push("must be no more than 63 characters".into());
    }
    if !v.is_empty() && !is_name_part(v) {
        errs.push(LABEL_VALUE_MSG.into());
    }
    errs
}

/// Message of IsDNS1123Subdomain.
pub(crate) const DNS1123_SUBDOMAIN_MSG: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
/// Message of IsDNS1123Label.
pub(crate) const DNS1123_LABEL_MSG: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";

/// One field requirement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FieldRequirement {
    /// Field, e.g. `metadata.name`.
    pub field: String,
    /// `true` for `!=`.
    pub negated: bool,
    /// Unescaped value.
    pub value: String,
}

/// A parsed field selector: requirements ANDed.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct FieldSelector {
    /// The requirements.
    pub requirements: Vec<FieldRequirement>,
}

impl FieldSelector {
    /// Parses a field selector (fields.ParseSelector).
    pub(crate) fn parse(s: &str) -> Result<Self, String> {
        let mut requirements = Vec::new();
        if s.trim().is_empty() {
            return Ok(FieldSelector::default());
        }
        for term in split_unescaped(s, ',') {
            if term.is_empty() {
                continue;
            }
            let (field, negated, raw) = split_term(&term)
                .ok_or_else(|| format!("invalid selector: '{s}'; can't understand '{term}'"))?;
            let value = unescape(raw).map_err(|e| format!("invalid selector: '{s}'; {e}"))?;
            requirements.push(FieldRequirement {
                field: field.trim().to_string(),
                negated,
                value,
            });
        }
        Ok(FieldSelector { requirements })
    }

    /// Whether the selector is empty.
    pub(crate) fn is_empty(&self) -> bool {
        self.requirements.is_empty()
    }

    /// Whether an object's field values (looked up by `get`) satisfy every requirement.
    pub(crate) fn matches(&self, get: impl Fn(&str) -> Option<String>) -> bool {
        self.requirements.iter().all(|r| {
            let v = get(&r.field).unwrap_or_default();
            (v == r.value) != r.negated
        })
    }

    /// The value of a positive `field=value` requirement, if any.
    pub(crate) fn exact(&self, field: &str) -> Option<&str> {
        self.requirements
            .iter()
            .find(|r| r.field == field && !r.negated)
            .map(|r| r.value.as_str())
    }
}

fn split_unescaped(s: &str, sep: char) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut escaped = false;
    for c in s.chars() {
        if escaped {
            cur.push('\\');
            cur.push(c);
            escaped = false;
        } else if c == '\\' {
            escaped = true;
        } else if c == sep {
            out.push(std::mem::take(&mut cur));
        } else {
            cur.push(c);
        }
    }
    if escaped {
        cur.push('\\');
    }
    out.push(cur);
    out
}

/// Splits `f!=v`, `f==v` or `f=v` at the first unescaped operator.
fn split_term(term: &str) -> Option<(&str, bool, &str)> {
    let b = term.as_bytes();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'\\' => i += 2,
            b'!' if b.get(i + 1) == Some(&b'=') => return Some((&term[..i], true, &term[i + 2..])),
            b'=' if b.get(i + 1) == Some(&b'=') => {
                return Some((&term[..i], false, &term[i + 2..]))
            }
            b'=' => return Some((&term[..i], false, &term[i + 1..])),
            _ => i += 1,
        }
    }
    None
}

fn unescape(s: &str) -> Result<String, String> {
    let mut out = String::new();
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            match chars.next() {
                Some(e @ ('\\' | ',' | '=')) => out.push(e),
                Some(e) => return Err(format!("invalid escape sequence: \\{e}")),
                None => return Err("unterminated escape sequence".into()),
            }
        } else if c == ',' || c == '=' {
            return Err(format!("unescaped {c} in value"));
        } else {
            out.push(c);
        }
    }
    Ok(out)
}

#[cfg(test)]
#[path = "selectors_tests.rs"]
mod tests;
