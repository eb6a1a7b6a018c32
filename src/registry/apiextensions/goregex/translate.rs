//! Go (RE2) regular expressions compiled with the regex crate. The syntax is nearly the same;
//! what differs is rewritten first: Go's `\d`, `\s`, `\w` and `\b` are ASCII-only (the regex
//! crate's are Unicode), Go takes `[` and `&&` inside a class literally, `\Q...\E` quotes,
//! `\123` is octal, and a `{` that does not start a repetition is a literal. May use: nothing
//! internal.

use regex::Regex;

/// `pattern` (Go syntax) as a compiled regex, or the compiler's error text.
pub(crate) fn compile(pattern: &str) -> Result<Regex, String> {
    Regex::new(&translate(pattern)).map_err(|e| e.to_string())
}

/// `pattern` rewritten from Go's syntax into the regex crate's.
pub(crate) fn translate(pattern: &str) -> String {
    let chars: Vec<char> = pattern.chars().collect();
    let mut out = String::with_capacity(pattern.len() + 8);
    let mut in_class = false;
    let mut class_start = false;
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let at_class_start = std::mem::take(&mut class_start);
        match c {
            '\\' if i + 1 < chars.len() => {
                let e = chars[i + 1];
                i += 2;
                match e {
                    'd' => out.push_str("[0-9]"),
                    'D' => out.push_str("[^0-9]"),
                    's' => out.push_str("[\\t\\n\\f\\r ]"),
                    'S' => out.push_str("[^\\t\\n\\f\\r ]"),
                    'w' => out.push_str("[0-9A-Za-z_]"),
                    'W' => out.push_str("[^0-9A-Za-z_]"),
                    'b' if !in_class => out.push_str("(?-u:\\b)"),
                    'B' if !in_class => out.push_str("(?-u:\\B)"),
                    'Q' => {
                        // Literal text up to \E.
                        while i < chars.len() {
                            if chars[i] == '\\' && chars.get(i + 1) == Some(&'E') {
                                i += 2;
                                break;
                            }
                            out.push_str(&regex::escape(&chars[i].to_string()));
                            i += 1;
                        }
                    }
                    '0'..='7'
                        if e == '0' || chars.get(i).is_some_and(|d| ('0'..='7').contains(d)) =>
                    {
                        // Octal: up to three digits.
                        let mut value = e.to_digit(8).unwrap_or(0);
                        let mut n = 1;
                        while n < 3 {
                            match chars.get(i).and_then(|d| d.to_digit(8)) {
                                Some(d) => {
                                    value = value * 8 + d;
                                    i += 1;
                                    n += 1;
                                }
                                None => break,
                            }
                        }
                        out.push_str(&format!("\\x{{{value:x}}}"));
                    }
                    e => {
                        out.push('\\');
                        out.push(e);
                    }
                }
                continue;
            }
            '[' if !in_class => {
                in_class = true;
                out.push('[');
                i += 1;
                if chars.get(i) == Some(&'^') {
                    out.push('^');
                    i += 1;
                }
                // A `]` right after `[` or `[^` is a literal in both syntaxes.
                class_start = true;
                continue;
            }
            '[' if in_class => {
                // `[:alpha:]` stays, any other `[` is a literal in Go.
                if chars.get(i + 1) == Some(&':') {
                    if let Some(end) = find_posix_end(&chars, i + 2) {
                        out.extend(&chars[i..=end]);
                        i = end + 1;
                        continue;
                    }
                }
                out.push_str("\\[");
            }
            ']' if in_class && !at_class_start => {
                in_class = false;
                out.push(']');
            }
            '&' | '~' if in_class => {
                out.push('\\');
                out.push(c);
            }
            '{' if !in_class && !is_repetition(&chars[i + 1..]) => out.push_str("\\{"),
            c => out.push(c),
        }
        i += 1;
    }
    out
}

/// The index of the `]` closing a `[:name:]` whose name starts at `from`.
fn find_posix_end(chars: &[char], from: usize) -> Option<usize> {
    let mut j = from;
    while j < chars.len() && (chars[j].is_ascii_alphabetic() || (j == from && chars[j] == '^')) {
        j += 1;
    }
    (j + 1 < chars.len() && chars[j] == ':' && chars[j + 1] == ']').then_some(j + 1)
}

/// Whether `rest` (after a `{`) is `n}`, `n,}` or `n,m}`.
fn is_repetition(rest: &[char]) -> bool {
    let digits = |s: &[char]| s.iter().take_while(|c| c.is_ascii_digit()).count();
    let n = digits(rest);
    if n == 0 {
        return false;
    }
    match rest.get(n) {
        Some('}') => true,
        Some(',') => {
            let m = digits(&rest[n + 1..]);
            rest.get(n + 1 + m) == Some(&'}')
        }
        _ => false,
    }
}
