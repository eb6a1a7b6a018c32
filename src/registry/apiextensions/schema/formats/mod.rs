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

mod net;
#[cfg(test)]
mod tests;
mod time;

use net::{is_cidr, is_email, is_mac, is_request_uri, parse_ip_sloppy};
pub(crate) use time::go_duration_nanos;
use time::{is_date, is_date_time, is_duration};
