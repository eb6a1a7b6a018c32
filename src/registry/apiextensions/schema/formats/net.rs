//! The network formats: IP addresses, CIDRs, MACs, request URIs and e-mail addresses, as
//! Go's net, net/url and net/mail packages and k8s.io/utils/net parse them.

use std::net::Ipv6Addr;

/// k8s.io/utils/net ParseIPSloppy: IPv4 (leading zeros allowed) or IPv6.
pub(super) fn parse_ip_sloppy(s: &str) -> Option<()> {
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
pub(super) fn is_cidr(s: &str) -> bool {
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
pub(super) fn is_mac(s: &str) -> bool {
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
pub(super) fn is_request_uri(s: &str) -> bool {
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
pub(super) fn is_email(s: &str) -> bool {
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
