//! Validation shared by every resource: ObjectMeta (ValidateObjectMeta in k8s), names,
//! labels, annotations and finalizers, with kube-apiserver's field paths and messages.
//! May use: api.

use super::error::FieldError;
use crate::api::selectors::{
    is_dns1123_label, label_value_errors, qualified_name_errors, DNS1123_LABEL_MSG,
    DNS1123_SUBDOMAIN_MSG,
};
use crate::api::At;
use serde_json::Value;

/// Which name syntax a resource requires.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum NameRule {
    /// DNS-1123 subdomain (most resources).
    Subdomain,
    /// DNS-1123 label (namespaces).
    Label,
    /// DNS-1035 label (services: ValidateServiceName).
    Dns1035Label,
}

/// Total size limit of annotations (TotalAnnotationSizeLimitB).
const ANNOTATIONS_LIMIT: usize = 256 * 1024;

/// The problems of a name under `rule` (empty when valid).
pub(crate) fn name_errors(name: &str, rule: NameRule) -> Vec<String> {
    let mut errs = Vec::new();
    match rule {
        NameRule::Subdomain => {
            if name.len() > 253 {
                errs.push("must be no more than 253 characters".to_string());
            }
            if !name.split('.').all(is_dns1123_label) {
                errs.push(DNS1123_SUBDOMAIN_MSG.to_string());
            }
        }
        NameRule::Label => {
            if name.len() > 63 {
                errs.push("must be no more than 63 characters".to_string());
            }
            let ok_shape = !name.is_empty()
                && name
                    .bytes()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'-')
                && name.as_bytes()[0].is_ascii_alphanumeric()
                && name.as_bytes()[name.len() - 1].is_ascii_alphanumeric();
            if !ok_shape {
                errs.push(DNS1123_LABEL_MSG.to_string());
            }
        }
        NameRule::Dns1035Label => errs = dns1035_label_errors(name),
    }
    errs
}

const DNS1035_LABEL_MSG: &str = "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')";

/// IsDNS1035Label.
pub(crate) fn dns1035_label_errors(v: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if v.len() > 63 {
        errs.push("must be no more than 63 characters".to_string());
    }
    let b = v.as_bytes();
    let ok = !b.is_empty()
        && b[0].is_ascii_lowercase()
        && b[b.len() - 1].is_ascii_alphanumeric()
        && b.iter()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-');
    if !ok {
        errs.push(DNS1035_LABEL_MSG.to_string());
    }
    errs
}

fn str_at<'a>(obj: &'a Value, path: &[&str]) -> Option<&'a str> {
    let mut cur = obj;
    for p in path {
        cur = cur.get(p)?;
    }
    cur.as_str()
}

/// ValidateObjectMeta: name, namespace, labels, annotations, finalizers.
pub(crate) fn validate_object_meta(
    obj: &Value,
    namespaced: bool,
    rule: NameRule,
) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let name = str_at(obj, &["metadata", "name"]).unwrap_or("");
    if name.is_empty() {
        errs.push(FieldError::required(
            "metadata.name",
            "name or generateName is required",
        ));
    } else {
        for e in name_errors(name, rule) {
            errs.push(FieldError::invalid("metadata.name", name, e));
        }
    }
    let namespace = str_at(obj, &["metadata", "namespace"]).unwrap_or("");
    if namespaced {
        if namespace.is_empty() {
            errs.push(FieldError::required("metadata.namespace", ""));
        } else {
            for e in name_errors(namespace, NameRule::Label) {
                errs.push(FieldError::invalid("metadata.namespace", namespace, e));
            }
        }
    } else if !namespace.is_empty() {
        errs.push(FieldError::forbidden(
            "metadata.namespace",
            "not allowed on this type",
        ));
    }
    errs.extend(validate_labels(
        obj.at("/metadata/labels"),
        "metadata.labels",
    ));
    errs.extend(validate_annotations(
        obj.at("/metadata/annotations"),
        "metadata.annotations",
    ));
    if let Some(Value::Array(finalizers)) = obj.at("/metadata/finalizers") {
        for (i, f) in finalizers.iter().enumerate() {
            let f = f.as_str().unwrap_or("");
            for e in qualified_name_errors(f) {
                errs.push(FieldError::invalid(
                    format!("metadata.finalizers[{i}]"),
                    f,
                    e,
                ));
            }
        }
        // ValidateFinalizers: the garbage collector's two finalizers exclude each other.
        use crate::api::well_known::{FINALIZER_FOREGROUND, FINALIZER_ORPHAN};
        if finalizers.iter().any(|f| f == FINALIZER_ORPHAN)
            && finalizers.iter().any(|f| f == FINALIZER_FOREGROUND)
        {
            let listed: Vec<String> = finalizers
                .iter()
                .map(|f| super::error::quote(f.as_str().unwrap_or("")))
                .collect();
            errs.push(FieldError::invalid_raw(
                "metadata.finalizers",
                format!("[]string{{{}}}", listed.join(", ")),
                "finalizer orphan and foregroundDeletion cannot be both set",
            ));
        }
    }
    errs
}

/// ValidatePathSegmentName (apimachinery pkg/api/validation/path) without a prefix: names
/// that need only be usable as one segment of a URL path (RBAC names, a policy binding's
/// paramRef name).
pub(crate) fn path_segment_errors(name: &str) -> Vec<String> {
    for illegal in [".", ".."] {
        if name == illegal {
            return vec![format!("may not be '{illegal}'")];
        }
    }
    ["/", "%"]
        .into_iter()
        .filter(|c| name.contains(c))
        .map(|c| format!("may not contain '{c}'"))
        .collect()
}

/// ValidateLabelSelector of metav1 validation; `allow_invalid_values` is
/// AllowInvalidLabelValueInSelector.
pub(crate) fn validate_label_selector(
    sel: &Value,
    allow_invalid_values: bool,
    path: &str,
) -> Vec<FieldError> {
    let mut errs = validate_labels(sel.get("matchLabels"), &format!("{path}.matchLabels"));
    let exprs = sel.get("matchExpressions").and_then(Value::as_array);
    for (i, req) in exprs.into_iter().flatten().enumerate() {
        let at = format!("{path}.matchExpressions[{i}]");
        let values: Vec<&str> = req
            .get("values")
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        match str_at(req, &["operator"]).unwrap_or("") {
            "In" | "NotIn" if values.is_empty() => errs.push(FieldError::required(
                format!("{at}.values"),
                "must be specified when `operator` is 'In' or 'NotIn'",
            )),
            "Exists" | "DoesNotExist" if !values.is_empty() => errs.push(FieldError::forbidden(
                format!("{at}.values"),
                "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
            )),
            "In" | "NotIn" | "Exists" | "DoesNotExist" => {}
            op => errs.push(FieldError::invalid(
                format!("{at}.operator"),
                op,
                "not a valid selector operator",
            )),
        }
        let key = str_at(req, &["key"]).unwrap_or("");
        for e in qualified_name_errors(key) {
            errs.push(FieldError::invalid(format!("{at}.key"), key, e));
        }
        if !allow_invalid_values {
            for (j, v) in values.iter().enumerate() {
                for e in label_value_errors(v) {
                    errs.push(FieldError::invalid(format!("{at}.values[{j}]"), v, e));
                }
            }
        }
    }
    errs
}

/// ValidateLabels on a `map[string]string` at `field`.
pub(crate) fn validate_labels(labels: Option<&Value>, field: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if let Some(Value::Object(labels)) = labels {
        for (k, v) in labels {
            for e in qualified_name_errors(k) {
                errs.push(FieldError::invalid(field, k, e));
            }
            let v = v.as_str().unwrap_or("");
            for e in label_value_errors(v) {
                errs.push(FieldError::invalid(field, v, e));
            }
        }
    }
    errs
}

/// ValidateAnnotations on a `map[string]string` at `field`: qualified-name keys, 256 KiB in all.
pub(crate) fn validate_annotations(annotations: Option<&Value>, field: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if let Some(Value::Object(annotations)) = annotations {
        let mut total = 0;
        for (k, v) in annotations {
            for e in qualified_name_errors(&k.to_ascii_lowercase()) {
                errs.push(FieldError::invalid(field, k, e));
            }
            total += k.len() + v.as_str().map_or(0, str::len);
        }
        if total > ANNOTATIONS_LIMIT {
            errs.push(FieldError::too_long(field, ANNOTATIONS_LIMIT));
        }
    }
    errs
}

/// ValidateObjectMetaUpdate: what may not change on update (checked on top of create rules).
pub(crate) fn validate_object_meta_update(new: &Value, old: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    // Once deletion started, finalizers may only be removed (ValidateObjectMetaUpdate).
    if old.at("/metadata/deletionTimestamp").is_some() {
        let names = |v: &Value| -> Vec<String> {
            v.at("/metadata/finalizers")
                .and_then(Value::as_array)
                .map(|a| {
                    a.iter()
                        .filter_map(|f| f.as_str().map(String::from))
                        .collect()
                })
                .unwrap_or_default()
        };
        let old_f = names(old);
        for f in names(new) {
            if !old_f.contains(&f) {
                errs.push(FieldError::forbidden(
                    "metadata.finalizers",
                    format!("no new finalizers can be added if the object is being deleted, found new finalizers []string{{\"{f}\"}}"),
                ));
            }
        }
    }
    errs
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn gc_finalizers_exclude_each_other() {
        let errs = validate_object_meta(
            &json!({"metadata": {"name": "a", "finalizers": ["orphan", "foregroundDeletion"]}}),
            false,
            NameRule::Subdomain,
        );
        assert_eq!(
            errs[0].to_string(),
            "metadata.finalizers: Invalid value: []string{\"orphan\", \"foregroundDeletion\"}: finalizer orphan and foregroundDeletion cannot be both set"
        );
    }

    #[test]
    fn object_meta_errors_match_kube() {
        let errs = validate_object_meta(
            &json!({"metadata": {"name": "A_", "namespace": "default"}}),
            true,
            NameRule::Subdomain,
        );
        assert_eq!(errs.len(), 1);
        assert!(errs[0]
            .to_string()
            .starts_with("metadata.name: Invalid value: \"A_\": a lowercase RFC 1123 subdomain"));
        let errs = validate_object_meta(
            &json!({"metadata": {"namespace": "default"}}),
            true,
            NameRule::Subdomain,
        );
        assert_eq!(
            errs[0].to_string(),
            "metadata.name: Required value: name or generateName is required"
        );
        let errs = validate_object_meta(
            &json!({"metadata": {"name": "a.b"}}),
            false,
            NameRule::Label,
        );
        assert_eq!(errs.len(), 1);
        let errs = validate_object_meta(
            &json!({"metadata": {"name": "a", "namespace": "d", "labels": {"x": "bad value"}}}),
            true,
            NameRule::Subdomain,
        );
        assert_eq!(errs[0].field, "metadata.labels");
    }
}
