//! The conversion webhook's client config (k8s.io/apiserver pkg/util/webhook: ValidateWebhookURL,
//! ValidateWebhookService, ValidateCABundle) and the `api-approved.kubernetes.io` annotation
//! (apihelpers.GetAPIApprovalState). Both read URLs as Go's net/url does, so the parser here
//! follows url.Parse / url.ParseRequestURI closely enough to accept and reject the same text
//! and to name the same problems.

use super::{dns1123_subdomain_errors, path};
use crate::registry::error::{quote, FieldError};

/// The parts of a URL that the checks look at (net/url.URL).
#[derive(Debug, Default)]
pub(super) struct Url {
    pub(super) scheme: String,
    pub(super) user: Option<String>,
    pub(super) host: String,
    pub(super) raw_query: String,
    pub(super) fragment: String,
}

/// getScheme.
fn scheme(raw: &str) -> Result<(&str, &str), String> {
    for (i, c) in raw.char_indices() {
        match c {
            'a'..='z' | 'A'..='Z' => {}
            '0'..='9' | '+' | '-' | '.' if i > 0 => {}
            ':' if i == 0 => return Err("missing protocol scheme".into()),
            ':' => return Ok((&raw[..i], &raw[i + 1..])),
            _ => return Ok(("", raw)),
        }
    }
    Ok(("", raw))
}

/// The characters net/url allows unescaped in a host (shouldEscape(c, encodeHost) false).
fn host_char_ok(c: char) -> bool {
    c.is_ascii_alphanumeric()
        || !c.is_ascii()
        || matches!(
            c,
            '-' | '_'
                | '.'
                | '~'
                | '!'
                | '$'
                | '&'
                | '\''
                | '('
                | ')'
                | '*'
                | '+'
                | ','
                | ';'
                | '='
                | ':'
                | '['
                | ']'
                | '<'
                | '>'
                | '"'
                | '%'
        )
}

/// validOptionalPort.
fn valid_optional_port(port: &str) -> bool {
    port.is_empty()
        || port
            .strip_prefix(':')
            .is_some_and(|p| p.bytes().all(|b| b.is_ascii_digit()))
}

/// unescape: `%XX` must be two hex digits.
fn check_escapes(s: &str) -> Result<(), String> {
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let ok =
                b.len() > i + 2 && b[i + 1].is_ascii_hexdigit() && b[i + 2].is_ascii_hexdigit();
            if !ok {
                let mut end = (i + 3).min(b.len());
                while !s.is_char_boundary(end) {
                    end += 1;
                }
                return Err(format!("invalid URL escape {}", quote(&s[i..end])));
            }
            i += 3;
        } else {
            i += 1;
        }
    }
    Ok(())
}

/// parseHost.
fn host(h: &str) -> Result<String, String> {
    if h.starts_with('[') {
        let Some(i) = h.rfind(']') else {
            return Err("missing ']' in host".into());
        };
        let port = &h[i + 1..];
        if !valid_optional_port(port) {
            return Err(format!("invalid port {} after host", quote(port)));
        }
    } else if let Some(i) = h.rfind(':') {
        let port = &h[i..];
        if !valid_optional_port(port) {
            return Err(format!("invalid port {} after host", quote(port)));
        }
    }
    check_escapes(h)?;
    if let Some(c) = h.chars().find(|&c| !host_char_ok(c)) {
        return Err(format!(
            "invalid character {} in host name",
            quote(&c.to_string())
        ));
    }
    Ok(h.to_string())
}

/// url.parse(rawURL, viaRequest).
fn parse_inner(raw: &str, via_request: bool) -> Result<Url, String> {
    if raw.bytes().any(|b| b < 0x20 || b == 0x7f) {
        return Err("net/url: invalid control character in URL".into());
    }
    if raw.is_empty() && via_request {
        return Err("empty url".into());
    }
    let mut url = Url::default();
    if raw == "*" {
        return Ok(url);
    }
    let (sch, mut rest) = scheme(raw)?;
    url.scheme = sch.to_ascii_lowercase();
    if rest.ends_with('?') && rest.matches('?').count() == 1 {
        rest = &rest[..rest.len() - 1];
    } else if let Some((r, q)) = rest.split_once('?') {
        url.raw_query = q.to_string();
        rest = r;
    }
    if !rest.starts_with('/') {
        if !url.scheme.is_empty() {
            return Ok(url); // opaque
        }
        if via_request {
            return Err("invalid URI for request".into());
        }
        if rest.split('/').next().is_some_and(|seg| seg.contains(':')) {
            return Err("first path segment in URL cannot contain colon".into());
        }
    }
    if (!url.scheme.is_empty() || !via_request && !rest.starts_with("///"))
        && rest.starts_with("//")
    {
        let auth = &rest[2..];
        let (auth, path) = auth
            .find('/')
            .map_or((auth, ""), |i| (&auth[..i], &auth[i..]));
        rest = path;
        match auth.rfind('@') {
            None => url.host = host(auth)?,
            Some(i) => {
                url.host = host(&auth[i + 1..])?;
                let info = &auth[..i];
                let valid = info.chars().all(|c| {
                    c.is_ascii_alphanumeric()
                        || matches!(
                            c,
                            '-' | '.'
                                | '_'
                                | ':'
                                | '~'
                                | '!'
                                | '$'
                                | '&'
                                | '\''
                                | '('
                                | ')'
                                | '*'
                                | '+'
                                | ','
                                | ';'
                                | '='
                                | '%'
                                | '@'
                        )
                });
                if !valid {
                    return Err("net/url: invalid userinfo".into());
                }
                check_escapes(info)?;
                url.user = Some(info.to_string());
            }
        }
    }
    check_escapes(rest)?;
    Ok(url)
}

/// url.Parse; the error reads `parse "<url>": <why>` as Go's url.Error does.
pub(super) fn parse_url(raw: &str) -> Result<Url, String> {
    let (u, frag) = raw.split_once('#').unwrap_or((raw, ""));
    let mut url = parse_inner(u, false).map_err(|e| format!("parse {}: {e}", quote(u)))?;
    check_escapes(frag).map_err(|e| format!("parse {}: {e}", quote(raw)))?;
    url.fragment = frag.to_string();
    Ok(url)
}

/// url.ParseRequestURI.
fn parse_request_uri(raw: &str) -> Result<Url, String> {
    parse_inner(raw, true)
}

const URL_FORM: &str = "; desired format: https://host[/path]";

/// ValidateWebhookURL with forceHttps (also the admission webhooks' `clientConfig.url`).
pub(crate) fn validate_url(fld: &str, raw: &str, errs: &mut Vec<FieldError>) {
    match parse_url(raw) {
        Err(e) => errs.push(FieldError::required(
            fld,
            format!("url must be a valid URL: {e}{URL_FORM}"),
        )),
        Ok(u) => {
            if u.scheme != "https" {
                errs.push(FieldError::invalid(
                    fld,
                    &u.scheme,
                    format!("'https' is the only allowed URL scheme{URL_FORM}"),
                ));
            }
            if u.host.is_empty() {
                errs.push(FieldError::invalid(
                    fld,
                    &u.host,
                    format!("host must be specified{URL_FORM}"),
                ));
            }
            if let Some(user) = &u.user {
                errs.push(FieldError::invalid(
                    fld,
                    user,
                    "user information is not permitted in the URL",
                ));
            }
            if !u.fragment.is_empty() {
                errs.push(FieldError::invalid(
                    fld,
                    &u.fragment,
                    "fragments are not permitted in the URL",
                ));
            }
            if !u.raw_query.is_empty() {
                errs.push(FieldError::invalid(
                    fld,
                    &u.raw_query,
                    "query parameters are not permitted in the URL",
                ));
            }
        }
    }
}

/// ValidateWebhookService (also the admission webhooks' `clientConfig.service`).
pub(crate) fn validate_service(
    fld: &str,
    namespace: &str,
    name: &str,
    service_path: Option<&str>,
    port: i32,
    errs: &mut Vec<FieldError>,
) {
    if name.is_empty() {
        errs.push(FieldError::required(path::child(fld, "name"), ""));
    }
    if namespace.is_empty() {
        errs.push(FieldError::required(path::child(fld, "namespace"), ""));
    }
    if !(1..=65535).contains(&port) {
        errs.push(FieldError::invalid_raw(
            path::child(fld, "port"),
            port,
            "port is not valid: must be between 1 and 65535, inclusive",
        ));
    }
    let Some(p) = service_path else {
        return;
    };
    let at = path::child(fld, "path");
    if p == "/" || p.is_empty() {
        return;
    }
    if p == "//" {
        errs.push(FieldError::invalid(at, p, "segment[0] may not be empty"));
        return;
    }
    if !p.starts_with('/') {
        errs.push(FieldError::invalid(&at, p, "must start with a '/'"));
    }
    let check = &p[p.chars().next().map_or(0, char::len_utf8)..];
    let check = check.strip_suffix('/').unwrap_or(check);
    for (i, step) in check.split('/').enumerate() {
        if step.is_empty() {
            errs.push(FieldError::invalid(
                &at,
                p,
                format!("segment[{i}] may not be empty"),
            ));
            continue;
        }
        for failure in dns1123_subdomain_errors(step) {
            errs.push(FieldError::invalid(
                &at,
                p,
                format!("segment[{i}]: {failure}"),
            ));
        }
    }
}

/// Why a CA bundle is unusable (client-go's TLSConfigFor with CAData), if it is.
pub(super) fn ca_bundle_error(data: &[u8]) -> Option<String> {
    use x509_parser::pem::Pem;
    let blocks: Vec<_> = Pem::iter_from_buffer(data).collect();
    let usable = blocks.iter().any(|b| {
        b.as_ref()
            .is_ok_and(|p| p.label == "CERTIFICATE" && p.parse_x509().is_ok())
    });
    if usable {
        return None;
    }
    // createErrorParsingCAData: the first problem, block by block.
    let mut why = "no valid certificate authority data seen".to_string();
    for b in &blocks {
        match b {
            Err(_) => {
                why = "unable to parse bytes as PEM block".into();
                break;
            }
            Ok(p) if p.label == "CERTIFICATE" && p.parse_x509().is_err() => {
                why = "failed to parse certificate: x509: malformed certificate".into();
                break;
            }
            Ok(_) => {}
        }
    }
    if blocks.is_empty() {
        why = "unable to parse bytes as PEM block".into();
    }
    Some(format!("unable to load root certificates: {why}"))
}

/// The `api-approved.kubernetes.io` annotation.
pub(super) const API_APPROVED_ANNOTATION: &str = "api-approved.kubernetes.io";

/// apihelpers.APIApprovalState.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Approval {
    Invalid,
    Approved,
    Bypassed,
    Missing,
}

/// GetAPIApprovalState: the state of the annotation value and upstream's reason text.
pub(super) fn approval_state(annotation: &str) -> (Approval, String) {
    if annotation.is_empty() {
        return (
            Approval::Missing,
            format!("protected groups must have approval annotation {}, see https://github.com/kubernetes/enhancements/pull/1111", quote(API_APPROVED_ANNOTATION)),
        );
    }
    if annotation.starts_with("unapproved") {
        return (
            Approval::Bypassed,
            format!("not approved: {}", quote(annotation)),
        );
    }
    if parse_request_uri(annotation).is_ok_and(|u| !u.host.is_empty() && !u.scheme.is_empty()) {
        return (Approval::Approved, format!("approved in {annotation}"));
    }
    (
        Approval::Invalid,
        format!("protected groups must have approval annotation {} with either a URL or a reason starting with \"unapproved\", see https://github.com/kubernetes/enhancements/pull/1111", quote(API_APPROVED_ANNOTATION)),
    )
}

/// IsProtectedCommunityGroup.
pub(super) fn is_protected_group(group: &str) -> bool {
    group == "k8s.io"
        || group.ends_with(".k8s.io")
        || group == "kubernetes.io"
        || group.ends_with(".kubernetes.io")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_parse_like_go() {
        let u = parse_url("https://user@example.com:8443/a?x=1#f")
            .ok()
            .unwrap_or_default();
        assert_eq!(
            (u.scheme.as_str(), u.host.as_str()),
            ("https", "example.com:8443")
        );
        assert_eq!(u.user.as_deref(), Some("user"));
        assert_eq!((u.raw_query.as_str(), u.fragment.as_str()), ("x=1", "f"));
        assert_eq!(
            parse_url("http://[::1").err().as_deref(),
            Some("parse \"http://[::1\": missing ']' in host")
        );
        assert_eq!(
            parse_url("https://a:b:c/").err().as_deref(),
            Some("parse \"https://a:b:c/\": invalid port \":c\" after host")
        );
        assert_eq!(
            parse_url(":foo").err().as_deref(),
            Some("parse \":foo\": missing protocol scheme")
        );
    }

    #[test]
    fn approval_states() {
        assert_eq!(
            approval_state("https://github.com/kubernetes/kubernetes/pull/78458").0,
            Approval::Approved
        );
        assert_eq!(
            approval_state("unapproved, experimental").0,
            Approval::Bypassed
        );
        assert_eq!(approval_state("").0, Approval::Missing);
        assert_eq!(approval_state("github.com/foo").0, Approval::Invalid);
        assert_eq!(approval_state("mailto:a@b").0, Approval::Invalid);
    }
}
