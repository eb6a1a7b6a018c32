//! The building blocks of pkg/apis/admissionregistration/validation shared by webhooks,
//! policies and bindings: rules and their resources, label selectors, match conditions, CEL
//! compilation, match resources, param kinds and refs, with kube-apiserver's field paths and
//! messages. Works on the canonical JSON (the typed round trip has run, so every field has its
//! type). May use: registry (error, validation, apiextensions' CEL parse), api.

use crate::api::selectors::qualified_name_errors;
use crate::registry::apiextensions::validation::dns1035_label_errors;
use crate::registry::cel::{compile_failure, RESERVED_WORDS};
use crate::registry::error::{quote, FieldError, FieldErrorKind};
use crate::registry::strategy::str_at;
use crate::registry::validation::{
    name_errors, path_segment_errors, validate_label_selector, NameRule,
};
use serde_json::Value;

/// supportedFailurePolicies.List().
pub(super) const FAILURE_POLICIES: [&str; 2] = ["Fail", "Ignore"];
/// supportedMatchPolicies.List().
pub(super) const MATCH_POLICIES: [&str; 2] = ["Equivalent", "Exact"];
/// supportedOperations.List().
const OPERATIONS: [&str; 5] = ["*", "CONNECT", "CREATE", "DELETE", "UPDATE"];
/// validScopes.List().
const SCOPES: [&str; 3] = ["*", "Cluster", "Namespaced"];
/// supportedReinvocationPolicies.List().
pub(super) const REINVOCATION_POLICIES: [&str; 2] = ["IfNeeded", "Never"];

/// The strings of the array at `key` of `obj` (absent or null: none).
pub(super) fn strs<'a>(obj: &'a Value, key: &str) -> Vec<&'a str> {
    obj.get(key)
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

/// The entries of the array at `key` of `obj` (absent or null: none).
pub(super) fn items<'a>(obj: &'a Value, key: &str) -> &'a [Value] {
    obj.get(key)
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

/// The object at `key` of `obj`, if set (not null).
pub(super) fn child<'a>(obj: &'a Value, key: &str) -> Option<&'a Value> {
    obj.get(key).filter(|v| !v.is_null())
}

/// The string at `key` of `obj`, if set.
pub(super) fn opt_str<'a>(obj: &'a Value, key: &str) -> Option<&'a str> {
    obj.get(key).and_then(Value::as_str)
}

/// A slice of strings as Go's `%#v` prints it in an Invalid value (`[]string{"a", "b"}`);
/// `ty` is the element type's name.
pub(super) fn go_slice(ty: &str, list: &[&str]) -> String {
    let quoted: Vec<String> = list.iter().map(|s| quote(s)).collect();
    format!("[]{ty}{{{}}}", quoted.join(", "))
}

/// field.Duplicate.
pub(super) fn duplicate(field: impl Into<String>, value: &str) -> FieldError {
    FieldError {
        kind: FieldErrorKind::Duplicate,
        field: field.into(),
        value: Some(quote(value)),
        detail: String::new(),
    }
}

/// field.TooMany with a known count.
fn too_many(field: impl Into<String>, actual: usize, max: usize) -> FieldError {
    FieldError {
        kind: FieldErrorKind::TooMany,
        field: field.into(),
        value: Some(actual.to_string()),
        detail: format!("must have at most {max} items"),
    }
}

/// A field whose value must be one of `supported` when set (pointer fields: unset is fine).
pub(super) fn one_of(obj: &Value, key: &str, path: &str, supported: &[&str]) -> Vec<FieldError> {
    match opt_str(obj, key) {
        Some(v) if !supported.contains(&v) => vec![FieldError::not_supported(
            format!("{path}.{key}"),
            v,
            supported,
        )],
        _ => Vec::new(),
    }
}

/// A required enum: Required when unset, Unsupported when not one of `supported`.
pub(super) fn required_one_of(
    obj: &Value,
    key: &str,
    path: &str,
    supported: &[&str],
) -> Vec<FieldError> {
    match opt_str(obj, key) {
        None => vec![FieldError::required(format!("{path}.{key}"), "")],
        Some(_) => one_of(obj, key, path, supported),
    }
}

/// IsDNS1123Subdomain, as ValidateQualifiedName and the webhook name check print it.
fn subdomain_errors(v: &str) -> Vec<String> {
    name_errors(v, NameRule::Subdomain)
}

/// utilvalidation.IsFullyQualifiedName: a webhook's name.
pub(super) fn fully_qualified_name(path: &str, name: &str) -> Vec<FieldError> {
    if name.is_empty() {
        return vec![FieldError::required(path, "")];
    }
    let errs = subdomain_errors(name);
    if !errs.is_empty() {
        return vec![FieldError::invalid(path, name, errs.join(","))];
    }
    if name.split('.').count() < 3 {
        return vec![FieldError::invalid(
            path,
            name,
            "should be a domain with at least three segments separated by dots",
        )];
    }
    Vec::new()
}

/// apivalidation.ValidateQualifiedName.
pub(super) fn qualified_name(path: &str, value: &str) -> Vec<FieldError> {
    qualified_name_errors(value)
        .into_iter()
        .map(|e| FieldError::invalid(path, value, e))
        .collect()
}

/// IsDNS1035Label errors as Invalid values at `path`.
pub(super) fn dns1035(path: &str, value: &str) -> Vec<FieldError> {
    dns1035_label_errors(value)
        .into_iter()
        .map(|e| FieldError::invalid(path, value, e))
        .collect()
}

/// A label selector, validated strictly unless `allow_invalid_values` (LabelSelectorValidationOptions).
pub(super) fn label_selector(
    obj: &Value,
    key: &str,
    path: &str,
    allow_invalid_values: bool,
) -> Vec<FieldError> {
    child(obj, key).map_or_else(Vec::new, |sel| {
        validate_label_selector(sel, allow_invalid_values, &format!("{path}.{key}"))
    })
}

/// validateResources (subresources allowed: `pods/status`, `*/scale`, `pods/*`, `*/*`).
fn validate_resources(resources: &[&str], path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if resources.is_empty() {
        errs.push(FieldError::required(path, ""));
    }
    let mut with_wildcard_sub: Vec<&str> = Vec::new();
    let mut sub_with_wildcard_res: Vec<&str> = Vec::new();
    let (mut double_wildcard, mut single_wildcard, mut without_sub) = (false, false, false);
    for (i, res_sub) in resources.iter().copied().enumerate() {
        let at = format!("{path}[{i}]");
        if res_sub.is_empty() {
            errs.push(FieldError::required(at, ""));
            continue;
        }
        double_wildcard |= res_sub == "*/*";
        single_wildcard |= res_sub == "*";
        let Some((res, sub)) = res_sub.split_once('/') else {
            // Upstream keeps only the last such entry's verdict.
            without_sub = res_sub != "*";
            continue;
        };
        if with_wildcard_sub.contains(&res) {
            errs.push(FieldError::invalid(
                &at,
                res_sub,
                format!("if '{res}/*' is present, must not specify {res_sub}"),
            ));
        }
        if sub_with_wildcard_res.contains(&sub) {
            errs.push(FieldError::invalid(
                &at,
                res_sub,
                format!("if '*/{sub}' is present, must not specify {res_sub}"),
            ));
        }
        if sub == "*" {
            with_wildcard_sub.push(res);
        }
        if res == "*" {
            sub_with_wildcard_res.push(sub);
        }
    }
    if resources.len() > 1 && double_wildcard {
        errs.push(FieldError::invalid_raw(
            path,
            go_slice("string", resources),
            "if '*/*' is present, must not specify other resources",
        ));
    }
    if single_wildcard && without_sub {
        errs.push(FieldError::invalid_raw(
            path,
            go_slice("string", resources),
            "if '*' is present, must not specify other resources without subresources",
        ));
    }
    errs
}

/// validateRule with subresources allowed.
fn validate_rule(rule: &Value, path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let groups = strs(rule, "apiGroups");
    if groups.is_empty() {
        errs.push(FieldError::required(format!("{path}.apiGroups"), ""));
    }
    if groups.len() > 1 && groups.contains(&"*") {
        errs.push(FieldError::invalid_raw(
            format!("{path}.apiGroups"),
            go_slice("string", &groups),
            "if '*' is present, must not specify other API groups",
        ));
    }
    let versions = strs(rule, "apiVersions");
    if versions.is_empty() {
        errs.push(FieldError::required(format!("{path}.apiVersions"), ""));
    }
    if versions.len() > 1 && versions.contains(&"*") {
        errs.push(FieldError::invalid_raw(
            format!("{path}.apiVersions"),
            go_slice("string", &versions),
            "if '*' is present, must not specify other API versions",
        ));
    }
    for (i, v) in versions.iter().enumerate() {
        if v.is_empty() {
            errs.push(FieldError::required(format!("{path}.apiVersions[{i}]"), ""));
        }
    }
    errs.extend(validate_resources(
        &strs(rule, "resources"),
        &format!("{path}.resources"),
    ));
    errs.extend(one_of(rule, "scope", path, &SCOPES));
    errs
}

/// validateRuleWithOperations.
pub(super) fn validate_rule_with_operations(rule: &Value, path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let ops = strs(rule, "operations");
    if ops.is_empty() {
        errs.push(FieldError::required(format!("{path}.operations"), ""));
    }
    if ops.len() > 1 && ops.contains(&"*") {
        errs.push(FieldError::invalid_raw(
            format!("{path}.operations"),
            go_slice("admissionregistration.OperationType", &ops),
            "if '*' is present, must not specify other operations",
        ));
    }
    for (i, op) in ops.iter().enumerate() {
        if !OPERATIONS.contains(op) {
            errs.push(FieldError::not_supported(
                format!("{path}.operations[{i}]"),
                op,
                &OPERATIONS,
            ));
        }
    }
    errs.extend(validate_rule(rule, path));
    errs
}

/// A policy's CEL expression's compile error as convertCELErrorToValidationError reports it:
/// Invalid, with `shown` (the expression as upstream hands it to the compiler) as the value.
/// Optional syntax (`.?`) is accepted, as in upstream's environment.
pub(super) fn compile(path: &str, expression: &str, shown: &str) -> Vec<FieldError> {
    invalid(path, shown, compile_failure(expression, true))
}

fn invalid(path: &str, shown: &str, why: Option<String>) -> Vec<FieldError> {
    why.map(|why| FieldError::invalid(path, shown, format!("compilation failed: {why}")))
        .into_iter()
        .collect()
}

/// The field error of a mutation's expression that does not compile, where `Object` and
/// `JSONPatch` literals are declared (a literal of another type is not).
pub(super) fn compile_mutation(path: &str, expression: &str, shown: &str) -> Vec<FieldError> {
    let why = match crate::registry::cel::parse(expression, true) {
        Ok(e) => crate::registry::cel::rewrite_structs(&e)
            .err()
            .map(|e| format!("ERROR: <input>: {e}")),
        Err(why) => Some(why),
    };
    invalid(path, shown, why)
}

/// validateMatchConditions: at most 64, unique names, each compiled (unless `ignore`, an update
/// that leaves them as they were).
pub(super) fn validate_match_conditions(
    conditions: &[Value],
    ignore: bool,
    path: &str,
) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if ignore {
        return errs;
    }
    if conditions.len() > 64 {
        errs.push(too_many(path, conditions.len(), 64));
    }
    let mut names: Vec<&str> = Vec::new();
    for (i, c) in conditions.iter().enumerate() {
        let at = format!("{path}[{i}]");
        let expression = str_at(c, "/expression").trim();
        if expression.is_empty() {
            errs.push(FieldError::required(format!("{at}.expression"), ""));
        } else {
            errs.extend(compile(&format!("{at}.expression"), expression, expression));
        }
        let name = str_at(c, "/name");
        if name.is_empty() {
            errs.push(FieldError::required(format!("{at}.name"), ""));
        } else {
            errs.extend(qualified_name(&format!("{at}.name"), name));
            if names.contains(&name) {
                errs.push(duplicate(format!("{at}.name"), name));
            } else {
                names.push(name);
            }
        }
    }
    errs
}

/// validateNamedRuleWithOperations.
fn validate_named_rule(rule: &Value, path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let mut seen: Vec<&str> = Vec::new();
    for (i, name) in strs(rule, "resourceNames").into_iter().enumerate() {
        let at = format!("{path}.resourceNames[{i}]");
        for e in path_segment_errors(name) {
            errs.push(FieldError::invalid(&at, name, e));
        }
        if seen.contains(&name) {
            errs.push(duplicate(at, name));
        } else {
            seen.push(name);
        }
    }
    errs.extend(validate_rule_with_operations(rule, path));
    errs
}

/// validateMatchResources (selectors strictly: the type came after kubernetes#99139).
pub(super) fn validate_match_resources(mr: &Value, path: &str) -> Vec<FieldError> {
    let mut errs = required_one_of(mr, "matchPolicy", path, &MATCH_POLICIES);
    for key in ["namespaceSelector", "objectSelector"] {
        match child(mr, key) {
            None => errs.push(FieldError::required(format!("{path}.{key}"), "")),
            Some(_) => errs.extend(label_selector(mr, key, path, false)),
        }
    }
    for key in ["resourceRules", "excludeResourceRules"] {
        for (i, rule) in items(mr, key).iter().enumerate() {
            errs.extend(validate_named_rule(rule, &format!("{path}.{key}[{i}]")));
        }
    }
    errs
}

/// validateParamKind.
pub(super) fn validate_param_kind(kind: &Value, path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let api_version = str_at(kind, "/apiVersion");
    let at = format!("{path}.apiVersion");
    if api_version.is_empty() {
        errs.push(FieldError::required(&at, ""));
    } else {
        // parseGroupVersion.
        let (group, version) = match api_version.matches('/').count() {
            _ if api_version == "/" => ("", ""),
            0 => ("", api_version),
            1 => api_version.split_once('/').unwrap_or(("", api_version)),
            _ => {
                errs.push(FieldError::invalid(
                    &at,
                    api_version,
                    format!("unexpected GroupVersion string: {api_version}"),
                ));
                return kind_errors(kind, path, errs);
            }
        };
        if !group.is_empty() {
            let e = subdomain_errors(group);
            if !e.is_empty() {
                errs.push(FieldError::invalid(&at, group, e.join(",")));
            }
        }
        if version.is_empty() {
            errs.push(FieldError::invalid(
                &at,
                api_version,
                "version must be specified",
            ));
        } else {
            let e = dns1035_label_errors(version);
            if !e.is_empty() {
                errs.push(FieldError::invalid(&at, version, e.join(",")));
            }
        }
    }
    kind_errors(kind, path, errs)
}

/// The `kind` half of validateParamKind.
fn kind_errors(kind: &Value, path: &str, mut errs: Vec<FieldError>) -> Vec<FieldError> {
    let k = str_at(kind, "/kind");
    if k.is_empty() {
        errs.push(FieldError::required(format!("{path}.kind"), ""));
    } else {
        let e = dns1035_label_errors(&k.to_lowercase());
        if !e.is_empty() {
            errs.push(FieldError::invalid(
                format!("{path}.kind"),
                k,
                format!(
                    "may have mixed case, but should otherwise match: {}",
                    e.join(",")
                ),
            ));
        }
    }
    errs
}

/// validateParamRef.
pub(super) fn validate_param_ref(pr: &Value, path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let name = str_at(pr, "/name");
    let selector = child(pr, "selector");
    const EXCLUSIVE: &str = "name and selector are mutually exclusive";
    if !name.is_empty() {
        for e in path_segment_errors(name) {
            errs.push(FieldError::invalid(format!("{path}.name"), name, e));
        }
        if selector.is_some() {
            errs.push(FieldError::forbidden(format!("{path}.name"), EXCLUSIVE));
        }
    }
    if selector.is_some() {
        errs.extend(label_selector(pr, "selector", path, false));
        if !name.is_empty() {
            errs.push(FieldError::forbidden(format!("{path}.selector"), EXCLUSIVE));
        }
    }
    if name.is_empty() && selector.is_none() {
        errs.push(FieldError::required(
            path,
            "one of name or selector must be specified",
        ));
    }
    match opt_str(pr, "parameterNotFoundAction") {
        None | Some("") => errs.push(FieldError::required(
            format!("{path}.parameterNotFoundAction"),
            "",
        )),
        Some("Deny" | "Allow") => {}
        Some(other) => errs.push(FieldError::not_supported(
            format!("{path}.parameterNotFoundAction"),
            other,
            &["Deny", "Allow"],
        )),
    }
    errs
}

/// isCELIdentifier.
fn is_cel_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    let first_ok = chars
        .next()
        .is_some_and(|c| c == '_' || c.is_ascii_alphabetic());
    first_ok
        && chars.all(|c| c == '_' || c.is_ascii_alphanumeric())
        && !RESERVED_WORDS.contains(&name)
}

/// validateVariable.
pub(super) fn validate_variable(v: &Value, path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let name = str_at(v, "/name");
    if name.trim().is_empty() {
        errs.push(FieldError::required(
            format!("{path}.name"),
            "name is not specified",
        ));
    } else if !is_cel_identifier(name) {
        errs.push(FieldError::invalid(
            format!("{path}.name"),
            name,
            "name is not a valid CEL identifier",
        ));
    }
    let expression = str_at(v, "/expression");
    if expression.trim().is_empty() {
        errs.push(FieldError::required(
            format!("{path}.expression"),
            "expression is not specified",
        ));
    } else {
        errs.extend(compile(
            &format!("{path}.expression"),
            expression,
            expression,
        ));
    }
    errs
}

/// The name rule of a binding's policyName (NameIsDNSSubdomain).
pub(super) fn validate_policy_name(spec: &Value, path: &str) -> Vec<FieldError> {
    let name = str_at(spec, "/policyName");
    if name.is_empty() {
        return vec![FieldError::required(format!("{path}.policyName"), "")];
    }
    subdomain_errors(name)
        .into_iter()
        .map(|e| FieldError::invalid(format!("{path}.policyName"), name, e))
        .collect()
}

/// Whether any of the selectors of `hooks` fails the strict label value rules
/// (*WebhookHasInvalidLabelValueInSelector: an update may then keep such values).
pub(super) fn has_invalid_label_value_in_selector(hooks: &[Value]) -> bool {
    hooks.iter().any(|h| {
        ["namespaceSelector", "objectSelector"]
            .iter()
            .any(|k| !label_selector(h, k, "", false).is_empty())
    })
}
