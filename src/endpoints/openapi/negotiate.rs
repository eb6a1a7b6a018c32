//! Content negotiation of the OpenAPI endpoints as kube-openapi's handlers do it: the first
//! Accept header (`*/*` when absent or empty) is split into clauses as goautoneg's ParseAccept
//! splits it, the clauses are ordered as its sort orders them, and the first clause that
//! matches an offered media type, offers tried in the handler's order, picks that type.
//! Types compare case-sensitively, `*` matches any type or subtype, and a clause's q value
//! only orders the clauses (a `q=0` clause still matches), all as upstream.
//! May use: nothing internal.

use http::{header, HeaderMap};

/// One media range of an Accept header.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Clause {
    pub(crate) kind: String,
    pub(crate) subtype: String,
    pub(crate) q: f64,
}

/// The clauses of the request's Accept header, best first.
pub(crate) fn accept_clauses(headers: &HeaderMap) -> Vec<Clause> {
    let value = headers
        .get(header::ACCEPT)
        .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
        .unwrap_or_default();
    if value.is_empty() {
        parse_accept("*/*")
    } else {
        parse_accept(&value)
    }
}

/// Splits an Accept header into clauses: comma-separated media ranges, space-trimmed, each
/// `type/subtype` (or a lone `*`) with `;`-separated parameters of which only `q` counts. A
/// range with no subtype, or a second `/`, is dropped; a `q` that does not parse counts as 0.
pub(crate) fn parse_accept(header: &str) -> Vec<Clause> {
    let mut clauses = Vec::new();
    for part in header.split(',') {
        let part = part.trim_matches(' ');
        let (range, params) = part.split_once(';').unwrap_or((part, ""));
        let (kind, rest) = range.split_once('/').unwrap_or((range, ""));
        let kind = kind.trim_matches(' ');
        let subtype = if rest.is_empty() {
            if kind != "*" {
                continue;
            }
            "*"
        } else {
            match rest.split_once('/') {
                Some((_, more)) if !more.is_empty() => continue,
                Some((sub, _)) => sub.trim_matches(' '),
                None => rest.trim_matches(' '),
            }
        };
        let mut q = 1.0;
        for param in params.split(';') {
            let Some((name, value)) = param.split_once('=') else {
                continue;
            };
            if value.is_empty() {
                continue;
            }
            // A second `=` drops the parameter unless nothing follows it.
            let value = match value.split_once('=') {
                Some((_, more)) if !more.is_empty() => continue,
                Some((v, _)) => v,
                None => value,
            };
            if name.trim_matches(' ') == "q" {
                // strconv.ParseFloat(value, 32): the value untrimmed, 0 when it is no number.
                q = value.parse::<f32>().map(f64::from).unwrap_or(0.0);
            }
        }
        clauses.push(Clause {
            kind: kind.to_string(),
            subtype: subtype.to_string(),
            q,
        });
    }
    sort(&mut clauses);
    clauses
}

/// Whether the request accepts a gzip-encoded response, as gziphandler (which wraps
/// kube-openapi's /openapi/v2 handler) decides: the first Accept-Encoding header split at
/// commas, each coding lower-cased with its `q` (1 when absent, 0 when it does not parse,
/// clamped to 0..1; as there, only a `q` in the last parameter counts), and gzip accepted when
/// its q is above 0.
pub(crate) fn accepts_gzip(headers: &HeaderMap) -> bool {
    let Some(value) = headers.get(header::ACCEPT_ENCODING) else {
        return false;
    };
    let value = String::from_utf8_lossy(value.as_bytes());
    let mut gzip_q = 0.0;
    for coding in value.split(',') {
        let mut name = String::new();
        let mut q = 1.0;
        for (n, part) in coding.split(';').enumerate() {
            let part = part.trim();
            q = 1.0;
            if n == 0 {
                name = part.to_ascii_lowercase();
            } else if let Some(v) = part.strip_prefix("q=") {
                q = v.parse::<f64>().unwrap_or(0.0).clamp(0.0, 1.0);
            }
        }
        // Later entries for the same coding replace earlier ones (a map in gziphandler).
        if name == "gzip" {
            gzip_q = q;
        }
    }
    gzip_q > 0.0
}

/// goautoneg's ordering: a clause goes before another when its q is higher, or its type or
/// subtype is concrete where the other's is `*`. That is no strict order, so the result
/// depends on the algorithm: Go's sort.Sort insertion-sorts lists of up to 12 elements, which
/// this does for every length (longer Accept lists, which Go sorts otherwise, may order ties
/// differently).
fn sort(clauses: &mut [Clause]) {
    let less = |a: &Clause, b: &Clause| {
        a.q > b.q || (a.kind != "*" && b.kind == "*") || (a.subtype != "*" && b.subtype == "*")
    };
    for i in 1..clauses.len() {
        let mut j = i;
        while j > 0 && less(&clauses[j], &clauses[j - 1]) {
            clauses.swap(j, j - 1);
            j -= 1;
        }
    }
}

/// What the first clause that matches any offer picks: for each clause in order, the first of
/// `offers` (full media types with what each stands for) whose type and subtype it accepts.
pub(crate) fn choose<T: Copy>(clauses: &[Clause], offers: &[(&str, T)]) -> Option<T> {
    clauses.iter().find_map(|c| {
        offers.iter().find_map(|(media, what)| {
            let (kind, subtype) = media.split_once('/')?;
            let kind_ok = c.kind == kind || c.kind == "*";
            let subtype_ok = c.subtype == subtype || c.subtype == "*";
            (kind_ok && subtype_ok).then_some(*what)
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ranges(header: &str) -> Vec<String> {
        parse_accept(header)
            .into_iter()
            .map(|c| format!("{}/{};{}", c.kind, c.subtype, c.q))
            .collect()
    }

    fn gzip(value: &str) -> bool {
        let mut headers = HeaderMap::new();
        headers.insert(header::ACCEPT_ENCODING, value.parse().unwrap());
        accepts_gzip(&headers)
    }

    #[test]
    fn accepts_gzip_like_gziphandler() {
        assert!(!accepts_gzip(&HeaderMap::new()));
        assert!(gzip("gzip"));
        assert!(gzip("deflate, GZIP"));
        assert!(gzip(" gzip ; q=0.5"));
        assert!(!gzip("gzip;q=0"));
        assert!(!gzip("gzip;q=x"));
        assert!(!gzip("deflate, br"));
        // `*` does not stand for gzip there; the last entry for a coding wins.
        assert!(!gzip("*"));
        assert!(!gzip("gzip, gzip;q=0"));
        assert!(gzip("gzip;q=0, gzip"));
        // Only a q in the last parameter counts.
        assert!(gzip("gzip;q=0;level=1"));
    }

    #[test]
    fn parses_like_goautoneg() {
        assert_eq!(ranges("*/*"), ["*/*;1"]);
        assert_eq!(ranges("*"), ["*/*;1"]);
        assert_eq!(ranges("application"), Vec::<String>::new());
        assert_eq!(ranges("a/b/c, ,text/"), Vec::<String>::new());
        assert_eq!(
            ranges(" application/json ; q=0.5"),
            ["application/json;0.5"]
        );
        // An untrimmed or malformed q is 0; a parameter with two `=` is ignored.
        assert_eq!(ranges("a/b;q= 0.5"), ["a/b;0"]);
        assert_eq!(ranges("a/b;q=x"), ["a/b;0"]);
        assert_eq!(ranges("a/b;q=0.5=1"), ["a/b;1"]);
        assert_eq!(ranges("a/b;q=0.5="), ["a/b;0.5"]);
        assert_eq!(ranges("a/b;v=1;q=0.2"), ["a/b;0.20000000298023224"]);
        // Higher q first, or concrete before a wildcard; otherwise the header's order. Either
        // rule can move a clause forward, so a concrete subtype passes a wildcard of higher q.
        assert_eq!(
            ranges("*/*;q=0.25, application/*, text/plain;q=0.5, application/json"),
            [
                "application/json;1",
                "text/plain;0.5",
                "application/*;1",
                "*/*;0.25"
            ]
        );
        assert_eq!(ranges("b/c, a/d"), ["b/c;1", "a/d;1"]);
    }

    #[test]
    fn chooses_the_first_offer_of_the_first_matching_clause() {
        let offers = [("application/json", 1), ("application/x+protobuf", 2)];
        let pick = |h: &str| choose(&parse_accept(h), &offers);
        assert_eq!(pick("*/*"), Some(1));
        assert_eq!(pick("application/*"), Some(1));
        assert_eq!(pick("application/x+protobuf, application/json"), Some(2));
        assert_eq!(
            pick("application/json;q=0.5, application/x+protobuf"),
            Some(2)
        );
        assert_eq!(pick("text/plain, */*;q=0.1"), Some(1));
        assert_eq!(pick("application/json;q=0"), Some(1));
        assert_eq!(pick("Application/JSON"), None);
        assert_eq!(pick("text/plain"), None);
        assert_eq!(pick("bogus"), None);
    }

    #[test]
    fn missing_or_empty_accept_is_anything() {
        let mut h = HeaderMap::new();
        assert_eq!(accept_clauses(&h), parse_accept("*/*"));
        h.insert(header::ACCEPT, http::HeaderValue::from_static(""));
        assert_eq!(accept_clauses(&h), parse_accept("*/*"));
    }
}
