//! ValidatingAdmissionPolicy (k8s.io/apiserver/pkg/admission/plugin/policy/validating): CEL
//! validations a policy declares and a binding puts in force. A write matched by a policy's
//! matchConstraints and its binding's matchResources, and whose matchConditions hold, is
//! checked by every validation with `object`, `oldObject`, `request`, `params` (the binding's
//! paramRef) and `namespaceObject`, and the policy's `variables`; a failed validation denies
//! (422 Invalid unless its reason says otherwise), warns, or is only audited, as the
//! binding's validationActions say. An expression that does not compile or fails is decided
//! by the policy's failurePolicy.
//!
//! Where this differs from upstream: expressions are compiled, not type-checked, so
//! `status.typeChecking` is not written; `authorizer` is not bound; auditAnnotations and the
//! Audit action are not recorded (there is no audit log yet).

use super::activation::{
    bind_variables, compile, conditions_hold, json, run, Compiled, Uses, BASE,
};
use super::matching::{params_of, str_at, Binding, Header, Params, ParamsOf};
use super::{Attributes, Error, Request};
use crate::metrics::admission::PolicyOutcome;
use kube_cel::cel::{Context as CelContext, Value as CelValue};
use serde_json::Value;
use std::sync::Arc;
use std::time::Duration;

struct Validation {
    expression: String,
    program: Compiled,
    message: String,
    message_program: Option<Compiled>,
    reason: String,
}

/// A compiled ValidatingAdmissionPolicy.
pub(super) struct Policy {
    header: Header,
    validations: Vec<Validation>,
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
                ),
        );
        Policy {
            header,
            validations,
            uses,
        }
    }
}

/// One decision of a (policy, binding, params).
enum Decision {
    Admit,
    Deny { reason: String, message: String },
}

/// Evaluates one policy for one params object (None: the policy takes none).
fn decide(
    policy: &Policy,
    base: &CelContext<'_>,
    params: Option<&Value>,
) -> Result<Decision, String> {
    let mut ctx = base.new_inner_scope();
    ctx.add_variable_from_value("params", json(params));
    bind_variables(&mut ctx, &policy.header.variables);
    if !conditions_hold(&ctx, &policy.header.conditions)? {
        return Ok(Decision::Admit);
    }
    for v in &policy.validations {
        let what = || format!("expression '{}'", v.expression);
        match run(&ctx, &v.program, &what)? {
            CelValue::Bool(true) => continue,
            CelValue::Bool(false) => {}
            _ => return Err(format!("{} must evaluate to bool", what())),
        }
        let from_expression = v.message_program.as_ref().and_then(|p| {
            match run(&ctx, p, &|| "messageExpression".to_string()) {
                Ok(CelValue::String(s)) if !s.trim().is_empty() => Some(s.to_string()),
                _ => None,
            }
        });
        let message = from_expression
            .or_else(|| (!v.message.is_empty()).then(|| v.message.clone()))
            .unwrap_or_else(|| format!("failed expression: {}", v.expression));
        return Ok(Decision::Deny {
            reason: v.reason.clone(),
            message,
        });
    }
    Ok(Decision::Admit)
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

/// Validates a write against the bound policies.
pub(super) async fn validate(
    bound: &[(Arc<Policy>, Arc<Binding>)],
    params: &dyn Params,
    req: &Request,
    attrs: &Attributes<'_>,
    object: Option<&Value>,
    namespace: Option<&Value>,
) -> Result<(), Error> {
    // What to evaluate: the matching bindings with their params (read first, as that awaits).
    let mut work: Vec<(&Policy, &Binding, ParamsOf)> = Vec::new();
    // One policy's uses as they are (the usual case); several policies' merged.
    let mut uses: Option<std::borrow::Cow<'_, Uses>> = None;
    for (policy, binding) in bound {
        if !policy
            .header
            .constraints
            .matches(attrs, &req.subresource, object, namespace)
            || !binding
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
        ));
    }
    let Some(uses) = uses.filter(|_| !work.is_empty()) else {
        return Ok(());
    };
    type Decided<'p> = (&'p Policy, &'p Binding, Result<Decision, String>, Duration);
    let decisions: Vec<Decided<'_>> = BASE.with(|base| {
        let mut ctx = base.new_inner_scope();
        uses.bind(&mut ctx, (req, attrs), object, namespace);
        let mut out = Vec::new();
        for (policy, binding, params) in &work {
            match params {
                Ok(list) => {
                    for p in list {
                        let started = std::time::Instant::now();
                        let decision = decide(policy, &ctx, p.as_ref());
                        out.push((*policy, *binding, decision, started.elapsed()));
                    }
                }
                Err(e) => out.push((*policy, *binding, Err(e.clone()), Duration::ZERO)),
            }
        }
        out
    });
    let metrics = &crate::metrics::global().admission;
    for (policy, binding, decision, took) in decisions {
        let outcomes: &[PolicyOutcome] = match &decision {
            Ok(Decision::Admit) => &[PolicyOutcome::Allowed],
            Ok(Decision::Deny { .. }) => match (binding.deny, binding.warn) {
                (true, true) => &[
                    PolicyOutcome::Violated("deny"),
                    PolicyOutcome::Violated("warn"),
                ],
                (true, false) => &[PolicyOutcome::Violated("deny")],
                (false, true) => &[PolicyOutcome::Violated("warn")],
                (false, false) => &[PolicyOutcome::Violated("audit")],
            },
            Err(_) => &[PolicyOutcome::EvaluationError],
        };
        for outcome in outcomes {
            metrics.policy_check(&policy.header.name, &binding.name, *outcome, took);
        }
        let (reason, message) = match decision {
            Ok(Decision::Admit) => continue,
            Ok(Decision::Deny { reason, message }) => (reason, message),
            Err(e) if policy.header.fail => (String::new(), e),
            Err(e) => {
                tracing::warn!(policy = %policy.header.name, error = %e, "policy evaluation failed, failing open");
                continue;
            }
        };
        if binding.warn {
            req.warn(vec![format!(
                "Validation failed for ValidatingAdmissionPolicy '{}' with binding '{}': {message}",
                policy.header.name, binding.name
            )]);
        }
        if binding.deny {
            let reason = if reason.is_empty() {
                "Invalid".to_string()
            } else {
                reason
            };
            return Err(Error::Policy {
                code: code_of(&reason),
                reason,
                message: format!(
                    "ValidatingAdmissionPolicy '{}' with binding '{}' denied request: {message}",
                    policy.header.name, binding.name
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
            });
        }
    }
    Ok(())
}
