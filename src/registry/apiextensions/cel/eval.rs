//! Evaluating a CRD version's rules on an object, as apiextensions-apiserver's
//! pkg/apiserver/schema/cel/validation.go `Validator.Validate` does.
//!
//! - Every rule runs at every node where the object has a non-null value; `self` is the node's
//!   value (`tree`), `oldSelf` its old value on update where upstream correlates one
//!   (properties and entries of objects, items of `x-kubernetes-list-type: map` lists by
//!   their keys; never items of other lists). A transition rule (one naming `oldSelf`) is
//!   skipped without an old value unless `optionalOldSelf`, where `oldSelf` is
//!   `optional.none()`.
//! - Runtime cost as upstream limits it: each evaluation at most `PerCallLimit`, the whole
//!   object `RuntimeCELCostBudget` (`cel::budget`); past either, the error says no further
//!   rules will be run, and none is.
//! - Upstream's messages: `failed rule: <rule>`, `message`, or the result of
//!   `messageExpression` (one that fails, is empty, too long or on several lines gives way to
//!   the message); `reason` choosing the error type; `fieldPath` appended to the node's path;
//!   the value shown for scalars and omitted for objects and arrays (1.35+); runtime errors in
//!   cel-go's words with upstream's suffixes.
//! - Ratcheting on update: a rule that is not a transition rule and fails on a value equal to
//!   its old one (or, where there is no old value to meet, under the nearest ancestor that
//!   is) is not an error but a warning, as upstream's.

use super::super::gofmt::{bad_value, quote};
use super::tree::{Node, Rule};
use crate::api::json::same;
use crate::registry::cel::budget::{
    self, run, OutOfBudget, Outcome, COST_LIMIT_EXCEEDED, OUT_OF_BUDGET,
};
use crate::registry::cel::{library_context, wording};
use crate::registry::error::{FieldError, FieldErrorKind};
use kube_cel::cel::objects::OptionalValue;
use kube_cel::cel::{Context as CelContext, IdedExpr, Value as CelValue};
use serde_json::Value;
use std::sync::Arc;

/// The longest message a messageExpression may give (MaxEvaluatedMessageExpressionSizeBytes).
const MAX_MESSAGE: usize = 5 * 1024;

thread_local! {
    /// Kubernetes' CEL library, made once per thread: each node's rules run in a scope over it.
    static BASE: CelContext<'static> = {
        let mut ctx = library_context();
        super::lists::register(&mut ctx);
        ctx
    };
}

/// What the rules found in one object.
#[derive(Debug, Default)]
pub(crate) struct Findings {
    /// The failures that reject the object.
    pub errors: Vec<FieldError>,
    /// The ratcheted failures (of values unchanged on update), which upstream sends as
    /// warnings.
    pub ratcheted: Vec<FieldError>,
}

/// The rules' findings for `new` (`old` on update).
pub(super) fn validate(root: &Node, new: &Value, old: Option<&Value>) -> Findings {
    let mut found = Findings::default();
    BASE.with(|base| {
        budget::with_budget(budget::RUNTIME_BUDGET, || {
            let mut walk = Walk {
                base,
                found: &mut found,
            };
            let met = old.map(|o| (new, o));
            // Stopped or not, what was found is reported.
            let _ = walk.node(root, new, old, met, String::new());
        })
    });
    found
}

/// The new and old values of a node that met its old value.
type Met<'v> = Option<(&'v Value, &'v Value)>;

/// Upstream stopped evaluating (a cost limit was reached).
struct Stop;

struct Walk<'a> {
    base: &'a CelContext<'static>,
    found: &'a mut Findings,
}

/// field.Path's Child.
fn child(path: &str, name: &str) -> String {
    if path.is_empty() {
        name.to_string()
    } else {
        format!("{path}.{name}")
    }
}

impl Walk<'_> {
    /// Validates `new` at `node` and below. `met`: the new and old values of the nearest node
    /// that met its old value (this one or an ancestor); when they are equal, failures are
    /// ratcheted (compared only when a rule fails).
    fn node(
        &mut self,
        node: &Node,
        new: &Value,
        old: Option<&Value>,
        met: Met<'_>,
        path: String,
    ) -> Result<(), Stop> {
        if new.is_null() || !node.has_rules {
            return Ok(());
        }
        if !node.rules.is_empty() {
            self.rules(node, new, old, met, &path)?;
        }
        match new {
            Value::Object(m) => {
                for (k, v) in m {
                    let (sub, declared) = match node.properties.get(k) {
                        Some(p) => (&p.node, true),
                        None => match node.additional.as_deref() {
                            Some(a) => (a, false),
                            None => continue,
                        },
                    };
                    if !sub.has_rules {
                        continue;
                    }
                    let sub_path = if declared {
                        child(&path, k)
                    } else {
                        format!("{path}[{k}]")
                    };
                    let sub_old = old
                        .filter(|_| node.correlatable)
                        .and_then(|o| o.get(k))
                        .filter(|o| !o.is_null());
                    let sub_met = sub_old.map(|o| (v, o)).or(met);
                    self.node(sub, v, sub_old, sub_met, sub_path)?;
                }
            }
            Value::Array(items) => {
                let Some(item) = node.items.as_deref().filter(|i| i.has_rules) else {
                    return Ok(());
                };
                let old_items = old.and_then(Value::as_array);
                for (i, v) in items.iter().enumerate() {
                    let item_old = match (&node.map_keys, old_items) {
                        (Some(keys), Some(olds)) => olds
                            .iter()
                            .find(|o| keys.iter().all(|k| o.get(k.as_str()) == v.get(k.as_str()))),
                        _ => None,
                    };
                    let item_met = item_old.map(|o| (v, o)).or(met);
                    self.node(item, v, item_old, item_met, format!("{path}[{i}]"))?;
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// Runs the rules of `node` on `new`.
    fn rules(
        &mut self,
        node: &Node,
        new: &Value,
        old: Option<&Value>,
        met: Met<'_>,
        path: &str,
    ) -> Result<(), Stop> {
        let mut ctx = self.base.new_inner_scope();
        ctx.add_variable_from_value("self", node.to_cel(new));
        for (name, shape) in &node.shapes {
            ctx.add_variable_from_value(name.as_str(), shape.clone());
        }
        let old_cel = old
            .filter(|_| node.rules.iter().any(|r| r.transition))
            .map(|o| node.to_cel(o));
        if let Some(o) = &old_cel {
            ctx.add_variable_from_value("oldSelf", o.clone());
        }
        // The scope of rules with optionalOldSelf, where oldSelf is an optional.
        let optional = node
            .rules
            .iter()
            .any(|r| r.declared.optional_old_self == Some(true))
            .then(|| {
                let mut scope = ctx.new_inner_scope();
                scope.add_variable_from_value(
                    "oldSelf",
                    CelValue::Opaque(Arc::new(match &old_cel {
                        Some(o) => OptionalValue::of(o.clone()),
                        None => OptionalValue::none(),
                    })),
                );
                scope
            });
        let type_error = |detail: String| FieldError::invalid_raw(path, node.quoted_type(), detail);
        for rule in &node.rules {
            let optional_old_self = rule.declared.optional_old_self == Some(true);
            if rule.transition && old.is_none() && !optional_old_self {
                continue;
            }
            let program = match &rule.program {
                Ok(p) => p,
                Err(why) => {
                    self.found.errors.push(type_error(format!(
                        "rule compile error: compilation failed: {why}"
                    )));
                    continue;
                }
            };
            let rule_ctx = match &optional {
                Some(scope) if optional_old_self => scope,
                _ => &ctx,
            };
            let Ok(outcome) = run(program, rule_ctx) else {
                self.found
                    .errors
                    .push(type_error(OUT_OF_BUDGET.to_string()));
                return Err(Stop);
            };
            let rule_text = rule.error_string();
            match outcome {
                Outcome::Value(CelValue::Bool(true)) => continue,
                Outcome::Value(_) => {}
                Outcome::Unsupported => {
                    self.found.errors.push(type_error(format!(
                        "rule uses CEL that kapi cannot evaluate yet: {rule_text}"
                    )));
                    continue;
                }
                Outcome::Error(e) => {
                    let text = wording::runtime_error(&e);
                    if text.starts_with(COST_LIMIT_EXCEEDED) {
                        self.found.errors.push(type_error(format!(
                            "'{text}': no further validation rules will be run due to call cost exceeds limit for rule: {rule_text}"
                        )));
                        return Err(Stop);
                    }
                    self.found.errors.push(type_error(if text.starts_with("no such overload") {
                        format!("'{text}': call arguments did not match a supported operator, function or macro signature for rule: {rule_text}")
                    } else {
                        format!("{text} evaluating rule: {rule_text}")
                    }));
                    continue;
                }
            }
            let field = match &rule.field_path {
                Some(f) => child(path, f),
                None => path.to_string(),
            };
            let ratcheted = !rule.transition && met.is_some_and(|(n, o)| same(n, o));
            let detail = match &rule.message {
                Some(expr) => match message(rule, expr, &ctx) {
                    Ok(Some(m)) => m,
                    Ok(None) => default_message(rule),
                    Err(stop) => {
                        self.add(
                            ratcheted,
                            FieldError::invalid_raw(&field, node.quoted_type(), stop),
                        );
                        return Err(Stop);
                    }
                },
                None => default_message(rule),
            };
            let value = node.shows_value().then(|| bad_value(new));
            let err = match rule.declared.reason.as_deref() {
                Some("FieldValueForbidden") => FieldError::forbidden(field, detail),
                Some("FieldValueRequired") => FieldError::required(field, detail),
                Some("FieldValueDuplicate") => FieldError {
                    kind: FieldErrorKind::Duplicate,
                    field,
                    value,
                    detail: String::new(),
                },
                _ => FieldError {
                    kind: FieldErrorKind::Invalid,
                    field,
                    value,
                    detail,
                },
            };
            self.add(ratcheted, err);
        }
        Ok(())
    }

    /// addErr: a failure is an error unless it is ratcheted.
    fn add(&mut self, ratcheted: bool, err: FieldError) {
        if ratcheted {
            self.found.ratcheted.push(err);
        } else {
            self.found.errors.push(err);
        }
    }
}

/// ruleMessageOrDefault.
fn default_message(rule: &Rule) -> String {
    match rule.declared.message.as_deref().map(str::trim) {
        Some(m) if !m.is_empty() => m.to_string(),
        _ => format!("failed rule: {}", rule.error_string()),
    }
}

/// evalMessageExpression: the message, None when the rule's message stands in for it (the
/// expression failed or gave no usable text), Err when evaluation must stop (its text).
fn message(rule: &Rule, expr: &IdedExpr, ctx: &CelContext<'_>) -> Result<Option<String>, String> {
    match run(expr, ctx) {
        Err(OutOfBudget) => Err("messageExpression evaluation failed due to running out of cost budget, no further validation rules will be run".into()),
        Ok(Outcome::Error(e)) if wording::runtime_error(&e).starts_with(COST_LIMIT_EXCEEDED) => {
            Err(format!(
                "no further validation rules will be run due to call cost exceeds limit for messageExpression: {}",
                quote(rule.declared.message_expression.as_deref().unwrap_or_default())
            ))
        }
        Ok(Outcome::Value(CelValue::String(s))) => {
            let m = s.trim();
            Ok((!m.is_empty() && m.len() <= MAX_MESSAGE && !m.contains(['\n', '\r']))
                .then(|| m.to_string()))
        }
        Ok(_) => Ok(None),
    }
}
