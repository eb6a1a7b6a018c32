//! What the core Services and the discovery.k8s.io EndpointSlices validate alike, with
//! upstream's messages (apimachinery pkg/util/validation and pkg/apis/core/validation): IP
//! addresses as `netutils.ParseIPSloppy` reads them, port numbers and names, protocols, DNS
//! names. Works on canonical JSON. May use: registry (error, validation), api.

use crate::api::selectors::qualified_name_errors;
use crate::registry::error::{quote, FieldError, FieldErrorKind};
use crate::registry::validation::{name_errors, NameRule};
use serde_json::Value;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// The port protocols (supportedPortProtocols), sorted as upstream lists them.
pub(crate) const PROTOCOLS: [&str; 3] = ["SCTP", "TCP", "UDP"];

/// The entries of the array at `key` of `obj` (absent or null: none).
pub(crate) fn items<'a>(obj: &'a Value, key: &str) -> &'a [Value] {
    obj.get(key)
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

/// The string at `key` of `obj`, if set.
pub(crate) fn opt_str<'a>(obj: &'a Value, key: &str) -> Option<&'a str> {
    obj.get(key).and_then(Value::as_str)
}

/// The strings of the array at `key` of `obj`.
pub(crate) fn strings<'a>(obj: &'a Value, key: &str) -> Vec<&'a str> {
    items(obj, key).iter().filter_map(Value::as_str).collect()
}

/// A `[]string` as Go's `%#v` prints it in an Invalid value.
pub(crate) fn go_strings(list: &[&str]) -> String {
    let quoted: Vec<String> = list.iter().map(|s| quote(s)).collect();
    format!("[]string{{{}}}", quoted.join(", "))
}

/// netutils.ParseIPSloppy: Go 1.16's parser, which reads IPv4 octets with leading zeros as
/// decimal. An IPv4-mapped IPv6 address is its IPv4 address, as Go's `To4` sees it.
pub(crate) fn parse_ip_sloppy(s: &str) -> Option<IpAddr> {
    if s.contains(':') {
        let v6: Ipv6Addr = s.parse().ok()?;
        return Some(match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => IpAddr::V6(v6),
        });
    }
    let mut octets = [0u8; 4];
    let mut parts = s.split('.');
    for o in &mut octets {
        let part = parts.next()?;
        if part.is_empty() || !part.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        let trimmed = part.trim_start_matches('0');
        if trimmed.len() > 3 {
            return None;
        }
        *o = u8::try_from(trimmed.parse::<u16>().unwrap_or(0)).ok()?;
    }
    parts
        .next()
        .is_none()
        .then(|| IpAddr::V4(Ipv4Addr::from(octets)))
}

/// IsValidIP.
pub(crate) fn ip(path: &str, value: &str) -> Vec<FieldError> {
    match parse_ip_sloppy(value) {
        Some(_) => Vec::new(),
        None => vec![FieldError::invalid(
            path,
            value,
            "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)",
        )],
    }
}

/// IsValidIPv4Address.
pub(crate) fn ipv4(path: &str, value: &str) -> Vec<FieldError> {
    match parse_ip_sloppy(value) {
        Some(IpAddr::V4(_)) => Vec::new(),
        _ => vec![FieldError::invalid(
            path,
            value,
            "must be a valid IPv4 address",
        )],
    }
}

/// IsValidIPv6Address.
pub(crate) fn ipv6(path: &str, value: &str) -> Vec<FieldError> {
    match parse_ip_sloppy(value) {
        Some(IpAddr::V6(_)) => Vec::new(),
        _ => vec![FieldError::invalid(
            path,
            value,
            "must be a valid IPv6 address",
        )],
    }
}

/// ValidateEndpointIP: addresses that make no sense as a destination (unspecified, loopback,
/// link-local) are refused.
pub(crate) fn endpoint_ip(path: &str, value: &str) -> Vec<FieldError> {
    let Some(addr) = parse_ip_sloppy(value) else {
        return vec![FieldError::invalid(
            path,
            value,
            "must be a valid IP address",
        )];
    };
    let (unspecified, loopback, link_local, link_local_multicast) = match addr {
        IpAddr::V4(a) => {
            let o = a.octets();
            (
                a.is_unspecified(),
                o[0] == 127,
                o[0] == 169 && o[1] == 254,
                o[0] == 224 && o[1] == 0 && o[2] == 0,
            )
        }
        IpAddr::V6(a) => {
            let s = a.segments();
            (
                a.is_unspecified(),
                a.is_loopback(),
                s[0] & 0xffc0 == 0xfe80,
                s[0] & 0xff0f == 0xff02,
            )
        }
    };
    let mut errs = Vec::new();
    if unspecified {
        errs.push(FieldError::invalid(
            path,
            value,
            format!("may not be unspecified ({value})"),
        ));
    }
    for (hit, detail) in [
        (
            loopback,
            "may not be in the loopback range (127.0.0.0/8, ::1/128)",
        ),
        (
            link_local,
            "may not be in the link-local range (169.254.0.0/16, fe80::/10)",
        ),
        (
            link_local_multicast,
            "may not be in the link-local multicast range (224.0.0.0/24, ff02::/10)",
        ),
    ] {
        if hit {
            errs.push(FieldError::invalid(path, value, detail));
        }
    }
    errs
}

/// IsValidPortNum as Invalid values at `path`.
pub(crate) fn port_number(path: &str, port: i64) -> Vec<FieldError> {
    if (1..=65535).contains(&port) {
        return Vec::new();
    }
    vec![FieldError::invalid_raw(
        path,
        port,
        "must be between 1 and 65535, inclusive",
    )]
}

/// IsValidPortName: an IANA_SVC_NAME.
fn port_name_errors(port: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if port.len() > 15 {
        errs.push("must be no more than 15 characters".to_string());
    }
    if port.is_empty()
        || !port
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
    {
        errs.push("must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)".into());
    } else if !port.bytes().any(|b| b.is_ascii_lowercase()) {
        errs.push("must contain at least one letter (a-z)".into());
    }
    if port.contains("--") {
        errs.push("must not contain consecutive hyphens".into());
    }
    if port.starts_with('-') || port.ends_with('-') {
        errs.push("must not begin or end with a hyphen".into());
    }
    errs
}

/// ValidatePortNumOrName of an IntOrString.
pub(crate) fn port_number_or_name(path: &str, port: &Value) -> Vec<FieldError> {
    match port {
        Value::String(name) => port_name_errors(name)
            .into_iter()
            .map(|e| FieldError::invalid(path, name, e))
            .collect(),
        v => port_number(path, v.as_i64().unwrap_or(0)),
    }
}

/// ValidateDNS1123Label.
pub(crate) fn dns1123_label(path: &str, value: &str) -> Vec<FieldError> {
    name_errors(value, NameRule::Label)
        .into_iter()
        .map(|e| FieldError::invalid(path, value, e))
        .collect()
}

/// ValidateDNS1123Subdomain.
pub(crate) fn dns1123_subdomain(path: &str, value: &str) -> Vec<FieldError> {
    name_errors(value, NameRule::Subdomain)
        .into_iter()
        .map(|e| FieldError::invalid(path, value, e))
        .collect()
}

/// IsFullyQualifiedDomainName (a trailing dot is allowed).
pub(crate) fn fully_qualified_domain_name(path: &str, value: &str) -> Vec<FieldError> {
    if value.is_empty() {
        return vec![FieldError::required(path, "")];
    }
    let name = value.strip_suffix('.').unwrap_or(value);
    let errs = name_errors(name, NameRule::Subdomain);
    if !errs.is_empty() {
        return vec![FieldError::invalid(path, name, errs.join(","))];
    }
    if name.split('.').count() < 2 {
        return vec![FieldError::invalid(
            path,
            name,
            "should be a domain with at least two segments separated by dots",
        )];
    }
    for label in name.split('.') {
        let errs = name_errors(label, NameRule::Label);
        if !errs.is_empty() {
            return vec![FieldError::invalid(path, label, errs.join(","))];
        }
    }
    Vec::new()
}

/// ValidateQualifiedName.
pub(crate) fn qualified_name(path: &str, value: &str) -> Vec<FieldError> {
    qualified_name_errors(value)
        .into_iter()
        .map(|e| FieldError::invalid(path, value, e))
        .collect()
}

/// A port's protocol: Required when unset, Unsupported unless TCP, UDP or SCTP.
pub(crate) fn protocol(path: &str, value: Option<&str>) -> Vec<FieldError> {
    match value {
        None | Some("") => vec![FieldError::required(path, "")],
        Some(p) if !PROTOCOLS.contains(&p) => vec![FieldError::not_supported(path, p, &PROTOCOLS)],
        Some(_) => Vec::new(),
    }
}

/// field.Duplicate of a value already rendered as Go prints it.
pub(crate) fn duplicate_raw(path: impl Into<String>, value: impl Into<String>) -> FieldError {
    FieldError {
        kind: FieldErrorKind::Duplicate,
        field: path.into(),
        value: Some(value.into()),
        detail: String::new(),
    }
}

/// field.Duplicate of a string.
pub(crate) fn duplicate(path: impl Into<String>, value: &str) -> FieldError {
    duplicate_raw(path, quote(value))
}

/// field.TooMany with a known count.
pub(crate) fn too_many(path: impl Into<String>, actual: usize, max: usize) -> FieldError {
    FieldError {
        kind: FieldErrorKind::TooMany,
        field: path.into(),
        value: Some(actual.to_string()),
        detail: format!("must have at most {max} items"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(errs: &[FieldError]) -> Vec<String> {
        errs.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn ips_are_read_as_go_reads_them() {
        assert_eq!(
            parse_ip_sloppy("010.001.0.9"),
            Some("10.1.0.9".parse().unwrap())
        );
        assert_eq!(
            parse_ip_sloppy("::ffff:1.2.3.4"),
            Some("1.2.3.4".parse().unwrap())
        );
        for bad in [
            "1.2.3",
            "1.2.3.4.5",
            "256.1.1.1",
            "1..2.3",
            "a.b.c.d",
            "",
            "::g",
        ] {
            assert_eq!(parse_ip_sloppy(bad), None, "{bad}");
        }
        assert!(ipv4("p", "10.0.0.1").is_empty());
        assert_eq!(
            texts(&ipv4("p", "::1")),
            ["p: Invalid value: \"::1\": must be a valid IPv4 address"]
        );
        assert_eq!(
            texts(&ipv6("p", "10.0.0.1")),
            ["p: Invalid value: \"10.0.0.1\": must be a valid IPv6 address"]
        );
    }

    #[test]
    fn endpoint_ips_refuse_special_ranges() {
        assert!(endpoint_ip("a", "10.1.2.3").is_empty());
        assert!(endpoint_ip("a", "2001:db8::1").is_empty());
        assert_eq!(
            texts(&endpoint_ip("a", "0.0.0.0")),
            ["a: Invalid value: \"0.0.0.0\": may not be unspecified (0.0.0.0)"]
        );
        assert_eq!(
            texts(&endpoint_ip("a", "127.0.0.1")),
            ["a: Invalid value: \"127.0.0.1\": may not be in the loopback range (127.0.0.0/8, ::1/128)"]
        );
        assert_eq!(
            texts(&endpoint_ip("a", "fe80::1")),
            ["a: Invalid value: \"fe80::1\": may not be in the link-local range (169.254.0.0/16, fe80::/10)"]
        );
        assert_eq!(
            texts(&endpoint_ip("a", "224.0.0.5")),
            ["a: Invalid value: \"224.0.0.5\": may not be in the link-local multicast range (224.0.0.0/24, ff02::/10)"]
        );
    }

    #[test]
    fn ports_and_names() {
        assert!(port_number("p", 443).is_empty());
        assert_eq!(
            texts(&port_number("p", 0)),
            ["p: Invalid value: 0: must be between 1 and 65535, inclusive"]
        );
        assert!(port_number_or_name("t", &Value::from("http")).is_empty());
        assert_eq!(
            texts(&port_number_or_name("t", &Value::from("8080"))),
            ["t: Invalid value: \"8080\": must contain at least one letter (a-z)"]
        );
        assert_eq!(
            texts(&port_number_or_name("t", &Value::from("-a--b"))),
            [
                "t: Invalid value: \"-a--b\": must not contain consecutive hyphens",
                "t: Invalid value: \"-a--b\": must not begin or end with a hyphen"
            ]
        );
        assert_eq!(
            texts(&protocol("p", Some("HTTP"))),
            ["p: Unsupported value: \"HTTP\": supported values: \"SCTP\", \"TCP\", \"UDP\""]
        );
        assert_eq!(texts(&protocol("p", None)), ["p: Required value"]);
    }

    #[test]
    fn domain_names() {
        assert!(fully_qualified_domain_name("a", "db.example.com.").is_empty());
        assert_eq!(
            texts(&fully_qualified_domain_name("a", "localhost")),
            ["a: Invalid value: \"localhost\": should be a domain with at least two segments separated by dots"]
        );
        assert_eq!(
            texts(&dns1123_subdomain("e", "")),
            [format!(
                "e: Invalid value: \"\": {}",
                crate::api::selectors::DNS1123_SUBDOMAIN_MSG
            )]
        );
    }
}
