//! Compile issues shown as cel-go shows them: `ERROR: <input>:<line>:<column>: <message>`, the
//! line, and a caret under the column, one issue per line group, in source order.

use std::collections::HashMap;

/// Which token of its expression an issue points at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Token {
    /// A select's `.` (or `.?`): an undefined field.
    Dot,
    /// An identifier's first character: an undeclared reference.
    Ident,
    /// An operator (its first character): a call no overload takes.
    Operator,
    /// A function call's `(`: a call no overload takes.
    Paren,
}

/// One issue: the expression node it is about, and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Issue {
    pub(crate) id: u64,
    pub(crate) message: String,
    pub(crate) token: Token,
}

/// Where each expression id starts in `source`: the parser keeps these only when parsing
/// fails, so `source` is parsed once more with a stray `)` after it, which the parser drops
/// (recovering the same tree, with the same ids) while reporting it.
pub(crate) fn offsets(source: &str) -> HashMap<u64, usize> {
    let with_error = format!("{source} )");
    let Err(errors) = kube_cel::cel::parser::Parser::new()
        .enable_optional_syntax(true)
        .parse(&with_error)
    else {
        return HashMap::new();
    };
    let Some(info) = errors.errors.iter().find_map(|e| e.source_info.clone()) else {
        return HashMap::new();
    };
    (0..4096u64)
        .filter_map(|id| info.offset_for(id).map(|(start, _)| (id, start as usize)))
        .collect()
}

/// cel-go's display of an issue at character `offset` of `source` (or with no location when
/// it is not known).
fn display(source: &str, offset: Option<usize>, message: &str) -> String {
    let Some(offset) = offset else {
        return format!("ERROR: <input>: {message}");
    };
    let before: Vec<char> = source.chars().take(offset).collect();
    let line = before.iter().filter(|&&c| c == '\n').count() + 1;
    let column = before.iter().rev().take_while(|&&c| c != '\n').count();
    at(source, line, column, message)
}

/// cel-go's `Error.ToDisplayString`: `ERROR: <input>:<line>:<column>: <message>`, the line
/// (tabs as spaces) and a caret under `column` (counted in characters from 0; a dot per
/// character before it, wide ones for wide characters).
pub(crate) fn at(source: &str, line: usize, column: usize, message: &str) -> String {
    let mut out = format!("ERROR: <input>:{line}:{}: {message}", column + 1);
    let Some(text) = line.checked_sub(1).and_then(|l| source.split('\n').nth(l)) else {
        return out;
    };
    let text = text.replace('\t', " ");
    out.push_str("\n | ");
    out.push_str(&text);
    out.push_str("\n | ");
    let mut chars = text.chars();
    for c in chars.by_ref().take(column) {
        out.push(if c.len_utf8() > 1 { '\u{FF0E}' } else { '.' });
    }
    out.push(match chars.next() {
        Some(c) if c.len_utf8() > 1 => '\u{FF3E}',
        _ => '^',
    });
    out
}

/// `issues` of `expression` in cel-go's text, joined by newlines (None when there are none).
pub(crate) fn render(expression: &str, issues: Vec<Issue>) -> Option<String> {
    if issues.is_empty() {
        return None;
    }
    let at = offsets(expression);
    let mut located: Vec<(Option<usize>, String)> = issues
        .into_iter()
        .map(|issue| {
            let offset = at.get(&issue.id).copied().filter(|&o| {
                let c = expression.chars().nth(o);
                match issue.token {
                    Token::Dot => c == Some('.'),
                    Token::Ident => c.is_some_and(|c| c.is_alphabetic() || c == '_'),
                    Token::Operator => c.is_some_and(|c| "+-*/%<>=!&|".contains(c)),
                    Token::Paren => c == Some('('),
                }
            });
            (offset, issue.message)
        })
        .collect();
    located.sort_by_key(|(o, _)| *o);
    located.dedup();
    Some(
        located
            .iter()
            .map(|(o, m)| display(expression, *o, m))
            .collect::<Vec<_>>()
            .join("\n"),
    )
}
