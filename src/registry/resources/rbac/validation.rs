//! pkg/apis/rbac/validation: the rules of roles, cluster roles and their bindings, with
//! kube-apiserver's field paths and messages. Works on the canonical JSON of an object (the
//! typed round trip has run, so every field has its type). May use: registry (error,
//! validation), api.

use super::GROUP;
use crate::api::At;
use crate::registry::error::{quote, FieldError, FieldErrorKind};
use crate::registry::strategy::str_at;
pub(super) use crate::registry::validation::path_segment_errors;
use crate::registry::validation::{
    name_errors, validate_label_selector, validate_object_meta, validate_object_meta_update,
    NameRule,
};
use serde_json::Value;

/// The subject kinds a binding may name, in the order upstream lists them.
const SUBJECT_KINDS: [&str; 3] = ["ServiceAccount", "User", "Group"];

/// ValidateObjectMeta with ValidateRBACName: the store's checks, but names such as
/// `system:controller:foo` (no DNS subdomain) are accepted.
fn validate_meta(obj: &Value, namespaced: bool) -> Vec<FieldError> {
    let mut errs = validate_object_meta(obj, namespaced, NameRule::Subdomain);
    // The store's name rule is not ours: its verdict on a given name is replaced by ours
    // (name errors come first, as in ValidateObjectMeta).
    errs.retain(|e| !(e.field == "metadata.name" && e.kind == FieldErrorKind::Invalid));
    let name = str_at(obj, "/metadata/name");
    let ours = path_segment_errors(name)
        .into_iter()
        .map(|e| FieldError::invalid("metadata.name", name, e));
    errs.splice(0..0, ours);
    errs
}

/// The strings of the array at `key` of `obj` (absent or null: none).
fn strings<'a>(obj: &'a Value, key: &str) -> Vec<&'a str> {
    obj.get(key)
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

/// The entries of the array at `pointer` (absent or null: none).
fn items<'a>(obj: &'a Value, pointer: &str) -> &'a [Value] {
    obj.at(pointer)
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

/// A `[]string` as Go's `%#v` prints it in an Invalid value.
fn go_strings(list: &[&str]) -> String {
    let quoted: Vec<String> = list.iter().map(|s| quote(s)).collect();
    format!("[]string{{{}}}", quoted.join(", "))
}

/// ValidatePolicyRule.
fn validate_policy_rule(rule: &Value, namespaced: bool, path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if strings(rule, "verbs").is_empty() {
        errs.push(FieldError::required(
            format!("{path}.verbs"),
            "verbs must contain at least one value",
        ));
    }
    let urls = strings(rule, "nonResourceURLs");
    if !urls.is_empty() {
        let field = format!("{path}.nonResourceURLs");
        if namespaced {
            errs.push(FieldError::invalid_raw(
                &field,
                go_strings(&urls),
                "namespaced rules cannot apply to non-resource URLs",
            ));
        }
        if ["apiGroups", "resources", "resourceNames"]
            .iter()
            .any(|k| !strings(rule, k).is_empty())
        {
            errs.push(FieldError::invalid_raw(
                &field,
                go_strings(&urls),
                "rules cannot apply to both regular resources and non-resource URLs",
            ));
        }
        return errs;
    }
    if strings(rule, "apiGroups").is_empty() {
        errs.push(FieldError::required(
            format!("{path}.apiGroups"),
            "resource rules must supply at least one api group",
        ));
    }
    if strings(rule, "resources").is_empty() {
        errs.push(FieldError::required(
            format!("{path}.resources"),
            "resource rules must supply at least one resource",
        ));
    }
    errs
}

fn validate_rules(obj: &Value, namespaced: bool) -> Vec<FieldError> {
    items(obj, "/rules")
        .iter()
        .enumerate()
        .flat_map(|(i, rule)| validate_policy_rule(rule, namespaced, &format!("rules[{i}]")))
        .collect()
}

/// ValidateRole.
pub(super) fn validate_role(obj: &Value) -> Vec<FieldError> {
    let mut errs = validate_meta(obj, true);
    errs.extend(validate_rules(obj, true));
    errs
}

/// ValidateRoleUpdate.
pub(super) fn validate_role_update(new: &Value, old: &Value) -> Vec<FieldError> {
    let mut errs = validate_role(new);
    errs.extend(validate_object_meta_update(new, old));
    errs
}

/// hasInvalidLabelValueInLabelSelector of the cluster role strategy: whether the stored
/// object's selectors fail the strict rules (an update may then keep its invalid values).
pub(super) fn has_invalid_label_value_in_selector(obj: &Value) -> bool {
    items(obj, "/aggregationRule/clusterRoleSelectors")
        .iter()
        .any(|s| !validate_label_selector(s, false, "").is_empty())
}

/// ValidateClusterRole.
pub(super) fn validate_cluster_role(obj: &Value, allow_invalid_values: bool) -> Vec<FieldError> {
    let mut errs = validate_meta(obj, false);
    errs.extend(validate_rules(obj, false));
    let Some(rule) = obj.get("aggregationRule").filter(|r| !r.is_null()) else {
        return errs;
    };
    let selectors = items(rule, "/clusterRoleSelectors");
    if selectors.is_empty() {
        errs.push(FieldError::required(
            "aggregationRule.clusterRoleSelectors",
            "at least one clusterRoleSelector required if aggregationRule is non-nil",
        ));
    }
    for (i, sel) in selectors.iter().enumerate() {
        let path = format!("aggregationRule.clusterRoleSelectors[{i}]");
        errs.extend(validate_label_selector(sel, allow_invalid_values, &path));
        // LabelSelectorAsSelector fails exactly when the strict rules do; its nil result is
        // the value upstream reports.
        if !validate_label_selector(sel, false, &path).is_empty() {
            errs.push(FieldError::invalid(path, "null", "invalid label selector."));
        }
    }
    errs
}

/// ValidateClusterRoleUpdate, with the options of the strategy's ValidateUpdate.
pub(super) fn validate_cluster_role_update(new: &Value, old: &Value) -> Vec<FieldError> {
    let mut errs = validate_cluster_role(new, has_invalid_label_value_in_selector(old));
    errs.extend(validate_object_meta_update(new, old));
    errs
}

/// ValidateRoleBindingSubject; `namespaced` for a RoleBinding's subjects.
fn validate_subject(subject: &Value, namespaced: bool, path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let name = str_at(subject, "/name");
    let api_group = str_at(subject, "/apiGroup");
    if name.is_empty() {
        errs.push(FieldError::required(format!("{path}.name"), ""));
    }
    match str_at(subject, "/kind") {
        "ServiceAccount" => {
            if !name.is_empty() {
                for e in name_errors(name, NameRule::Subdomain) {
                    errs.push(FieldError::invalid(format!("{path}.name"), name, e));
                }
            }
            if !api_group.is_empty() {
                errs.push(FieldError::not_supported(
                    format!("{path}.apiGroup"),
                    api_group,
                    &[""],
                ));
            }
            if !namespaced && str_at(subject, "/namespace").is_empty() {
                errs.push(FieldError::required(format!("{path}.namespace"), ""));
            }
        }
        "User" | "Group" => {
            if api_group != GROUP {
                errs.push(FieldError::not_supported(
                    format!("{path}.apiGroup"),
                    api_group,
                    &[GROUP],
                ));
            }
        }
        kind => errs.push(FieldError::not_supported(
            format!("{path}.kind"),
            kind,
            &SUBJECT_KINDS,
        )),
    }
    errs
}

/// ValidateRoleBinding (`cluster` false) and ValidateClusterRoleBinding (`cluster` true).
pub(super) fn validate_binding(obj: &Value, cluster: bool) -> Vec<FieldError> {
    let mut errs = validate_meta(obj, !cluster);
    let api_group = str_at(obj, "/roleRef/apiGroup");
    if api_group != GROUP {
        errs.push(FieldError::not_supported(
            "roleRef.apiGroup",
            api_group,
            &[GROUP],
        ));
    }
    let kinds: &[&str] = if cluster {
        &["ClusterRole"]
    } else {
        &["Role", "ClusterRole"]
    };
    let kind = str_at(obj, "/roleRef/kind");
    if !kinds.contains(&kind) {
        errs.push(FieldError::not_supported("roleRef.kind", kind, kinds));
    }
    let name = str_at(obj, "/roleRef/name");
    if name.is_empty() {
        errs.push(FieldError::required("roleRef.name", ""));
    } else {
        for e in path_segment_errors(name) {
            errs.push(FieldError::invalid("roleRef.name", name, e));
        }
    }
    for (i, subject) in items(obj, "/subjects").iter().enumerate() {
        errs.extend(validate_subject(
            subject,
            !cluster,
            &format!("subjects[{i}]"),
        ));
    }
    errs
}

/// ValidateRoleBindingUpdate / ValidateClusterRoleBindingUpdate: the roleRef is immutable.
pub(super) fn validate_binding_update(new: &Value, old: &Value, cluster: bool) -> Vec<FieldError> {
    let mut errs = validate_binding(new, cluster);
    errs.extend(validate_object_meta_update(new, old));
    let role_ref =
        |obj| ["apiGroup", "kind", "name"].map(|f| str_at(obj, &format!("/roleRef/{f}")));
    let [api_group, kind, name] = role_ref(new);
    if role_ref(old) != [api_group, kind, name] {
        // Upstream reports the internal rbac.RoleRef struct, printed with %#v.
        let value = format!(
            "rbac.RoleRef{{APIGroup:{}, Kind:{}, Name:{}}}",
            quote(api_group),
            quote(kind),
            quote(name)
        );
        errs.push(FieldError::invalid_raw(
            "roleRef",
            value,
            "cannot change roleRef",
        ));
    }
    errs
}
