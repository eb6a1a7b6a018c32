//! The string formats a CRD schema may name and how each is checked: kube-openapi's
//! strfmt.Default registry, cut to the formats apiextensions-apiserver keeps
//! (pkg/apiserver/validation/formats.go, compatibility version 1.34 and later). A format not in
//! that list is dropped when the schema is compiled, as upstream strips it. Names match after
//! removing `-` (`date-time` is `datetime`). May use: nothing internal.

use regex::Regex;
use std::net::Ipv6Addr;
use std::sync::LazyLock;

/// A supported string format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Format {
    BsonObjectId,
    Uri,
    Email,
    Hostname,
    Ipv4,
    Ipv6,
    Cidr,
    Mac,
    Uuid,
    Uuid3,
    Uuid4,
    Uuid5,
    Isbn,
    Isbn10,
    Isbn13,
    CreditCard,
    Ssn,
    HexColor,
    RgbColor,
    Byte,
    Password,
    Date,
    Duration,
    DateTime,
    K8sShortName,
    K8sLongName,
}

impl Format {
    /// The supported format named `name` (`-` ignored, case kept), or None: such a format is
    /// stripped from the schema and never checked.
    pub(super) fn lookup(name: &str) -> Option<Format> {
        let normalized: String = name.chars().filter(|c| *c != '-').collect();
        Some(match normalized.as_str() {
            "bsonobjectid" => Format::BsonObjectId,
            "uri" => Format::Uri,
            "email" => Format::Email,
            "hostname" => Format::Hostname,
            "ipv4" => Format::Ipv4,
            "ipv6" => Format::Ipv6,
            "cidr" => Format::Cidr,
            "mac" => Format::Mac,
            "uuid" => Format::Uuid,
            "uuid3" => Format::Uuid3,
            "uuid4" => Format::Uuid4,
            "uuid5" => Format::Uuid5,
            "isbn" => Format::Isbn,
            "isbn10" => Format::Isbn10,
            "isbn13" => Format::Isbn13,
            "creditcard" => Format::CreditCard,
            "ssn" => Format::Ssn,
            "hexcolor" => Format::HexColor,
            "rgbcolor" => Format::RgbColor,
            "byte" => Format::Byte,
            "password" => Format::Password,
            "date" => Format::Date,
            "duration" => Format::Duration,
            "datetime" => Format::DateTime,
            "k8sshortname" => Format::K8sShortName,
            "k8slongname" => Format::K8sLongName,
            _ => return None,
        })
    }

    /// Whether `s` is valid in this format (the registry's validator).
    pub(super) fn validates(self, s: &str) -> bool {
        match self {
            Format::BsonObjectId => s.len() == 24 && s.bytes().all(|b| b.is_ascii_hexdigit()),
            Format::Uri => is_request_uri(s),
            Format::Email => is_email(s),
            Format::Hostname => is_hostname(s),
            Format::Ipv4 => parse_ip_sloppy(s).is_some() && s.contains('.'),
            Format::Ipv6 => s.parse::<Ipv6Addr>().is_ok() && s.contains(':'),
            Format::Cidr => is_cidr(s),
            Format::Mac => is_mac(s),
            Format::Uuid => matches(&UUID, s),
            Format::Uuid3 => matches(&UUID3, s),
            Format::Uuid4 => matches(&UUID4, s),
            Format::Uuid5 => matches(&UUID5, s),
            Format::Isbn => is_isbn10(s) || is_isbn13(s),
            Format::Isbn10 => is_isbn10(s),
            Format::Isbn13 => is_isbn13(s),
            Format::CreditCard => is_credit_card(s),
            Format::Ssn => s.len() == 11 && matches(&SSN, s),
            Format::HexColor => matches(&HEX_COLOR, s),
            Format::RgbColor => matches(&RGB_COLOR, s),
            Format::Byte => matches(&BASE64, s),
            Format::Password => true,
            Format::Date => is_date(s),
            Format::Duration => is_duration(s),
            Format::DateTime => is_date_time(s),
            Format::K8sShortName => s.len() <= 63 && matches(&SHORT_NAME, s),
            Format::K8sLongName => s.len() <= 253 && matches(&LONG_NAME, s),
        }
    }
}

type Lazy = LazyLock<Option<Regex>>;

/// Whether a format's regex matches `s` (they are constants that compile; one that did not
/// would match nothing).
fn matches(lazy: &'static Lazy, s: &str) -> bool {
    lazy.as_ref().is_some_and(|r| r.is_match(s))
}

macro_rules! go_regex {
    ($name:ident, $pattern:expr) => {
        static $name: Lazy = LazyLock::new(|| super::super::goregex::compile($pattern).ok());
    };
}

go_regex!(
    HOSTNAME,
    r"^([a-zA-Z0-9\p{S}\p{L}]((-?[a-zA-Z0-9\p{S}\p{L}]{0,62})?)|([a-zA-Z0-9\p{S}\p{L}](([a-zA-Z0-9-\p{S}\p{L}]{0,61}[a-zA-Z0-9\p{S}\p{L}])?)(\.)){1,}([a-zA-Z\p{L}]){2,63})$"
);
go_regex!(
    UUID,
    r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$"
);
go_regex!(
    UUID3,
    r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?3[0-9a-f]{3}-?[0-9a-f]{4}-?[0-9a-f]{12}$"
);
go_regex!(
    UUID4,
    r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?4[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}$"
);
go_regex!(
    UUID5,
    r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?5[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}$"
);
go_regex!(
    CREDIT_CARD,
    r"^(?:4[0-9]{12}(?:[0-9]{3})?|5[1-5][0-9]{14}|6(?:011|5[0-9][0-9])[0-9]{12}|3[47][0-9]{13}|3(?:0[0-5]|[68][0-9])[0-9]{11}|(?:2131|1800|35\d{3})\d{11})$"
);
go_regex!(HEX_COLOR, r"^#?([0-9a-fA-F]{3}|[0-9a-fA-F]{6})$");
go_regex!(
    RGB_COLOR,
    r"^rgb\(\s*(0|[1-9]\d?|1\d\d?|2[0-4]\d|25[0-5])\s*,\s*(0|[1-9]\d?|1\d\d?|2[0-4]\d|25[0-5])\s*,\s*(0|[1-9]\d?|1\d\d?|2[0-4]\d|25[0-5])\s*\)$"
);
go_regex!(
    BASE64,
    r"^(?:[A-Za-z0-9+\/]{4})*(?:[A-Za-z0-9+\/]{2}==|[A-Za-z0-9+\/]{3}=|[A-Za-z0-9+\/]{4})$"
);
go_regex!(SSN, r"^\d{3}[- ]?\d{2}[- ]?\d{4}$");
go_regex!(SHORT_NAME, r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$");
go_regex!(
    LONG_NAME,
    r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
);
go_regex!(DURATION_PART, r"((\d+)\s*([A-Za-zµ]+))");

/// strfmt.IsHostname.
fn is_hostname(s: &str) -> bool {
    matches(&HOSTNAME, s) && s.len() <= 255 && s.split('.').all(|p| p.len() <= 63)
}

/// govalidator.IsCreditCard: the digits (anything else dropped) match and pass Luhn.
fn is_credit_card(s: &str) -> bool {
    super::probe::allocates();
    let digits: String = s.chars().filter(char::is_ascii_digit).collect();
    if !matches(&CREDIT_CARD, &digits) {
        return false;
    }
    let mut sum = 0;
    for (i, d) in digits.bytes().rev().enumerate() {
        let mut n = u32::from(d - b'0');
        if i % 2 == 1 {
            n *= 2;
            if n >= 10 {
                n = n % 10 + 1;
            }
        }
        sum += n;
    }
    sum % 10 == 0
}

/// The ISBN with whitespace and `-` removed (govalidator's sanitizing).
fn isbn_digits(s: &str) -> Vec<u8> {
    super::probe::allocates();
    s.bytes()
        .filter(|b| !matches!(b, b'-' | b' ' | b'\t' | b'\n' | b'\x0c' | b'\r'))
        .collect()
}

fn is_isbn10(s: &str) -> bool {
    let d = isbn_digits(s);
    let shape = d.len() == 10
        && d[..9].iter().all(u8::is_ascii_digit)
        && (d[9].is_ascii_digit() || d[9] == b'X');
    if !shape {
        return false;
    }
    let mut sum: u32 = (0..9)
        .map(|i| (i as u32 + 1) * u32::from(d[i] - b'0'))
        .sum();
    sum += 10
        * if d[9] == b'X' {
            10
        } else {
            u32::from(d[9] - b'0')
        };
    sum.is_multiple_of(11)
}

fn is_isbn13(s: &str) -> bool {
    let d = isbn_digits(s);
    if d.len() != 13 || !d.iter().all(u8::is_ascii_digit) {
        return false;
    }
    let sum: u32 = (0..12)
        .map(|i| [1, 3][i % 2] * u32::from(d[i] - b'0'))
        .sum();
    u32::from(d[12] - b'0') == (10 - sum % 10) % 10
}

/// Go's `time.Parse("2006-01-02", s)`: four-digit year, a month and a day that exists.
fn is_date(s: &str) -> bool {
    let b = s.as_bytes();
    if b.len() != 10 || b[4] != b'-' || b[7] != b'-' {
        return false;
    }
    let num = |r: std::ops::Range<usize>| -> Option<u32> {
        b[r].iter().try_fold(0u32, |acc, c| {
            c.is_ascii_digit().then(|| acc * 10 + u32::from(c - b'0'))
        })
    };
    let (Some(year), Some(month), Some(day)) = (num(0..4), num(5..7), num(8..10)) else {
        return false;
    };
    let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
    let days = match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return false,
    };
    (1..=days).contains(&day)
}

/// strfmt.IsDateTime: the text lowercased and split at `t`; the first part a date, the second
/// `hh:mm:ss[<any>digits](z|±hh:mm)` with hours to 23 and minutes and seconds to 59. Done
/// without lowercasing a copy: `T` splits like `t`, `Z` ends like `z`.
fn is_date_time(s: &str) -> bool {
    if s.len() < 4 {
        return false;
    }
    let mut parts = s.split(['t', 'T']);
    let (Some(date), Some(time)) = (parts.next(), parts.next()) else {
        return false;
    };
    is_date(date) && is_time_of_date_time(time)
}

fn is_time_of_date_time(t: &str) -> bool {
    let b = t.as_bytes();
    let two = |i: usize| b.len() > i + 1 && b[i].is_ascii_digit() && b[i + 1].is_ascii_digit();
    if !(two(0) && b.get(2) == Some(&b':') && two(3) && b.get(5) == Some(&b':') && two(6)) {
        return false;
    }
    if &t[0..2] > "23" || &t[3..5] > "59" || &t[6..8] > "59" {
        return false;
    }
    let rest = &t[8..];
    // `(.[0-9]+)?`: any one character, then digits.
    let fraction_ok = |f: &str| {
        let mut chars = f.chars();
        f.is_empty()
            || (chars.next().is_some_and(|c| c != '\n')
                && !chars.as_str().is_empty()
                && chars.as_str().bytes().all(|b| b.is_ascii_digit()))
    };
    if let Some(f) = rest.strip_suffix(['z', 'Z']) {
        if fraction_ok(f) {
            return true;
        }
    }
    let z = rest.as_bytes();
    if z.len() >= 6 {
        let tail = &z[z.len() - 6..];
        let offset = matches!(tail[0], b'+' | b'-')
            && tail[1].is_ascii_digit()
            && tail[2].is_ascii_digit()
            && tail[3] == b':'
            && tail[4].is_ascii_digit()
            && tail[5].is_ascii_digit();
        if offset && rest.is_char_boundary(rest.len() - 6) && fraction_ok(&rest[..rest.len() - 6]) {
            return true;
        }
    }
    false
}

/// strfmt.ParseDuration succeeds: Go's time.ParseDuration, or numbers with unit words.
fn is_duration(s: &str) -> bool {
    if go_parse_duration(s) {
        return true;
    }
    super::probe::allocates();
    const UNITS: [&[&str]; 8] = [
        &["ns", "nano"],
        &["us", "µs", "micro"],
        &["ms", "milli"],
        &["s", "sec"],
        &["m", "min"],
        &["h", "hr", "hour"],
        &["d", "day"],
        &["w", "wk", "week"],
    ];
    let mut ok = false;
    let Some(part) = DURATION_PART.as_ref() else {
        return false;
    };
    for m in part.captures_iter(s) {
        // strconv.Atoi fails on overflow, and that fails the whole parse.
        if m[2].parse::<i64>().is_err() {
            return false;
        }
        let unit = m[3].to_lowercase();
        for variants in UNITS {
            let last = variants.len() - 1;
            for (i, v) in variants.iter().enumerate() {
                if (i == last && unit.starts_with(v)) || v.eq_ignore_ascii_case(&unit) {
                    ok = true;
                }
            }
        }
    }
    ok
}

/// Whether Go's time.ParseDuration accepts `s` (`[-+]?([0-9]*(\.[0-9]*)?[a-z]+)+`, known
/// units, within int64 nanoseconds).
fn go_parse_duration(s: &str) -> bool {
    let mut rest = s.strip_prefix(['-', '+']).unwrap_or(s);
    if rest == "0" {
        return true;
    }
    if rest.is_empty() {
        return false;
    }
    let mut total: f64 = 0.0;
    while !rest.is_empty() {
        let int_len = rest.bytes().take_while(u8::is_ascii_digit).count();
        let (int, after) = rest.split_at(int_len);
        let (frac, after) = match after.strip_prefix('.') {
            Some(a) => {
                let n = a.bytes().take_while(u8::is_ascii_digit).count();
                a.split_at(n)
            }
            None => ("", after),
        };
        if int.is_empty() && frac.is_empty() {
            return false;
        }
        let unit_len = after
            .char_indices()
            .find(|(_, c)| *c == '.' || c.is_ascii_digit())
            .map_or(after.len(), |(i, _)| i);
        let (unit, next) = after.split_at(unit_len);
        let scale: f64 = match unit {
            "ns" => 1.0,
            "us" | "µs" | "μs" => 1e3,
            "ms" => 1e6,
            "s" => 1e9,
            "m" => 60e9,
            "h" => 3600e9,
            _ => return false,
        };
        let whole: f64 = if int.is_empty() {
            0.0
        } else {
            int.parse().unwrap_or(f64::INFINITY)
        };
        let fraction = frac
            .bytes()
            .rev()
            .fold(0.0, |acc, d| (acc + f64::from(d - b'0')) / 10.0);
        let value = whole + fraction;
        total += value * scale;
        if total > 9.223_372_036_854_775e18 {
            return false;
        }
        rest = next;
    }
    true
}

/// k8s.io/utils/net ParseIPSloppy: IPv4 (leading zeros allowed) or IPv6.
fn parse_ip_sloppy(s: &str) -> Option<()> {
    if parse_ipv4_sloppy(s).is_some() {
        return Some(());
    }
    if s.parse::<Ipv6Addr>().is_ok() {
        return Some(());
    }
    // An IPv6 whose trailing IPv4 part has leading zeros.
    let (head, v4) = s.rsplit_once(':')?;
    let [a, b, c, d] = parse_ipv4_sloppy(v4)?;
    format!("{head}:{}.{}.{}.{}", a, b, c, d)
        .parse::<Ipv6Addr>()
        .ok()
        .map(|_| ())
}

fn parse_ipv4_sloppy(s: &str) -> Option<[u8; 4]> {
    let mut out = [0u8; 4];
    let mut parts = s.split('.');
    for slot in &mut out {
        let p = parts.next()?;
        if p.is_empty() || p.len() > 3 || !p.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        *slot = p.parse().ok()?;
    }
    parts.next().is_none().then_some(out)
}

/// ParseCIDRSloppy: an address, `/`, a prefix length within its size.
fn is_cidr(s: &str) -> bool {
    let Some((addr, bits)) = s.split_once('/') else {
        return false;
    };
    if bits.is_empty() || !bits.bytes().all(|b| b.is_ascii_digit()) || bits.len() > 5 {
        return false;
    }
    let Ok(bits) = bits.parse::<u32>() else {
        return false;
    };
    let max = if parse_ipv4_sloppy(addr).is_some() {
        32
    } else if parse_ip_sloppy(addr).is_some() {
        128
    } else {
        return false;
    };
    bits <= max
}

/// net.ParseMAC: 6, 8 or 20 bytes as `xx:xx`, `xx-xx` or `xxxx.xxxx`.
fn is_mac(s: &str) -> bool {
    let b = s.as_bytes();
    if b.len() < 14 {
        return false;
    }
    let hex2 = |x: &[u8]| x.len() >= 2 && x[0].is_ascii_hexdigit() && x[1].is_ascii_hexdigit();
    let ok_len = |n: usize| n == 6 || n == 8 || n == 20;
    if b[2] == b':' || b[2] == b'-' {
        if !(b.len() + 1).is_multiple_of(3) || !ok_len((b.len() + 1) / 3) {
            return false;
        }
        b.chunks(3)
            .all(|g| hex2(g) && (g.len() == 2 || g[2] == b[2]))
    } else if b[4] == b'.' {
        if !(b.len() + 1).is_multiple_of(5) || !ok_len(2 * (b.len() + 1) / 5) {
            return false;
        }
        b.chunks(5)
            .all(|g| hex2(g) && hex2(&g[2..]) && (g.len() == 4 || g[4] == b[4]))
    } else {
        false
    }
}

/// net/url.ParseRequestURI succeeds: an absolute URI or an absolute path, valid escapes,
/// a valid host and port.
fn is_request_uri(s: &str) -> bool {
    if s.is_empty() || s.bytes().any(|b| b < 0x20 || b == 0x7f) {
        return false;
    }
    if s == "*" {
        return true;
    }
    // The scheme: a letter, then letters, digits, `+-.`, up to `:`.
    let mut scheme = "";
    let mut rest = s;
    for (i, c) in s.char_indices() {
        match c {
            'a'..='z' | 'A'..='Z' => {}
            '0'..='9' | '+' | '-' | '.' if i > 0 => {}
            ':' if i == 0 => return false,
            ':' => {
                scheme = &s[..i];
                rest = &s[i + 1..];
                break;
            }
            _ => break,
        }
    }
    let rest = match rest.split_once('?') {
        Some((before, _)) => before,
        None => rest,
    };
    if !rest.starts_with('/') {
        return !scheme.is_empty();
    }
    let mut path = rest;
    if !scheme.is_empty() {
        if let Some(after) = rest.strip_prefix("//") {
            let (authority, p) = after.split_at(after.find('/').unwrap_or(after.len()));
            if !valid_authority(authority) {
                return false;
            }
            path = p;
        }
    }
    valid_escapes(path)
}

/// Every `%` is followed by two hex digits.
fn valid_escapes(s: &str) -> bool {
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            if !(b.get(i + 1).is_some_and(u8::is_ascii_hexdigit)
                && b.get(i + 2).is_some_and(u8::is_ascii_hexdigit))
            {
                return false;
            }
            i += 3;
        } else {
            i += 1;
        }
    }
    true
}

/// url.parseAuthority: `[userinfo@]host[:port]`.
fn valid_authority(authority: &str) -> bool {
    let (userinfo, host) = match authority.rfind('@') {
        Some(i) => (Some(&authority[..i]), &authority[i + 1..]),
        None => (None, authority),
    };
    if let Some(u) = userinfo {
        let ok = u
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-._:~!$&'()*+,;=%@".contains(&b));
        if !ok || !valid_escapes(u) {
            return false;
        }
    }
    let port_ok = |p: &str| p.bytes().all(|b| b.is_ascii_digit());
    if let Some(v6) = host.strip_prefix('[') {
        let Some(end) = v6.find(']') else {
            return false;
        };
        let after = &v6[end + 1..];
        if !after.is_empty() && !after.strip_prefix(':').is_some_and(port_ok) {
            return false;
        }
        return valid_escapes(&v6[..end]);
    }
    if let Some(i) = host.rfind(':') {
        if !port_ok(&host[i + 1..]) {
            return false;
        }
    }
    valid_escapes(host)
}

/// net/mail.ParseAddress accepts `s` (approximated: `addr-spec` or `name <addr-spec>`).
fn is_email(s: &str) -> bool {
    let s = s.trim_matches([' ', '\t']);
    let addr = match (s.rfind('<'), s.ends_with('>')) {
        (Some(i), true) => &s[i + 1..s.len() - 1],
        (None, false) => s,
        _ => return false,
    };
    let Some((local, domain)) = addr.rsplit_once('@') else {
        return false;
    };
    let atext =
        |c: char| c.is_ascii_alphanumeric() || "!#$%&'*+-/=?^_`{|}~".contains(c) || !c.is_ascii();
    let dot_atom =
        |s: &str| !s.is_empty() && s.split('.').all(|p| !p.is_empty() && p.chars().all(atext));
    let local_ok =
        dot_atom(local) || (local.len() >= 2 && local.starts_with('"') && local.ends_with('"'));
    let domain_ok = dot_atom(domain) || (domain.starts_with('[') && domain.ends_with(']'));
    local_ok && domain_ok
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_follow_strfmt() {
        let cases: &[(&str, &[&str], &[&str])] = &[
            (
                "date-time",
                &["2006-01-02T15:04:05Z", "2006-01-02t15:04:05.5+01:00"],
                &["2006-01-02", "2006-01-02T25:00:00Z"],
            ),
            ("date", &["2024-02-29"], &["2023-02-29", "2023-1-01"]),
            (
                "duration",
                &["1h30m", "5 minutes", "3d", "0"],
                &["five", "1x"],
            ),
            ("uuid", &["123e4567-e89b-12d3-a456-426614174000"], &["123"]),
            (
                "ipv4",
                &["1.2.3.4", "01.2.3.4", "::ffff:1.2.3.4"],
                &["1.2.3", "::1"],
            ),
            ("ipv6", &["::1", "::ffff:1.2.3.4"], &["1.2.3.4"]),
            (
                "cidr",
                &["10.0.0.0/8", "fd00::/64"],
                &["10.0.0.0/33", "10.0.0.0"],
            ),
            (
                "mac",
                &["00:00:5e:00:53:01", "0000.5e00.5301"],
                &["00:00:5e:00:53"],
            ),
            ("hostname", &["example.com", "a"], &["-a.com"]),
            ("email", &["a@b.c", "Bob <bob@example.com>"], &["a", "a@"]),
            (
                "uri",
                &["http://example.com/a?b", "/path", "mailto:x"],
                &["a b", "rel/path", "http://h:x/"],
            ),
            ("byte", &["aGVsbG8="], &["", "a"]),
            ("k8s-short-name", &["a-b"], &["a-", "A"]),
            ("k8s-long-name", &["a.b-c"], &["a.-"]),
            ("isbn", &["0321751043", "978-0321751041"], &["0321751044"]),
            (
                "creditcard",
                &["4111 1111 1111 1111"],
                &["4111 1111 1111 1112"],
            ),
            ("ssn", &["123-45-6789"], &["123456789"]),
            ("hexcolor", &["#fff"], &["#ffff"]),
            ("rgbcolor", &["rgb(1, 2, 255)"], &["rgb(256,0,0)"]),
            ("bsonobjectid", &["507f1f77bcf86cd799439011"], &["507f"]),
        ];
        for (name, good, bad) in cases {
            let f = Format::lookup(name).unwrap();
            for s in *good {
                assert!(f.validates(s), "{name} {s}");
            }
            for s in *bad {
                assert!(!f.validates(s), "{name} {s}");
            }
        }
        assert_eq!(Format::lookup("int32"), None);
        assert_eq!(Format::lookup("Date-Time"), None);
    }
}
