//! Which managedFields list a non-apply write starts from, as kube's decodeLiveOrNew picks it:
//! a subresource write keeps the stored list; `[]` or `[{}]` sent resets it; a sent list that
//! decodes replaces it; anything else (no list, `null`, an entry that does not decode) leaves
//! the stored one, so that clients unaware of managedFields cannot drop it by accident.

use serde_json::Value;

/// The list a write starts from.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Start<'a> {
    /// Tracking is reset: no entries.
    Reset,
    /// The list the request sent.
    Sent(&'a Value),
    /// The stored list (if any).
    Stored,
}

/// decodeLiveOrNew for a write of `subresource` that sent the list `sent`.
pub(super) fn start<'a>(sent: Option<&'a Value>, subresource: &str) -> Start<'a> {
    match sent {
        _ if !subresource.is_empty() => Start::Stored,
        Some(s) if is_reset(s) => Start::Reset,
        Some(s @ Value::Array(entries)) if entries.iter().all(decodes) => Start::Sent(s),
        _ => Start::Stored,
    }
}

/// isResetManagedFields: an empty list, or a list of one entry with nothing set.
fn is_reset(list: &Value) -> bool {
    let zero = |v: &Value| v.is_null() || v.as_str() == Some("");
    match list.as_array().map(Vec::as_slice) {
        Some([]) => true,
        Some([Value::Object(entry)]) => entry.values().all(zero),
        _ => false,
    }
}

/// Whether DecodeManagedFields takes the entry: operation Apply or Update, an apiVersion,
/// fieldsType FieldsV1, and fieldsV1 (when set) an object.
fn decodes(entry: &Value) -> bool {
    let s = |k: &str| entry.get(k).and_then(Value::as_str).unwrap_or_default();
    matches!(s("operation"), "Apply" | "Update")
        && !s("apiVersion").is_empty()
        && s("fieldsType") == "FieldsV1"
        && entry
            .get("fieldsV1")
            .is_none_or(|f| f.is_null() || f.is_object())
}

#[cfg(test)]
mod tests {
    use super::{start, Start};
    use serde_json::json;

    #[test]
    fn the_list_a_write_starts_from() {
        let other = json!([{"manager": "b", "operation": "Apply", "apiVersion": "v1", "fieldsType": "FieldsV1", "fieldsV1": {}}]);
        let st = Start::Stored;
        assert_eq!(start(Some(&json!([])), ""), Start::Reset);
        assert_eq!(start(Some(&json!([{}])), ""), Start::Reset);
        assert_eq!(start(Some(&json!([{"manager": ""}])), ""), Start::Reset);
        assert_eq!(start(Some(&other), ""), Start::Sent(&other));
        assert_eq!(start(Some(&other), "status"), st);
        assert_eq!(start(Some(&json!([])), "status"), st);
        assert_eq!(start(None, ""), st);
        assert_eq!(start(Some(&json!(null)), ""), st);
        for bad in [
            json!([{"manager": "b", "operation": "Bogus", "apiVersion": "v1", "fieldsType": "FieldsV1"}]),
            json!([{"manager": "b", "operation": "Update", "fieldsType": "FieldsV1"}]),
            json!([{"manager": "b", "operation": "Update", "apiVersion": "v1"}]),
            json!([{"manager": "b", "operation": "Update", "apiVersion": "v1", "fieldsType": "FieldsV1", "fieldsV1": "x"}]),
            json!([{}, {}]),
        ] {
            assert_eq!(start(Some(&bad), ""), st, "{bad}");
        }
    }

    fn cm(data: serde_json::Value) -> serde_json::Value {
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x", "namespace": "default"}, "data": data})
    }

    /// kube's TestClearManagedFieldsWithUpdateEmptyList: an update that sends `[]` (or
    /// `[{}]`) stops the tracking, and later updates do not start it again.
    #[test]
    fn a_reset_stops_tracking_until_an_apply() {
        use super::super::update_managed_fields as track;
        for reset in [json!([]), json!([{}])] {
            let mut created = cm(json!({"a": "1"}));
            track(None, &mut created, "m", "Update", "");
            assert!(created["metadata"]["managedFields"].is_array());
            let mut cleared = created.clone();
            cleared["metadata"]["managedFields"] = reset.clone();
            cleared["data"]["a"] = json!("2");
            track(Some(&created), &mut cleared, "m", "Update", "");
            assert!(
                cleared["metadata"].get("managedFields").is_none(),
                "{cleared}"
            );
            let mut later = cleared.clone();
            later["data"]["b"] = json!("3");
            track(Some(&cleared), &mut later, "other", "Update", "");
            assert!(later["metadata"].get("managedFields").is_none(), "{later}");
        }
    }

    /// A list that does not decode, or one sent to a subresource, leaves the stored list.
    #[test]
    fn lists_that_do_not_count_leave_the_stored_one() {
        use super::super::update_managed_fields as track;
        let mut created = cm(json!({"a": "1"}));
        track(None, &mut created, "m", "Update", "");
        let stored = created["metadata"]["managedFields"].clone();
        let bogus = json!([{"manager": "x", "operation": "Bogus", "apiVersion": "v1", "fieldsType": "FieldsV1"}]);
        for sub in ["", "status"] {
            let mut sent = created.clone();
            sent["metadata"]["managedFields"] = if sub.is_empty() {
                bogus.clone()
            } else {
                json!([])
            };
            track(Some(&created), &mut sent, "m", "Update", sub);
            assert_eq!(sent["metadata"]["managedFields"], stored, "{sub}: {sent}");
        }
    }
}
