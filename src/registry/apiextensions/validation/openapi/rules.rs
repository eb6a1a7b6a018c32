//! x-kubernetes-validations rules: their static shape (rule, message, messageExpression,
//! reason, fieldPath), then whether they compile.

use super::*;
use crate::registry::cel::decl::decl;
use crate::registry::cel::{parse, references};

fn has_newlines(s: &str) -> bool {
    s.contains(['\n', '\r'])
}

/// x-kubernetes-validations rules: their static shape, then whether they compile.
pub(super) fn validation_rules(
    s: &JSONSchemaProps,
    fld: &str,
    is_root: bool,
    uncorrelatable: Option<&str>,
    errs: &mut Vec<FieldError>,
) {
    let Some(rules) = s
        .x_kubernetes_validations
        .as_ref()
        .filter(|r| !r.is_empty())
    else {
        return;
    };
    for (i, rule) in rules.iter().enumerate() {
        let at = |f: &str| {
            path::child(
                &path::index(&path::child(fld, "x-kubernetes-validations"), i),
                f,
            )
        };
        let message = rule.message.as_deref().unwrap_or("");
        let (trimmed_rule, trimmed_msg) = (rule.rule.trim(), message.trim());
        if trimmed_rule.is_empty() {
            errs.push(FieldError::required(at("rule"), "rule is not specified"));
        } else if !message.is_empty() && trimmed_msg.is_empty() {
            errs.push(FieldError::invalid(
                at("message"),
                message,
                "must be non-empty if specified",
            ));
        } else if has_newlines(trimmed_msg) {
            errs.push(FieldError::invalid(
                at("message"),
                message,
                "must not contain line breaks",
            ));
        } else if has_newlines(trimmed_rule) && trimmed_msg.is_empty() {
            errs.push(FieldError::required(
                at("message"),
                "message must be specified if rule contains line breaks",
            ));
        }
        let expr = rule.message_expression.as_deref().unwrap_or("");
        if !expr.is_empty() && expr.trim().is_empty() {
            errs.push(FieldError::required(
                at("messageExpression"),
                "messageExpression must be non-empty if specified",
            ));
        }
        if let Some(r) = rule
            .reason
            .as_deref()
            .filter(|r| !VALIDATION_REASONS.contains(r))
        {
            errs.push(FieldError::not_supported(
                at("reason"),
                r,
                &VALIDATION_REASONS,
            ));
        }
        let field_path = rule.field_path.as_deref().unwrap_or("");
        if !field_path.is_empty() && field_path.trim().is_empty() {
            errs.push(FieldError::invalid(
                at("fieldPath"),
                field_path,
                "must be non-empty if specified",
            ));
        }
        if has_newlines(field_path) {
            errs.push(FieldError::invalid(
                at("fieldPath"),
                field_path,
                "must not contain line breaks",
            ));
        }
        if !field_path.is_empty() && !path_valid(s, field_path) {
            errs.push(FieldError::invalid(
                at("fieldPath"),
                field_path,
                "must be a valid path",
            ));
        }
    }
    let at = |i: usize, f: &str| {
        path::child(
            &path::index(&path::child(fld, "x-kubernetes-validations"), i),
            f,
        )
    };
    // The node's declared type, to check the rules' references and result types against.
    let embedded = s.x_kubernetes_embedded_resource == Some(true);
    let node = serde_json::to_value(s)
        .ok()
        .and_then(|json| decl(&json, is_root || embedded));
    crate::registry::apiextensions::cel::compile_errors(rules, node.as_ref(), at, errs);
    // Transition rules need an old value to compare with, which these nodes do not have.
    if let Some(within) = uncorrelatable {
        for (i, rule) in rules.iter().enumerate() {
            let names_old_self = parse(&rule.rule, true).is_ok_and(|e| references(&e, "oldSelf"));
            if names_old_self {
                errs.push(FieldError::invalid(
                    at(i, "rule"),
                    &rule.rule,
                    format!(
                        "oldSelf cannot be used on the uncorrelatable portion of the schema within {within}"
                    ),
                ));
            }
        }
    }
}

/// pathValid: a rule's fieldPath names a field of the schema (true when the schema is not
/// structural, as upstream leaves that to other errors).
pub(super) fn path_valid(s: &JSONSchemaProps, field_path: &str) -> bool {
    match Structural::new(s) {
        Ok(ss) => valid_field_path(field_path, Some(&ss), true).is_ok(),
        Err(_) => true,
    }
}
