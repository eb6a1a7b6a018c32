//! The `Date` response header (Go's net/http sets it on every response; hyper would too),
//! set here so that it is marked sensitive: HTTP/2 then sends it as a literal that never enters
//! the connection's header table. Indexed, each second's date is added to a long-lived
//! connection's table and h2's encoder compares the header with every date the table holds
//! (up to ~60) on every response; as a literal it costs about 20 bytes more.

use http::header::{Entry, DATE};
use http::{HeaderMap, HeaderValue};
use std::cell::RefCell;
use std::time::{SystemTime, UNIX_EPOCH};

thread_local! {
    /// The last date formatted on this thread, by its second.
    static CACHED: RefCell<Option<(u64, HeaderValue)>> = const { RefCell::new(None) };
}

/// Sets `Date` to now unless the response has one (a proxied answer keeps its server's), and
/// marks it sensitive.
pub(super) fn stamp(headers: &mut HeaderMap) {
    match headers.entry(DATE) {
        Entry::Occupied(mut kept) => kept.get_mut().set_sensitive(true),
        Entry::Vacant(slot) => {
            slot.insert(now());
        }
    }
}

fn now() -> HeaderValue {
    let now = SystemTime::now();
    let second = now
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or_default();
    CACHED.with(|cached| {
        let mut cached = cached.borrow_mut();
        match &*cached {
            Some((at, value)) if *at == second => value.clone(),
            _ => {
                let mut value = HeaderValue::from_str(&httpdate::fmt_http_date(now))
                    .expect("an HTTP date is a valid header value");
                value.set_sensitive(true);
                *cached = Some((second, value.clone()));
                value
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_date_is_set_in_http_format_and_never_indexed() {
        let mut headers = HeaderMap::new();
        stamp(&mut headers);
        let date = &headers[DATE];
        assert!(date.is_sensitive());
        let parsed = httpdate::parse_http_date(date.to_str().unwrap()).unwrap();
        let skew = SystemTime::now().duration_since(parsed).unwrap();
        assert!(skew.as_secs() < 2, "{date:?}");
    }

    #[test]
    fn a_proxied_date_is_kept() {
        let mut headers = HeaderMap::new();
        headers.insert(
            DATE,
            HeaderValue::from_static("Sun, 06 Nov 1994 08:49:37 GMT"),
        );
        stamp(&mut headers);
        assert_eq!(headers[DATE], "Sun, 06 Nov 1994 08:49:37 GMT");
        assert!(headers[DATE].is_sensitive());
    }
}
