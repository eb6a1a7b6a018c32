//! The policy half of pkg/apis/admissionregistration/validation: ValidatingAdmissionPolicy
//! (spec, and status through its subresource), MutatingAdmissionPolicy (v1beta1) and both
//! bindings, with upstream's field paths and messages. CEL expressions are parsed (see the
//! module doc of [`super`]). May use: registry (error, validation), api.

use super::validation::{
    child, compile, compile_mutation, duplicate, go_slice, items, one_of, opt_str, qualified_name,
    required_one_of, strs, validate_match_conditions, validate_match_resources,
    validate_param_kind, validate_param_ref, validate_policy_name, validate_variable,
    FAILURE_POLICIES, REINVOCATION_POLICIES,
};
use crate::api::selectors::qualified_name_errors;
use crate::registry::error::{quote, FieldError};
use crate::registry::strategy::{name_of, str_at};
use serde_json::Value;

/// maxAuditAnnotations.
const MAX_AUDIT_ANNOTATIONS: usize = 20;
/// maxAuditAnnotationValueExpressionLength.
const MAX_VALUE_EXPRESSION_LEN: usize = 5 * 1024;
/// supportedValidationPolicyReason.List().
const VALIDATION_REASONS: [&str; 3] = ["Forbidden", "Invalid", "RequestEntityTooLarge"];
/// validValidationActions.List().
const VALIDATION_ACTIONS: [&str; 3] = ["Audit", "Deny", "Warn"];
/// supportedMutatingOperations.List(): a mutation applies to creates and updates only.
const MUTATING_OPERATIONS: [&str; 4] = ["*", "CONNECT", "CREATE", "UPDATE"];
/// The patch types of a mutation.
const PATCH_TYPES: [&str; 2] = ["ApplyConfiguration", "JSONPatch"];

/// The spec of `obj` (null when absent).
fn spec(obj: &Value) -> &Value {
    obj.get("spec").unwrap_or(&Value::Null)
}

/// ignore*AdmissionPolicyMatchConditions: an update that changes neither paramKind nor the
/// match conditions does not check them again.
pub(super) fn same_match_conditions(new: &Value, old: &Value) -> bool {
    let (n, o) = (spec(new), spec(old));
    child(n, "paramKind") == child(o, "paramKind")
        && child(n, "matchConditions") == child(o, "matchConditions")
}

/// The parts both policy kinds share: failurePolicy, paramKind, matchConstraints (with at
/// least one resource rule), matchConditions and variables.
fn validate_policy_common(spec: &Value, ignore_match_conditions: bool) -> Vec<FieldError> {
    let mut errs = required_one_of(spec, "failurePolicy", "spec", &FAILURE_POLICIES);
    if let Some(kind) = child(spec, "paramKind") {
        errs.extend(validate_param_kind(kind, "spec.paramKind"));
    }
    match child(spec, "matchConstraints") {
        None => errs.push(FieldError::required("spec.matchConstraints", "")),
        Some(mc) => {
            errs.extend(validate_match_resources(mc, "spec.matchConstraints"));
            if items(mc, "resourceRules").is_empty() {
                errs.push(FieldError::required(
                    "spec.matchConstraints.resourceRules",
                    "",
                ));
            }
        }
    }
    errs.extend(validate_match_conditions(
        items(spec, "matchConditions"),
        ignore_match_conditions,
        "spec.matchConditions",
    ));
    for (i, v) in items(spec, "variables").iter().enumerate() {
        errs.extend(validate_variable(v, &format!("spec.variables[{i}]")));
    }
    errs
}

/// validateValidation.
fn validate_validation(v: &Value, path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
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
    let message_expression = str_at(v, "/messageExpression");
    if !message_expression.is_empty() && message_expression.trim().is_empty() {
        errs.push(FieldError::invalid(
            format!("{path}.messageExpression"),
            message_expression,
            "must be non-empty if specified",
        ));
    } else if !message_expression.trim().is_empty() {
        errs.extend(compile(
            &format!("{path}.messageExpression"),
            message_expression,
            message_expression,
        ));
    }
    let message = str_at(v, "/message");
    if !message.is_empty() && message.trim().is_empty() {
        errs.push(FieldError::invalid(
            format!("{path}.message"),
            message,
            "message must be non-empty if specified",
        ));
    } else if message.trim().contains(['\n', '\r']) {
        errs.push(FieldError::invalid(
            format!("{path}.message"),
            message,
            "message must not contain line breaks",
        ));
    }
    errs.extend(one_of(v, "reason", path, &VALIDATION_REASONS));
    errs
}

/// validateAuditAnnotation; `policy` is the policy's name (the key's prefix).
fn validate_audit_annotation(a: &Value, policy: &str, path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let key = str_at(a, "/key");
    if policy.is_empty() {
        errs.push(FieldError::invalid(
            format!("{path}.key"),
            key,
            "requires metadata.name be non-empty",
        ));
    } else {
        errs.extend(qualified_name(
            &format!("{path}.key"),
            &format!("{policy}/{key}"),
        ));
    }
    let value = str_at(a, "/valueExpression");
    let trimmed = value.trim();
    let at = format!("{path}.valueExpression");
    if trimmed.is_empty() {
        errs.push(FieldError::required(at, "valueExpression is not specified"));
    } else if trimmed.len() > MAX_VALUE_EXPRESSION_LEN {
        errs.push(FieldError::required(
            at,
            format!("must not exceed {MAX_VALUE_EXPRESSION_LEN} bytes in length"),
        ));
    } else {
        errs.extend(compile(&at, trimmed, value));
    }
    errs
}

/// Go's `%#v` of audit annotations, the value upstream reports for too many of them.
fn go_audit_annotations(list: &[Value]) -> String {
    let each: Vec<String> = list
        .iter()
        .map(|a| {
            format!(
                "admissionregistration.AuditAnnotation{{Key:{}, ValueExpression:{}}}",
                quote(str_at(a, "/key")),
                quote(str_at(a, "/valueExpression"))
            )
        })
        .collect();
    format!(
        "[]admissionregistration.AuditAnnotation{{{}}}",
        each.join(", ")
    )
}

/// validateValidatingAdmissionPolicySpec (ObjectMeta is the store's).
pub(super) fn validate_validating_policy(
    obj: &Value,
    ignore_match_conditions: bool,
) -> Vec<FieldError> {
    let spec = spec(obj);
    let mut errs = validate_policy_common(spec, ignore_match_conditions);
    let validations = items(spec, "validations");
    let annotations = items(spec, "auditAnnotations");
    if validations.is_empty() && annotations.is_empty() {
        for key in ["validations", "auditAnnotations"] {
            errs.push(FieldError::required(
                format!("spec.{key}"),
                "validations or auditAnnotations must contain at least one item",
            ));
        }
        return errs;
    }
    for (i, v) in validations.iter().enumerate() {
        errs.extend(validate_validation(v, &format!("spec.validations[{i}]")));
    }
    if annotations.len() > MAX_AUDIT_ANNOTATIONS {
        errs.push(FieldError::invalid_raw(
            "spec.auditAnnotations",
            go_audit_annotations(annotations),
            format!("must not have more than {MAX_AUDIT_ANNOTATIONS} auditAnnotations"),
        ));
    }
    let mut keys: Vec<&str> = Vec::new();
    for (i, a) in annotations.iter().enumerate() {
        let path = format!("spec.auditAnnotations[{i}]");
        errs.extend(validate_audit_annotation(a, name_of(obj), &path));
        let key = str_at(a, "/key");
        if keys.contains(&key) {
            errs.push(duplicate(format!("{path}.key"), key));
        }
        keys.push(key);
    }
    errs
}

/// "It is only possible to mutate create and update requests": every operation of the
/// resource rules of a mutating policy or binding (the path carries no index, as upstream's).
fn validate_mutating_operations(mr: &Value, path: &str) -> Vec<FieldError> {
    items(mr, "resourceRules")
        .iter()
        .flat_map(|r| strs(r, "operations"))
        .filter(|op| !MUTATING_OPERATIONS.contains(op))
        .map(|op| FieldError::not_supported(path, op, &MUTATING_OPERATIONS))
        .collect()
}

/// validateApplyConfiguration / validateJSONPatch: the expression the patch type selects.
fn validate_patch(patch: &Value, path: &str) -> Vec<FieldError> {
    let expression = str_at(patch, "/expression").trim();
    if expression.is_empty() {
        return vec![FieldError::required(format!("{path}.expression"), "")];
    }
    compile_mutation(&format!("{path}.expression"), expression, expression)
}

/// validateMutation: the patchType union.
fn validate_mutation(m: &Value, path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let apply = child(m, "applyConfiguration");
    let json_patch = child(m, "jsonPatch");
    let one = |set: Option<&Value>, key: &str, kind: &str, errs: &mut Vec<FieldError>| match set {
        None => errs.push(FieldError::required(
            format!("{path}.{key}"),
            format!("must be specified when patchType is {kind}"),
        )),
        Some(p) => errs.extend(validate_patch(p, &format!("{path}.{key}"))),
    };
    let other = |set: Option<&Value>, key: &str, kind: &str, errs: &mut Vec<FieldError>| {
        if set.is_some() {
            errs.push(FieldError::invalid(
                format!("{path}.{key}"),
                &format!("{{{key}}}"),
                format!("must not be specified when patchType is {kind}"),
            ));
        }
    };
    match str_at(m, "/patchType") {
        "JSONPatch" => {
            one(json_patch, "jsonPatch", "JSONPatch", &mut errs);
            other(apply, "applyConfiguration", "JSONPatch", &mut errs);
        }
        "ApplyConfiguration" => {
            one(apply, "applyConfiguration", "ApplyConfiguration", &mut errs);
            other(json_patch, "jsonPatch", "ApplyConfiguration", &mut errs);
        }
        "" => errs.push(FieldError::required(format!("{path}.patchType"), "")),
        t => errs.push(FieldError::not_supported(
            format!("{path}.patchType"),
            t,
            &PATCH_TYPES,
        )),
    }
    errs
}

/// validateMutatingAdmissionPolicySpec (ObjectMeta is the store's).
pub(super) fn validate_mutating_policy(
    obj: &Value,
    ignore_match_conditions: bool,
) -> Vec<FieldError> {
    let spec = spec(obj);
    let mut errs = validate_policy_common(spec, ignore_match_conditions);
    if let Some(mc) = child(spec, "matchConstraints") {
        errs.extend(validate_mutating_operations(
            mc,
            "spec.matchConstraints.resourceRules.operations",
        ));
    }
    let mutations = items(spec, "mutations");
    if mutations.is_empty() {
        errs.push(FieldError::required(
            "spec.mutations",
            "mutations must contain at least one item",
        ));
    }
    for (i, m) in mutations.iter().enumerate() {
        errs.extend(validate_mutation(m, &format!("spec.mutations[{i}]")));
    }
    errs.extend(required_one_of(
        spec,
        "reinvocationPolicy",
        "spec",
        &REINVOCATION_POLICIES,
    ));
    errs
}

/// validateValidationActions.
fn validate_validation_actions(actions: &[&str], path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let mut seen: Vec<&str> = Vec::new();
    for (i, a) in actions.iter().copied().enumerate() {
        if !VALIDATION_ACTIONS.contains(&a) {
            errs.push(FieldError::not_supported(
                format!("{path}[{i}]"),
                a,
                &VALIDATION_ACTIONS,
            ));
        }
        if seen.contains(&a) {
            errs.push(duplicate(format!("{path}[{i}]"), a));
        }
        seen.push(a);
    }
    if seen.contains(&"Deny") && seen.contains(&"Warn") {
        errs.push(FieldError::invalid_raw(
            path,
            go_slice("admissionregistration.ValidationAction", actions),
            "must not contain both Deny and Warn (repeating the same validation failure information in the API response and headers serves no purpose)",
        ));
    }
    if seen.is_empty() {
        errs.push(FieldError::required(
            path,
            "at least one validation action is required",
        ));
    }
    errs
}

/// validateValidatingAdmissionPolicyBindingSpec. Upstream's path for the match resources is
/// `spec.matchResouces` (sic), kept so clients see the same paths.
pub(super) fn validate_validating_binding(obj: &Value) -> Vec<FieldError> {
    let spec = spec(obj);
    let mut errs = validate_policy_name(spec, "spec");
    if let Some(pr) = child(spec, "paramRef") {
        errs.extend(validate_param_ref(pr, "spec.paramRef"));
    }
    if let Some(mr) = child(spec, "matchResources") {
        errs.extend(validate_match_resources(mr, "spec.matchResouces"));
    }
    errs.extend(validate_validation_actions(
        &strs(spec, "validationActions"),
        "spec.validationActions",
    ));
    errs
}

/// validateMutatingAdmissionPolicyBindingSpec.
pub(super) fn validate_mutating_binding(obj: &Value) -> Vec<FieldError> {
    let spec = spec(obj);
    let mut errs = validate_policy_name(spec, "spec");
    if let Some(pr) = child(spec, "paramRef") {
        errs.extend(validate_param_ref(pr, "spec.paramRef"));
    }
    if let Some(mr) = child(spec, "matchResources") {
        errs.extend(validate_match_resources(mr, "spec.matchResources"));
        errs.extend(validate_mutating_operations(
            mr,
            "spec.matchResources.resourceRules.operations",
        ));
    }
    errs
}

/// The reasons a condition may give (metav1validation's conditionReasonFmt).
fn reason_ok(reason: &str) -> bool {
    let b = reason.as_bytes();
    let inner = |c: &u8| c.is_ascii_alphanumeric() || matches!(c, b'_' | b',' | b':');
    b.first().is_some_and(u8::is_ascii_alphabetic)
        && b.iter().all(inner)
        && b.last()
            .is_some_and(|c| c.is_ascii_alphanumeric() || *c == b'_')
}

/// metav1validation.ValidateConditions.
fn validate_conditions(conditions: &[Value], path: &str) -> Vec<FieldError> {
    const REASON_MSG: &str = "a condition reason must start with alphabetic character, optionally followed by a string of alphanumeric characters or '_,:', and must end with an alphanumeric character or '_' (e.g. 'my_name',  or 'MY_NAME',  or 'MyName',  or 'ReasonA,ReasonB',  or 'ReasonA:ReasonB', regex used for validation is '[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?')";
    let mut errs = Vec::new();
    let mut types: Vec<&str> = Vec::new();
    for (i, c) in conditions.iter().enumerate() {
        let at = format!("{path}[{i}]");
        let ty = str_at(c, "/type");
        if types.contains(&ty) {
            errs.push(duplicate(format!("{at}.type"), ty));
        } else {
            types.push(ty);
        }
        for e in qualified_name_errors(ty) {
            errs.push(FieldError::invalid(format!("{at}.type"), ty, e));
        }
        let status = str_at(c, "/status");
        if !["False", "True", "Unknown"].contains(&status) {
            errs.push(FieldError::not_supported(
                format!("{at}.status"),
                status,
                &["False", "True", "Unknown"],
            ));
        }
        if let Some(g) = c.get("observedGeneration").and_then(Value::as_i64) {
            if g < 0 {
                errs.push(FieldError::invalid_raw(
                    format!("{at}.observedGeneration"),
                    g,
                    "must be greater than or equal to zero",
                ));
            }
        }
        if opt_str(c, "lastTransitionTime").is_none_or(str::is_empty) {
            errs.push(FieldError::required(
                format!("{at}.lastTransitionTime"),
                "must be set",
            ));
        }
        let reason = str_at(c, "/reason");
        if reason.is_empty() {
            errs.push(FieldError::required(format!("{at}.reason"), "must be set"));
        } else {
            if !reason_ok(reason) {
                errs.push(FieldError::invalid(
                    format!("{at}.reason"),
                    reason,
                    REASON_MSG,
                ));
            }
            if reason.len() > 1024 {
                errs.push(FieldError::too_long(format!("{at}.reason"), 1024));
            }
        }
        if str_at(c, "/message").len() > 32768 {
            errs.push(FieldError::too_long(format!("{at}.message"), 32768));
        }
    }
    errs
}

/// ValidateValidatingAdmissionPolicyStatusUpdate: the expression warnings of the type check
/// and the conditions.
pub(super) fn validate_validating_policy_status(obj: &Value) -> Vec<FieldError> {
    let status = obj.get("status").unwrap_or(&Value::Null);
    let mut errs = Vec::new();
    if let Some(tc) = child(status, "typeChecking") {
        for (i, w) in items(tc, "expressionWarnings").iter().enumerate() {
            let at = format!("status.typeChecking.expressionWarnings[{i}]");
            if str_at(w, "/warning").is_empty() {
                errs.push(FieldError::required(format!("{at}.warning"), ""));
            }
            if str_at(w, "/fieldRef").trim().is_empty() {
                errs.push(FieldError::required(format!("{at}.fieldRef"), ""));
            }
        }
    }
    errs.extend(validate_conditions(
        items(status, "conditions"),
        "status.conditions",
    ));
    errs
}
