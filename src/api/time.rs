//! Server time as kube-apiserver writes a metav1.Time (RFC 3339, UTC, whole seconds).

use std::cell::RefCell;

/// The current second as a metav1.Time (`2026-12-02T15:04:05Z`). Every create and every
/// write that records managedFields asks for it, so each thread formats a second once and
/// hands out copies of that text until the second changes.
pub(crate) fn now_rfc3339() -> String {
    thread_local! {
        static LAST: RefCell<(i64, String)> = const { RefCell::new((i64::MIN, String::new())) };
    }
    let at = chrono::Utc::now();
    LAST.with_borrow_mut(|(second, text)| {
        if *second != at.timestamp() {
            *second = at.timestamp();
            *text = at.format("%Y-%m-%dT%H:%M:%SZ").to_string();
        }
        text.clone()
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn now_is_the_current_second_in_rfc3339() {
        for _ in 0..3 {
            let before = chrono::Utc::now().timestamp();
            let t = super::now_rfc3339();
            let after = chrono::Utc::now().timestamp();
            let at = chrono::DateTime::parse_from_rfc3339(&t)
                .unwrap()
                .timestamp();
            assert!((before..=after).contains(&at), "{t}");
            assert_eq!(t.len(), "2026-01-01T00:00:00Z".len(), "{t}");
            assert!(t.ends_with('Z'), "{t}");
        }
    }
}
