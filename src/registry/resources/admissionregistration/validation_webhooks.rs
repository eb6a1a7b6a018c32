//! ValidateValidatingWebhookConfiguration, ValidateMutatingWebhookConfiguration and their
//! update forms (pkg/apis/admissionregistration/validation): each webhook's name, rules,
//! policies, side effects, timeout, selectors, client config and match conditions, its
//! admissionReviewVersions, and unique names. An update relaxes a rule the stored object
//! already breaks, as upstream's validationOptions do. May use: registry (error, apiextensions'
//! webhook URL checks), api.

use super::validation::{
    child, dns1035, duplicate, fully_qualified_name, go_slice, has_invalid_label_value_in_selector,
    items, label_selector, one_of, opt_str, strs, validate_match_conditions,
    validate_rule_with_operations, FAILURE_POLICIES, MATCH_POLICIES, REINVOCATION_POLICIES,
};
use crate::registry::apiextensions::validation::{validate_webhook_service, validate_webhook_url};
use crate::registry::error::FieldError;
use crate::registry::strategy::str_at;
use serde_json::Value;

/// AcceptedAdmissionReviewVersions.
const ACCEPTED_REVIEW_VERSIONS: [&str; 2] = ["v1", "v1beta1"];
/// noSideEffectClasses.List().
const NO_SIDE_EFFECTS: [&str; 2] = ["None", "NoneOnDryRun"];
/// supportedSideEffectClasses.List().
const SIDE_EFFECTS: [&str; 4] = ["None", "NoneOnDryRun", "Some", "Unknown"];

/// upstream's validationOptions, as far as webhooks use them.
#[derive(Debug, Clone, Copy)]
pub(super) struct Options {
    ignore_match_conditions: bool,
    require_no_side_effects: bool,
    require_recognized_review_version: bool,
    require_unique_names: bool,
    allow_invalid_label_values: bool,
}

impl Options {
    /// The options of a create: every rule strict.
    pub(super) const CREATE: Options = Options {
        ignore_match_conditions: false,
        require_no_side_effects: true,
        require_recognized_review_version: true,
        require_unique_names: true,
        allow_invalid_label_values: false,
    };

    /// The options of an update of `old` to `new` (Validate*WebhookConfigurationUpdate).
    pub(super) fn update(new: &Value, old: &Value) -> Options {
        let (new_hooks, old_hooks) = (items(new, "webhooks"), items(old, "webhooks"));
        let same_conditions = new_hooks.len() == old_hooks.len()
            && new_hooks
                .iter()
                .zip(old_hooks)
                .all(|(n, o)| child(n, "matchConditions") == child(o, "matchConditions"));
        let mut names: Vec<&str> = Vec::new();
        let unique = old_hooks.iter().all(|h| {
            let name = str_at(h, "/name");
            let fresh = !names.contains(&name);
            names.push(name);
            fresh
        });
        Options {
            ignore_match_conditions: same_conditions,
            require_no_side_effects: old_hooks
                .iter()
                .all(|h| opt_str(h, "sideEffects").is_some_and(|s| NO_SIDE_EFFECTS.contains(&s))),
            require_recognized_review_version: old_hooks.iter().all(|h| {
                let versions = strs(h, "admissionReviewVersions");
                versions.is_empty()
                    || versions
                        .iter()
                        .any(|v| ACCEPTED_REVIEW_VERSIONS.contains(v))
            }),
            require_unique_names: unique,
            allow_invalid_label_values: has_invalid_label_value_in_selector(old_hooks),
        }
    }
}

/// validateAdmissionReviewVersions.
fn validate_review_versions(
    versions: &[&str],
    require_recognized: bool,
    path: &str,
) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let accepted = ACCEPTED_REVIEW_VERSIONS.join(", ");
    if versions.is_empty() {
        errs.push(FieldError::required(
            path,
            format!("must specify one of {accepted}"),
        ));
        return errs;
    }
    let mut seen: Vec<&str> = Vec::new();
    let mut has_accepted = false;
    for (i, v) in versions.iter().copied().enumerate() {
        let at = format!("{path}[{i}]");
        if seen.contains(&v) {
            errs.push(FieldError::invalid(at, v, "duplicate version"));
            continue;
        }
        seen.push(v);
        errs.extend(dns1035(&at, v));
        has_accepted |= ACCEPTED_REVIEW_VERSIONS.contains(&v);
    }
    if require_recognized && !has_accepted {
        errs.push(FieldError::invalid_raw(
            path,
            go_slice("string", versions),
            format!("must include at least one of {accepted}"),
        ));
    }
    errs
}

/// The client config: exactly one of url (https only) and service.
fn validate_client_config(hook: &Value, path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let cc = child(hook, "clientConfig").unwrap_or(&Value::Null);
    let at = format!("{path}.clientConfig");
    match (opt_str(cc, "url"), child(cc, "service")) {
        (Some(url), None) => validate_webhook_url(&format!("{at}.url"), url, &mut errs),
        (None, Some(svc)) => {
            let port = svc.get("port").and_then(Value::as_i64).unwrap_or(443);
            validate_webhook_service(
                &format!("{at}.service"),
                str_at(svc, "/namespace"),
                str_at(svc, "/name"),
                opt_str(svc, "path"),
                i32::try_from(port).unwrap_or(0),
                &mut errs,
            );
        }
        _ => errs.push(FieldError::required(
            at,
            "exactly one of url or service is required",
        )),
    }
    errs
}

/// validateValidatingWebhook / validateMutatingWebhook.
fn validate_webhook(hook: &Value, mutating: bool, opts: Options, path: &str) -> Vec<FieldError> {
    let mut errs = fully_qualified_name(&format!("{path}.name"), str_at(hook, "/name"));
    for (i, rule) in items(hook, "rules").iter().enumerate() {
        errs.extend(validate_rule_with_operations(
            rule,
            &format!("{path}.rules[{i}]"),
        ));
    }
    errs.extend(one_of(hook, "failurePolicy", path, &FAILURE_POLICIES));
    errs.extend(one_of(hook, "matchPolicy", path, &MATCH_POLICIES));
    let allowed: &[&str] = if opts.require_no_side_effects {
        &NO_SIDE_EFFECTS
    } else {
        &SIDE_EFFECTS
    };
    match opt_str(hook, "sideEffects") {
        None => errs.push(FieldError::required(
            format!("{path}.sideEffects"),
            format!("must specify one of {}", allowed.join(", ")),
        )),
        Some(s) if !allowed.contains(&s) => errs.push(FieldError::not_supported(
            format!("{path}.sideEffects"),
            s,
            allowed,
        )),
        Some(_) => {}
    }
    if let Some(t) = hook.get("timeoutSeconds").and_then(Value::as_i64) {
        if !(1..=30).contains(&t) {
            errs.push(FieldError::invalid_raw(
                format!("{path}.timeoutSeconds"),
                t,
                "the timeout value must be between 1 and 30 seconds",
            ));
        }
    }
    for key in ["namespaceSelector", "objectSelector"] {
        errs.extend(label_selector(
            hook,
            key,
            path,
            opts.allow_invalid_label_values,
        ));
    }
    if mutating {
        errs.extend(one_of(
            hook,
            "reinvocationPolicy",
            path,
            &REINVOCATION_POLICIES,
        ));
    }
    errs.extend(validate_client_config(hook, path));
    errs.extend(validate_match_conditions(
        items(hook, "matchConditions"),
        opts.ignore_match_conditions,
        &format!("{path}.matchConditions"),
    ));
    errs
}

/// validate{Validating,Mutating}WebhookConfiguration without ObjectMeta (the store checks it).
pub(super) fn validate_configuration(
    obj: &Value,
    mutating: bool,
    opts: Options,
) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let mut names: Vec<&str> = Vec::new();
    for (i, hook) in items(obj, "webhooks").iter().enumerate() {
        let path = format!("webhooks[{i}]");
        errs.extend(validate_webhook(hook, mutating, opts, &path));
        errs.extend(validate_review_versions(
            &strs(hook, "admissionReviewVersions"),
            opts.require_recognized_review_version,
            &format!("{path}.admissionReviewVersions"),
        ));
        let name = str_at(hook, "/name");
        if opts.require_unique_names && !name.is_empty() {
            if names.contains(&name) {
                errs.push(duplicate(format!("{path}.name"), name));
            } else {
                names.push(name);
            }
        }
    }
    errs
}
