//! ValidatingAdmissionPolicy (k8s.io/apiserver/pkg/admission/plugin/policy/validating): CEL
//! validations a policy declares and a binding puts in force. A write matched by a policy's
//! matchConstraints and its binding's matchResources, and whose matchConditions hold, is
//! checked by every validation with `object`, `oldObject`, `request`, `params` (the binding's
//! paramRef) and `namespaceObject`, and the policy's `variables`. Each failed validation is
//! acted on as the binding's validationActions say, as upstream's dispatcher: Deny (the first
//! denial of all policies answers, 422 Invalid unless its reason says otherwise), Warn (a
//! Warning header) and Audit (the audit annotation
//! `validation.policy.admission.k8s.io/validation_failure`, a JSON list of failures). The
//! policy's auditAnnotations are published as `<policy>/<key>` (distinct values of several
//! bindings joined by `, `). An expression that does not compile or fails is decided by the
//! policy's failurePolicy.
//!
//! Where this differs from upstream: expressions are compiled, not type-checked, when a
//! policy is written (the status controller reports undefined fields afterwards, in
//! `status.typeChecking`); the runtime cost counts comprehensions' iterations only
//! ([`crate::registry::cel::budget`]).

use super::activation::{
    bind_variables, compile, conditions_hold, execute, json, run, Compiled, Uses, BASE,
};
use super::matching::{params_of, str_at, Binding, Header, Params, ParamsOf};
use super::webhooks::Invocation;
use super::{Attributes, Error, Request};
use crate::metrics::admission::PolicyOutcome;
use crate::registry::cel::budget::{
    with_budget, MATCH_CONDITIONS_BUDGET, OUT_OF_BUDGET, RUNTIME_BUDGET,
};
use kube_cel::cel::{Context as CelContext, Value as CelValue};
use serde_json::Value;
use std::sync::Arc;
use std::time::Duration;

/// The audit annotation of the failures the Audit action records.
const VALIDATION_FAILURE: &str = "validation.policy.admission.k8s.io/validation_failure";
/// At most this many failures in [`VALIDATION_FAILURE`] (maxValidationFailures).
const MAX_VALIDATION_FAILURES: usize = 50;
/// An auditAnnotation's value is cut to this many bytes (maxAuditAnnotationValueLength).
const MAX_ANNOTATION_VALUE: usize = 10 * 1024;
/// A messageExpression's result longer than this is not used
/// (MaxEvaluatedMessageExpressionSizeBytes).
const MAX_MESSAGE: usize = 5 * 1024;

struct Validation {
    expression: String,
    program: Compiled,
    message: String,
    message_program: Option<Compiled>,
    reason: String,
}

/// One of a policy's auditAnnotations.
struct AuditAnnotation {
    key: String,
    expression: String,
    program: Compiled,
}

/// A compiled ValidatingAdmissionPolicy.
pub(super) struct Policy {
    header: Header,
    validations: Vec<Validation>,
    annotations: Vec<AuditAnnotation>,
    /// The variables its expressions read.
    uses: Uses,
}

impl Policy {
    /// Whether evaluating it needs the namespace object (its namespaceSelector, or
    /// `namespaceObject` in an expression).
    pub(super) fn needs_namespace(&self) -> bool {
        self.uses.reads_namespace() || self.header.constraints.selects_namespaces()
    }

    pub(super) fn new(v: &Value) -> Policy {
        let spec = v.get("spec").unwrap_or(&Value::Null);
        let header = Header::new(v);
        let validations: Vec<Validation> = spec
            .get("validations")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .map(|c| Validation {
                expression: str_at(c, "/expression").to_string(),
                program: compile(str_at(c, "/expression")),
                message: str_at(c, "/message").to_string(),
                message_program: c
                    .get("messageExpression")
                    .and_then(Value::as_str)
                    .filter(|m| !m.is_empty())
                    .map(compile),
                reason: str_at(c, "/reason").to_string(),
            })
            .collect();
        let annotations: Vec<AuditAnnotation> = spec
            .get("auditAnnotations")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .map(|a| AuditAnnotation {
                key: str_at(a, "/key").to_string(),
                expression: str_at(a, "/valueExpression").to_string(),
                program: compile(str_at(a, "/valueExpression")),
            })
            .collect();
        let uses = Uses::of(
            header
                .conditions
                .iter()
                .chain(&header.variables)
                .map(|(_, p)| p)
                .chain(validations.iter().map(|v| &v.program))
                .chain(
                    validations
                        .iter()
                        .filter_map(|v| v.message_program.as_ref()),
                )
                .chain(annotations.iter().map(|a| &a.program)),
        );
        Policy {
            header,
            validations,
            annotations,
            uses,
        }
    }
}

/// What one validation decided (PolicyDecision).
#[cfg_attr(test, derive(Debug, PartialEq))]
enum Decision {
    /// It held.
    Admit,
    /// It failed: its reason (empty: Invalid) and message.
    Deny { reason: String, message: String },
    /// It could not be evaluated (or the policy's matchConditions could not): the
    /// failurePolicy decides; under Fail it is acted on as a failed validation.
    Error { message: String, compile: bool },
}

/// What one auditAnnotation's valueExpression gave (excluded ones are left out).
enum Annotated<'p> {
    Publish {
        key: &'p str,
        value: String,
    },
    /// It failed under failurePolicy Fail, or gave neither a string nor null: a denial.
    Error(String),
}

/// What a policy decided for one params object: a decision per validation, in order
/// (indexed as upstream's `expressionIndex`), and its audit annotations.
#[derive(Default)]
struct Evaluated<'p> {
    decisions: Vec<Decision>,
    annotations: Vec<Annotated<'p>>,
}

impl Validation {
    fn decide(&self, ctx: &CelContext<'_>) -> Decision {
        let program = match &self.program {
            Ok(p) => p,
            Err(e) => {
                return Decision::Error {
                    message: format!("compilation error: {e}"),
                    compile: true,
                }
            }
        };
        let error = |message| Decision::Error {
            message,
            compile: false,
        };
        match execute(program, ctx) {
            Ok(CelValue::Bool(true)) => Decision::Admit,
            Ok(CelValue::Bool(false)) => Decision::Deny {
                reason: self.reason.clone(),
                message: self.message(ctx),
            },
            Ok(_) => error(format!(
                "expression '{}' must evaluate to bool",
                self.expression
            )),
            Err(e) => error(format!(
                "expression '{}' resulted in error: {e}",
                self.expression
            )),
        }
    }

    /// The message of a failure: messageExpression's result (trimmed; not when empty, not a
    /// string, multi-line or too long), else `message`, else `failed expression: <expr>`.
    fn message(&self, ctx: &CelContext<'_>) -> String {
        let from_expression = self
            .message_program
            .as_ref()
            .and_then(|p| p.as_ref().ok())
            .and_then(|p| match execute(p, ctx) {
                Ok(CelValue::String(s)) => {
                    let m = s.trim();
                    (!m.is_empty() && m.len() <= MAX_MESSAGE && !m.contains('\n'))
                        .then(|| m.to_string())
                }
                _ => None,
            });
        from_expression
            .or_else(|| {
                Some(self.message.trim())
                    .filter(|m| !m.is_empty())
                    .map(str::to_string)
            })
            .unwrap_or_else(|| format!("failed expression: {}", self.expression.trim()))
    }
}

impl AuditAnnotation {
    /// Its value; None when it is excluded (empty, null, or failed under Ignore).
    fn evaluate(&self, ctx: &CelContext<'_>, fail: bool) -> Option<Annotated<'_>> {
        match run(ctx, &self.program, &|| {
            format!("expression '{}'", self.expression)
        }) {
            Ok(CelValue::String(s)) => {
                let value = s.trim();
                (!value.is_empty()).then(|| Annotated::Publish {
                    key: &self.key,
                    value: truncated(value, MAX_ANNOTATION_VALUE).to_string(),
                })
            }
            Ok(CelValue::Null) => None,
            Ok(other) => Some(Annotated::Error(format!(
                "valueExpression '{}' resulted in unsupported return type: {}. Return type must be either string or null.",
                self.expression,
                crate::registry::cel::type_of(&other)
            ))),
            Err(e) => fail.then_some(Annotated::Error(e)),
        }
    }
}

/// `s` cut to at most `max` bytes, at a character boundary.
fn truncated(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

/// Evaluates one policy for one params object (None: the policy takes none). As upstream's
/// validator: the matchConditions share one cost budget; the variables, validations and
/// messageExpressions another, the audit annotations a third; a spent budget fails the whole
/// evaluation with one error. `budget` is upstream's RuntimeCELCostBudget but in tests.
fn decide<'p>(
    policy: &'p Policy,
    base: &CelContext<'_>,
    params: Option<&Value>,
    budget: u64,
) -> Evaluated<'p> {
    let mut ctx = base.new_inner_scope();
    ctx.add_variable_from_value("params", json(params));
    let out_of_budget = || Decision::Error {
        message: OUT_OF_BUDGET.to_string(),
        compile: false,
    };
    let failed = |decision| Evaluated {
        decisions: vec![decision],
        annotations: Vec::new(),
    };
    let (decisions, ran_out) = with_budget(budget, || {
        bind_variables(&mut ctx, &policy.header.variables);
        let (held, ran_out) = with_budget(MATCH_CONDITIONS_BUDGET, || {
            conditions_hold(&ctx, &policy.header.conditions)
        });
        match held {
            _ if ran_out => return Some(vec![out_of_budget()]),
            Ok(true) => {}
            Ok(false) => return None,
            Err(message) => {
                return Some(vec![Decision::Error {
                    message,
                    compile: false,
                }])
            }
        }
        Some(policy.validations.iter().map(|v| v.decide(&ctx)).collect())
    });
    let decisions = match decisions {
        _ if ran_out => return failed(out_of_budget()),
        None => return Evaluated::default(),
        Some(d) => d,
    };
    let (annotations, ran_out) = with_budget(budget, || {
        policy
            .annotations
            .iter()
            .filter_map(|a| a.evaluate(&ctx, policy.header.fail))
            .collect()
    });
    if ran_out {
        return failed(out_of_budget());
    }
    Evaluated {
        decisions,
        annotations,
    }
}

/// The code of a denial's reason (reasonToCode).
fn code_of(reason: &str) -> u16 {
    match reason {
        "Forbidden" => 403,
        "Unauthorized" => 401,
        "RequestEntityTooLarge" => 413,
        _ => 422,
    }
}

/// One entry of [`VALIDATION_FAILURE`] (ValidationFailureValue), its fields in upstream's
/// order.
#[derive(serde::Serialize)]
#[serde(rename_all = "camelCase")]
struct ValidationFailure<'a> {
    message: &'a str,
    policy: &'a str,
    binding: &'a str,
    expression_index: usize,
    validation_actions: &'a [String],
}

/// A denial, until the first of all answers.
struct Denial<'p> {
    policy: &'p str,
    binding: &'p str,
    reason: String,
    message: String,
}

/// The auditAnnotations of the policies, per policy and key: the distinct values of their
/// bindings (auditAnnotationCollector).
#[derive(Default)]
struct Collected<'p>(Vec<(&'p str, &'p str, Vec<String>)>);

impl<'p> Collected<'p> {
    fn add(&mut self, policy: &'p str, key: &'p str, value: String) {
        match self
            .0
            .iter_mut()
            .find(|(p, k, _)| *p == policy && *k == key)
        {
            Some((_, _, values)) if values.contains(&value) => {}
            Some((_, _, values)) => values.push(value),
            None => self.0.push((policy, key, vec![value])),
        }
    }

    fn publish(self, req: &Request) {
        for (policy, key, values) in self.0 {
            req.annotate(format!("{policy}/{key}"), values.join(", "));
        }
    }
}

/// Validates a write against the bound policies.
pub(super) async fn validate(
    bound: &[(Arc<Policy>, Arc<Binding>)],
    params: &dyn Params,
    req: &Request,
    attrs: &Attributes<'_>,
    object: Option<&Value>,
    namespace: Option<&Value>,
) -> Result<(), Error> {
    // What to evaluate: the matching bindings with their params (read first, as that awaits)
    // and the version the policy matched (matchPolicy Equivalent).
    let mut work: Vec<(&Policy, &Binding, ParamsOf, Option<String>)> = Vec::new();
    // One policy's uses as they are (the usual case); several policies' merged.
    let mut uses: Option<std::borrow::Cow<'_, Uses>> = None;
    for (policy, binding) in bound {
        let Some(version) =
            policy
                .header
                .constraints
                .matched(attrs, &req.subresource, object, namespace)
        else {
            continue;
        };
        if !binding
            .resources
            .matches(attrs, &req.subresource, object, namespace)
        {
            continue;
        }
        match &mut uses {
            None => uses = Some(std::borrow::Cow::Borrowed(&policy.uses)),
            Some(u) => u.to_mut().union(&policy.uses),
        }
        work.push((
            policy,
            binding,
            params_of(&policy.header, binding, params, attrs).await,
            version,
        ));
    }
    let Some(uses) = uses.filter(|_| !work.is_empty()) else {
        return Ok(());
    };
    type Decided<'p> = (
        &'p Policy,
        &'p Binding,
        Result<Evaluated<'p>, String>,
        Duration,
    );
    // The write as each matched version sees it (converted once per version).
    let mut views: Vec<(&Option<String>, Invocation)> = Vec::new();
    for (_, _, _, version) in &work {
        if views.iter().all(|(v, _)| *v != version) {
            let invocation = Invocation::new(version.clone(), attrs, object)?;
            views.push((version, invocation));
        }
    }
    let decided: Vec<Decided<'_>> = BASE.with(|base| {
        let mut out = Vec::new();
        for (version, invocation) in &views {
            let (attrs, object) = invocation.view(attrs, object);
            let mut ctx = base.new_inner_scope();
            uses.bind(&mut ctx, (req, &attrs), object, namespace);
            let at_version = work.iter().enumerate().filter(|(_, w)| &w.3 == *version);
            for (i, (policy, binding, params, _)) in at_version {
                match params {
                    Ok(list) => {
                        for p in list {
                            let started = std::time::Instant::now();
                            let evaluated = decide(policy, &ctx, p.as_ref(), RUNTIME_BUDGET);
                            let took = started.elapsed();
                            out.push((i, (*policy, *binding, Ok(evaluated), took)));
                        }
                    }
                    Err(e) => out.push((i, (*policy, *binding, Err(e.clone()), Duration::ZERO))),
                }
            }
        }
        // In binding order, whichever version each policy saw.
        out.sort_by_key(|(i, _)| *i);
        out.into_iter().map(|(_, d)| d).collect()
    });
    let metrics = &crate::metrics::global().admission;
    let mut denials: Vec<Denial<'_>> = Vec::new();
    let mut failures: Vec<ValidationFailure<'_>> = Vec::new();
    let mut collected = Collected::default();
    for (policy, binding, evaluated, took) in &decided {
        let (policy_name, fail) = (policy.header.name.as_str(), policy.header.fail);
        let observe = |action, error_type| {
            metrics.policy_check(
                policy_name,
                &binding.name,
                PolicyOutcome { action, error_type },
                *took,
            );
        };
        let evaluated = match evaluated {
            Ok(e) => e,
            // A binding that cannot be configured (its params): refused under Fail.
            Err(message) if fail => {
                denials.push(Denial {
                    policy: policy_name,
                    binding: &binding.name,
                    reason: String::new(),
                    message: message.clone(),
                });
                continue;
            }
            Err(_) => continue,
        };
        for (index, decision) in evaluated.decisions.iter().enumerate() {
            let (reason, message, error_type) = match decision {
                Decision::Admit => continue,
                Decision::Deny { reason, message } => (reason.as_str(), message, "invalid_error"),
                Decision::Error { message, compile } => {
                    let error_type = if *compile {
                        "compile_error"
                    } else {
                        "invalid_error"
                    };
                    if !fail {
                        tracing::warn!(policy = %policy_name, error = %message, "policy evaluation failed, failing open");
                        observe("allow", error_type);
                        continue;
                    }
                    ("", message, error_type)
                }
            };
            for action in &binding.actions {
                match action.as_str() {
                    "Deny" => {
                        denials.push(Denial {
                            policy: policy_name,
                            binding: &binding.name,
                            reason: reason.to_string(),
                            message: message.clone(),
                        });
                        observe("deny", error_type);
                    }
                    "Audit" => {
                        failures.push(ValidationFailure {
                            message,
                            policy: binding.policy(),
                            binding: &binding.name,
                            expression_index: index,
                            validation_actions: &binding.actions,
                        });
                        observe("audit", error_type);
                    }
                    "Warn" => {
                        req.warn(vec![format!(
                            "Validation failed for ValidatingAdmissionPolicy '{policy_name}' with binding '{}': {message}",
                            binding.name
                        )]);
                        observe("warn", error_type);
                    }
                    _ => {}
                }
            }
        }
        for annotated in &evaluated.annotations {
            match annotated {
                Annotated::Publish { key, value } => collected.add(policy_name, key, value.clone()),
                Annotated::Error(message) => {
                    denials.push(Denial {
                        policy: policy_name,
                        binding: &binding.name,
                        reason: String::new(),
                        message: message.clone(),
                    });
                    observe("deny", "invalid_error");
                }
            }
        }
    }
    collected.publish(req);
    if !failures.is_empty() {
        if failures.len() > MAX_VALIDATION_FAILURES {
            tracing::warn!(count = failures.len(), resource = %attrs.resource, "validation failures exceed {MAX_VALIDATION_FAILURES}; truncating the audit annotation");
            failures.truncate(MAX_VALIDATION_FAILURES);
        }
        if let Ok(value) = serde_json::to_string(&failures) {
            req.annotate(VALIDATION_FAILURE.to_string(), value);
        }
    }
    let Some(denial) = denials.into_iter().next() else {
        return Ok(());
    };
    let reason = if denial.reason.is_empty() {
        "Invalid".to_string()
    } else {
        denial.reason
    };
    Err(Error::Policy {
        code: code_of(&reason),
        reason,
        message: format!(
            "ValidatingAdmissionPolicy '{}' with binding '{}' denied request: {}",
            denial.policy, denial.binding, denial.message
        ),
        group: attrs.group.to_string(),
        resource: attrs.resource.to_string(),
        name: match attrs.name {
            "" => object
                .and_then(|o| o.pointer("/metadata/name"))
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string(),
            n => n.to_string(),
        },
    })
}

#[cfg(test)]
#[path = "policies_tests.rs"]
mod tests;
