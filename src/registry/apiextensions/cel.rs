//! CEL `x-kubernetes-validations` (apiextensions-apiserver's pkg/apiserver/schema/cel), on
//! the `cel` crate with Kubernetes' CEL library from `kube-cel` (quantity, url, ip/cidr,
//! regex, format, lists, sets, semver).
//!
//! - When a CRD is written, every rule and messageExpression must compile
//!   ([`compile_errors`], with upstream's `compilation failed: ...` field errors); rules are
//!   also checked against the node's declared type (fields and variables named, operators'
//!   and string functions' argument types, the result's type; `cel::types`) and their cost
//!   is estimated (validation's `openapi/cost.rs`).
//! - When a custom object is written, [`Rules`] (compiled once per CRD version: `tree`)
//!   evaluates every rule at every node where data is present, under upstream's runtime cost
//!   limits, with upstream's messages and ratcheting (`eval`).
//!
//! - Lists of `x-kubernetes-list-type` set and map compare and merge as upstream's (`lists`).
//!
//! Where this differs from upstream: argument types are checked only for operators, the
//! string functions and conversions on primitive operands (`cel::overloads`); parse errors are
//! the `cel` crate's text; see also `tree` for how values convert. May use: registry's error types and CEL modules.

use super::gofmt::quote;
use crate::registry::cel::decl::Decl;
use crate::registry::cel::types::{check, Problem, Ty};
use crate::registry::cel::{compile_failure, parse, references};
use crate::registry::error::FieldError;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::ValidationRule;
use serde_json::Value;

/// The compiled rules of one CRD version's schema.
pub(crate) struct Rules {
    root: tree::Node,
}

impl std::fmt::Debug for Rules {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Rules").finish_non_exhaustive()
    }
}

/// Whether `schema` holds a rule anywhere.
fn has_rules(schema: &Value) -> bool {
    match schema {
        Value::Object(m) => {
            m.get("x-kubernetes-validations")
                .and_then(Value::as_array)
                .is_some_and(|r| !r.is_empty())
                || m.values().any(has_rules)
        }
        Value::Array(a) => a.iter().any(has_rules),
        _ => false,
    }
}

impl Rules {
    /// The rules of `schema` (a version's openAPIV3Schema as JSON), or None when it has none,
    /// so objects of such versions pay nothing.
    pub(crate) fn compile(schema: &Value) -> Option<Rules> {
        has_rules(schema).then(|| {
            let mut root = tree::Node::build(schema, true);
            root.prune(false);
            Rules { root }
        })
    }

    /// The rules' failures for `new` (`old` on update), as upstream's field errors.
    pub(crate) fn validate(&self, new: &Value, old: Option<&Value>) -> eval::Findings {
        eval::validate(&self.root, new, old)
    }
}

/// One step of a path.
#[derive(Debug, Clone, PartialEq)]
enum Segment {
    Name(String),
    Index(usize),
}

/// `a.b[2].c` as steps.
fn split_path(p: &str) -> Vec<Segment> {
    let mut out = Vec::new();
    for part in p.split('.').filter(|s| !s.is_empty()) {
        let (name, mut rest) = match part.find('[') {
            Some(i) => (&part[..i], &part[i..]),
            None => (part, ""),
        };
        if !name.is_empty() {
            out.push(Segment::Name(name.to_string()));
        }
        while let Some(end) = rest.find(']') {
            let inner = &rest[1..end];
            out.push(match inner.parse() {
                Ok(n) => Segment::Index(n),
                Err(_) => Segment::Name(inner.trim_matches(['\'', '"']).to_string()),
            });
            rest = &rest[end + 1..];
        }
    }
    out
}

/// The path as upstream's field.Path prints it: properties as `.name`, map entries as
/// `[key]`, list items as `[i]`.
fn upstream_path(schema: &Value, segments: &[Segment]) -> String {
    let mut node = Some(schema);
    let mut path = String::new();
    for seg in segments {
        match seg {
            Segment::Index(n) => {
                path.push_str(&format!("[{n}]"));
                node = node.and_then(|n| n.get("items"));
            }
            Segment::Name(name) => {
                let prop = node
                    .and_then(|n| n.get("properties"))
                    .and_then(|p| p.get(name.as_str()));
                let is_map = prop.is_none()
                    && node
                        .and_then(|n| n.get("additionalProperties"))
                        .is_some_and(Value::is_object);
                if is_map {
                    path.push_str(&format!("[{name}]"));
                    node = node.and_then(|n| n.get("additionalProperties"));
                } else {
                    if !path.is_empty() {
                        path.push('.');
                    }
                    path.push_str(name);
                    node = prop;
                }
            }
        }
    }
    path
}

/// Go's `%#v` of the internal ValidationRule, as upstream prints the bad value of a rule that
/// does not compile.
fn go_rule(r: &ValidationRule) -> String {
    let ptr = |set: bool, ty: &str| {
        if set {
            format!("(*{ty})(0xc000000000)")
        } else {
            format!("(*{ty})(nil)")
        }
    };
    format!(
        "apiextensions.ValidationRule{{Rule:{}, Message:{}, MessageExpression:{}, Reason:{}, FieldPath:{}, OptionalOldSelf:{}}}",
        quote(&r.rule),
        quote(r.message.as_deref().unwrap_or("")),
        quote(r.message_expression.as_deref().unwrap_or("")),
        ptr(r.reason.is_some(), "apiextensions.FieldValueErrorReason"),
        quote(r.field_path.as_deref().unwrap_or("")),
        ptr(r.optional_old_self.is_some(), "bool"),
    )
}

/// The compile errors of the rules of one schema node (`at(i, field)` is the path of rule
/// `i`'s field), as validation.go reports them: a rule or messageExpression that does not
/// parse; and, given the node's declared type, one naming a field or variable that is not
/// declared, or known to return another type than a bool (a string for messageExpression).
pub(crate) fn compile_errors(
    rules: &[ValidationRule],
    node: Option<&Decl>,
    at: impl Fn(usize, &str) -> String,
    errs: &mut Vec<FieldError>,
) {
    for (i, r) in rules.iter().enumerate() {
        if r.rule.trim().is_empty() {
            continue;
        }
        let optional = r.optional_old_self == Some(true);
        let failed = |why: String| FieldError::invalid_raw(at(i, "rule"), go_rule(r), why);
        match compile(&r.rule, node, optional, &Ty::Bool) {
            Some(Compiled::Failed(why)) => {
                errs.push(failed(format!("compilation failed: {why}")));
                continue;
            }
            Some(Compiled::WrongType) => {
                errs.push(failed("cel expression must evaluate to a bool".into()));
                continue;
            }
            None => {}
        }
        if let (Some(set), Ok(parsed)) = (r.optional_old_self, parse(&r.rule, true)) {
            if !references(&parsed, "oldSelf") {
                errs.push(FieldError::invalid_raw(
                    at(i, "optionalOldSelf"),
                    set.to_string(),
                    "may not be set if oldSelf is not used in rule",
                ));
            }
        }
        let expr = r.message_expression.as_deref().unwrap_or("");
        if expr.trim().is_empty() {
            continue;
        }
        let failed =
            |why: String| FieldError::invalid_raw(at(i, "messageExpression"), go_rule(r), why);
        match compile(expr, node, optional, &Ty::String) {
            Some(Compiled::Failed(why)) => {
                errs.push(failed(format!(
                    "messageExpression compilation failed: {why}"
                )));
            }
            Some(Compiled::WrongType) => {
                errs.push(failed("messageExpression must evaluate to a string".into()));
            }
            None => {}
        }
    }
}

/// Why an expression does not compile.
enum Compiled {
    Failed(String),
    WrongType,
}

fn compile(
    expr: &str,
    node: Option<&Decl>,
    optional_old_self: bool,
    want: &Ty<'_>,
) -> Option<Compiled> {
    if let Some(why) = compile_failure(expr, true) {
        return Some(Compiled::Failed(why));
    }
    let (node, parsed) = (node?, parse(expr, true).ok()?);
    match check(expr, &parsed, node, optional_old_self, want)? {
        Problem::Issues(text) => Some(Compiled::Failed(text)),
        Problem::WrongType => Some(Compiled::WrongType),
    }
}

mod eval;
mod lists;
mod tree;

#[cfg(test)]
mod tests;
