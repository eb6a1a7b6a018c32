//! CEL `x-kubernetes-validations` (apiextensions-apiserver's pkg/apiserver/schema/cel), on
//! the `cel` crate with Kubernetes' CEL library from `kube-cel` (quantity, url, ip/cidr,
//! regex, format, lists, sets, semver).
//!
//! - When a CRD is written, every rule and messageExpression must compile
//!   ([`compile_errors`], with upstream's `compilation failed: ...` field errors).
//! - When a custom object is written, [`Rules`] (compiled once per CRD version) evaluates every
//!   rule at every node where data is present: `self` is the node's value, `oldSelf` its old
//!   value on update (a rule naming `oldSelf` is a transition rule, skipped without an old
//!   value unless `optionalOldSelf`). Failures become upstream's field errors: the default
//!   message `failed rule: <rule>`, `message` or the result of `messageExpression`, `reason`
//!   choosing the error type, `fieldPath` appended to the node's path, the node's schema type as
//!   the bad value (`spec: Invalid value: "object": ...`). On update, errors of rules that are
//!   not transition rules on values equal to the old ones are dropped (ratcheting), so a
//!   top-level field an update leaves as it was, with no transition rule, is not evaluated.
//!
//! When the CRD is written, rules are also checked against the node's declared type (fields
//! and variables named, the result's type; `cel::types`) and their cost is estimated
//! (validation's `openapi/cost.rs`).
//!
//! Where this differs from upstream: argument types are checked only for operators and the
//! string functions on primitive operands (`cel::overloads`); there is no runtime cost budget;
//! parse errors are the `cel` crate's text. Old items of map lists are matched by key
//! (`align`), of other lists by index (upstream forbids `oldSelf` below those, and does not
//! ratchet their items). May use: registry's error types and CEL modules.

use super::gofmt::quote;
use crate::registry::cel::decl::Decl;
use crate::registry::cel::lower::lower_optional_syntax;
use crate::registry::cel::types::{check, Problem, Ty};
use crate::registry::cel::wording;
use crate::registry::cel::{compile_failure, parse, references, replace_ident};
use crate::registry::error::{FieldError, FieldErrorKind};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::ValidationRule;
use kube_cel::{CompiledSchema, ErrorKind, RootContext, ValidationError, Validator};
use serde_json::Value;

thread_local! {
    /// A validator per thread: making one registers every library function.
    static VALIDATOR: Validator = Validator::new();
}

/// The compiled rules of one CRD version's schema.
pub(crate) struct Rules {
    /// The rules, per top-level field that holds any (`spec`, `status`), so an object's
    /// metadata is never converted for them; or the whole schema when the root has rules.
    parts: Vec<Part>,
    /// The schema, to find the node (and its type) where a rule failed.
    schema: Value,
    root: RootContext,
    /// The texts of rules and messageExpressions kube-cel was given rewritten, with their
    /// originals (see [`for_kube_cel`]).
    rewritten: Vec<(String, String)>,
    /// Whether old values must be lined up by map-list keys first (`align`).
    align: bool,
}

/// The rules under one top-level field (`None`: the root's own rules, over the whole object).
struct Part {
    field: Option<String>,
    compiled: CompiledSchema,
    /// Whether a rule of the part may name `oldSelf`: without one, an update that leaves the
    /// part as it was has nothing to report (ratcheting drops every error) and is not
    /// evaluated.
    transition: bool,
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

/// The schema kube-cel compiles for a part: without `default`s (objects are defaulted before
/// their rules run) and without the properties it would convert the same way without their
/// schema and under which no rule lies. kube-cel walks every node it has a schema for,
/// converting its value and binding `self` there even where no rule is; for a spec with a
/// rule at its root and plain fields below, that walk was most of the cost of a write.
/// Rules with `optionalOldSelf` are rewritten on the way (see [`for_kube_cel`]); each
/// rewritten text is noted with the original in `rewritten`.
fn lean(schema: &Value, rewritten: &mut Vec<(String, String)>) -> Value {
    let Value::Object(m) = schema else {
        return schema.clone();
    };
    let mut out = serde_json::Map::with_capacity(m.len());
    for (k, v) in m {
        match (k.as_str(), v) {
            ("default", _) => {}
            ("properties", Value::Object(props)) => {
                let kept = props
                    .iter()
                    .filter(|(_, s)| !inert(s))
                    .map(|(n, s)| (n.clone(), lean(s, rewritten)))
                    .collect();
                out.insert(k.clone(), Value::Object(kept));
            }
            ("items" | "additionalProperties", Value::Object(_)) => {
                out.insert(k.clone(), lean(v, rewritten));
            }
            ("x-kubernetes-validations", Value::Array(rules)) => {
                let rules = rules.iter().map(|r| for_kube_cel(r, rewritten)).collect();
                out.insert(k.clone(), Value::Array(rules));
            }
            _ => {
                out.insert(k.clone(), v.clone());
            }
        }
    }
    Value::Object(out)
}

/// What `oldSelf` reads as in a rule with `optionalOldSelf: true`: upstream declares it
/// `optional_type(T)`, `optional.of` the old value or `optional.none()` on create, so rules
/// say `oldSelf.hasValue()`, `oldSelf.value()` or `oldSelf.orValue(x)`. kube-cel binds the
/// old value itself, or null, so such a rule (and its messageExpression) is given this in
/// place of `oldSelf`.
const OPTIONAL_OLD_SELF: &str = "(oldSelf == null ? optional.none() : optional.of(oldSelf))";

/// Rule `r` as kube-cel is given it: without optional syntax (`cel::lower`), and with
/// `oldSelf` made optional when `optionalOldSelf` is true (noting each rewritten text with its
/// original).
fn for_kube_cel(r: &Value, rewritten: &mut Vec<(String, String)>) -> Value {
    let optional = r.get("optionalOldSelf") == Some(&Value::Bool(true));
    let mut out = r.clone();
    for field in ["rule", "messageExpression"] {
        let Some(text) = r.get(field).and_then(Value::as_str) else {
            continue;
        };
        let mut new = lower_optional_syntax(text)
            .ok()
            .flatten()
            .unwrap_or_else(|| text.to_string());
        if optional {
            if let Some(wrapped) = replace_ident(&new, "oldSelf", OPTIONAL_OLD_SELF) {
                new = wrapped;
            }
        }
        if new != text {
            rewritten.push((new.clone(), text.to_string()));
            out[field] = Value::String(new);
        }
    }
    out
}

/// Whether kube-cel converts values of `schema` exactly as it converts them without a schema
/// (no format it maps to a CEL type, not a map, not an embedded resource, all the same below)
/// and no rule lies under it.
fn inert(schema: &Value) -> bool {
    let Value::Object(m) = schema else {
        return true;
    };
    let flag = |name: &str| m.get(name) == Some(&Value::Bool(true));
    !has_rules(schema)
        && !flag("x-kubernetes-int-or-string")
        && !flag("x-kubernetes-embedded-resource")
        && !matches!(
            m.get("format").and_then(Value::as_str),
            Some("date-time" | "duration" | "byte")
        )
        && matches!(
            m.get("additionalProperties"),
            None | Some(Value::Bool(false))
        )
        && m.get("properties")
            .and_then(Value::as_object)
            .is_none_or(|p| p.values().all(inert))
        && m.get("items").is_none_or(inert)
}

/// Whether a rule or messageExpression under `schema` may name `oldSelf`.
fn names_old_self(schema: &Value) -> bool {
    match schema {
        Value::Object(m) => m.iter().any(|(k, v)| match (k.as_str(), v) {
            ("x-kubernetes-validations", Value::Array(rules)) => rules.iter().any(|r| {
                ["rule", "messageExpression"].iter().any(|f| {
                    r.get(*f)
                        .and_then(Value::as_str)
                        .is_some_and(|t| t.contains("oldSelf"))
                })
            }),
            _ => names_old_self(v),
        }),
        Value::Array(a) => a.iter().any(names_old_self),
        _ => false,
    }
}

impl Rules {
    /// The rules of `schema` (a version's openAPIV3Schema as JSON), or None when it has none,
    /// so objects of such versions pay nothing.
    pub(crate) fn compile(schema: &Value, group: &str, version: &str, kind: &str) -> Option<Rules> {
        if !has_rules(schema) {
            return None;
        }
        let root_rules = schema
            .get("x-kubernetes-validations")
            .and_then(Value::as_array)
            .is_some_and(|r| !r.is_empty());
        let mut rewritten = Vec::new();
        let parts = match schema.get("properties").and_then(Value::as_object) {
            Some(props) if !root_rules => props
                .iter()
                .filter(|(_, s)| has_rules(s))
                .map(|(name, s)| Part {
                    field: Some(name.clone()),
                    compiled: kube_cel::compile_schema(&lean(s, &mut rewritten)),
                    transition: names_old_self(s),
                })
                .collect(),
            _ => vec![Part {
                field: None,
                compiled: kube_cel::compile_schema(&lean(schema, &mut rewritten)),
                transition: names_old_self(schema),
            }],
        };
        Some(Rules {
            parts,
            schema: schema.clone(),
            root: RootContext {
                api_version: format!("{group}/{version}"),
                api_group: group.to_string(),
                kind: kind.to_string(),
            },
            rewritten,
            align: align::needed(schema),
        })
    }

    /// The rules' errors for `new` (`old` on update), as upstream's field errors.
    pub(crate) fn validate(&self, new: &Value, old: Option<&Value>) -> Vec<FieldError> {
        let mut errs = Vec::new();
        let aligned = old
            .filter(|_| self.align)
            .map(|o| align::align(&self.schema, new, o));
        let (old, old_ratchet) = match &aligned {
            Some((rules, ratchet)) => (Some(rules), Some(ratchet)),
            None => (old, old),
        };
        for part in &self.parts {
            let (value, old_value, root) = match &part.field {
                None => (Some(new), old, Some(&self.root)),
                Some(f) => (new.get(f), old.and_then(|o| o.get(f)), None),
            };
            let Some(value) = value else { continue };
            if !part.transition && old_value.is_some_and(|o| crate::api::json::same(o, value)) {
                continue;
            }
            // Only transition rules read the old value: without one, kube-cel need not
            // convert it.
            let old_value = old_value.filter(|_| part.transition);
            // The interpreter panics on some expressions (object construction): refuse the
            // object rather than fail the request.
            let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                VALIDATOR.with(|v| {
                    v.validate_compiled_with_context(&part.compiled, value, old_value, root)
                })
            }));
            let Ok(outcome) = outcome else {
                errs.push(FieldError::invalid(
                    part.field.clone().unwrap_or_default(),
                    "object",
                    "a validation rule uses CEL that kapi cannot evaluate yet",
                ));
                continue;
            };
            let Err(failures) = outcome else { continue };
            for mut e in failures.into_vec() {
                for (new_text, original) in &self.rewritten {
                    if e.rule == *new_text {
                        e.rule = original.clone();
                    }
                    if e.message.contains(new_text.as_str()) {
                        e.message = e.message.replace(new_text.as_str(), original);
                    }
                }
                if let Some(f) = &part.field {
                    e.field_path = match e.field_path.as_str() {
                        "" => f.clone(),
                        p if p.starts_with('[') => format!("{f}{p}"),
                        p => format!("{f}.{p}"),
                    };
                }
                errs.extend(self.field_error(&e, new, old_ratchet));
            }
        }
        errs
    }

    /// Upstream's field error for one failure; None when ratcheting drops it.
    fn field_error(
        &self,
        e: &ValidationError,
        new: &Value,
        old: Option<&Value>,
    ) -> Option<FieldError> {
        let node = self.locate(e);
        if let Some(old) = old {
            let transition = e.rule.contains("oldSelf");
            if !transition && lookup(new, &node.segments) == lookup(old, &node.segments) {
                return None;
            }
        }
        let message = match e.kind {
            ErrorKind::ValidationFailure => e.message.trim().to_string(),
            ErrorKind::UnsupportedReference => format!(
                "call arguments did not match a supported operator, function or macro signature for rule: {}",
                rule_or_message(&node.rule, &e.rule)
            ),
            ErrorKind::EvaluationError => {
                let cause = std::error::Error::source(e)
                    .and_then(|s| s.downcast_ref::<kube_cel::cel::ExecutionError>())
                    .map_or_else(|| e.message.clone(), wording::runtime_error);
                format!("{cause} evaluating rule: {}", rule_or_message(&node.rule, &e.rule))
            }
            _ => e.message.clone(),
        };
        let value = quote(&node.type_);
        let field = node.error_path;
        let reason = if e.kind == ErrorKind::ValidationFailure {
            e.reason.as_deref()
        } else {
            None
        };
        Some(match reason {
            Some("FieldValueForbidden") => FieldError::forbidden(field, message),
            Some("FieldValueRequired") => FieldError::required(field, message),
            Some("FieldValueDuplicate") => FieldError {
                kind: FieldErrorKind::Duplicate,
                field,
                value: Some(value),
                detail: String::new(),
            },
            _ => FieldError::invalid_raw(field, value, message),
        })
    }

    /// Where a failure's rule sits: the deepest node along its path that declares it.
    fn locate(&self, e: &ValidationError) -> Located {
        let segments = split_path(&e.field_path);
        let mut located = Located {
            segments: Vec::new(),
            type_: type_of(&self.schema),
            // A fieldPath names fields below the rule's node: the error is reported there.
            error_path: upstream_path(&self.schema, &segments),
            rule: declared(&self.schema, &e.rule),
        };
        let mut node = &self.schema;
        for (i, seg) in segments.iter().enumerate() {
            let next = match seg {
                Segment::Index(_) => node.get("items"),
                Segment::Name(name) => node
                    .get("properties")
                    .and_then(|p| p.get(name.as_str()))
                    .or_else(|| node.get("additionalProperties").filter(|a| a.is_object())),
            };
            let Some(next) = next else { break };
            node = next;
            if let Some(rule) = declared(node, &e.rule) {
                located.segments = segments[..=i].to_vec();
                located.type_ = type_of(node);
                located.rule = Some(rule);
            }
        }
        located
    }
}

/// A failing rule's node.
struct Located {
    /// The path from the root to the rule's node.
    segments: Vec<Segment>,
    /// The node's schema type (the bad value upstream shows).
    type_: String,
    /// Where the error is reported (the node, or its fieldPath).
    error_path: String,
    /// The rule as declared.
    rule: Option<ValidationRule>,
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

/// The value at `segments` of `v`.
fn lookup<'v>(v: &'v Value, segments: &[Segment]) -> Option<&'v Value> {
    segments.iter().try_fold(v, |v, seg| match seg {
        Segment::Name(n) => v.get(n.as_str()),
        Segment::Index(i) => v.get(*i),
    })
}

fn type_of(node: &Value) -> String {
    node.get("type")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

/// The rule of `node` whose expression is `rule`.
fn declared(node: &Value, rule: &str) -> Option<ValidationRule> {
    node.get("x-kubernetes-validations")?
        .as_array()?
        .iter()
        .find(|r| r.get("rule").and_then(Value::as_str) == Some(rule))
        .and_then(|r| serde_json::from_value(r.clone()).ok())
}

/// ruleErrorString: the rule's message when it has one, else the rule.
fn rule_or_message(declared: &Option<ValidationRule>, rule: &str) -> String {
    match declared.as_ref().and_then(|r| r.message.as_deref()) {
        Some(m) if !m.trim().is_empty() => m.trim().to_string(),
        _ => rule.trim().to_string(),
    }
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
    if let Err(why) = lower_optional_syntax(expr) {
        return Some(Compiled::Failed(format!("ERROR: <input>: {why}")));
    }
    let (node, parsed) = (node?, parse(expr, true).ok()?);
    match check(expr, &parsed, node, optional_old_self, want)? {
        Problem::Issues(text) => Some(Compiled::Failed(text)),
        Problem::WrongType => Some(Compiled::WrongType),
    }
}

mod align;

#[cfg(test)]
mod tests;
