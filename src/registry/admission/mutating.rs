//! MutatingAdmissionPolicy (k8s.io/apiserver/pkg/admission/plugin/policy/mutating): CEL
//! mutations a policy declares and a binding puts in force. A create or update matched by the
//! policy's matchConstraints and its binding's matchResources, and whose matchConditions hold,
//! goes through the policy's mutations in order, each seeing the object the previous one
//! left: an `ApplyConfiguration` expression returns an `Object{...}` merged into the object
//! as server-side apply merges ([`super::patch`]), a `JSONPatch` expression returns a list of
//! `JSONPatch{...}` operations. Each result is made canonical again as a webhook's patch is.
//!
//! A mutation that does not compile, fails, or returns a patch that does not apply is decided
//! by the policy's failurePolicy: under Fail the write is refused (403, `policy '<p>' with
//! binding '<b>' denied request: <cause>`) after the other policies ran, as the generic
//! policy dispatcher refuses; under Ignore that mutation is skipped and the others apply.
//! Policies run in binding name order (upstream's order is that of a Go map), before the
//! mutating webhooks; one with `reinvocationPolicy: IfNeeded` runs once more if a later
//! policy or webhook changed the object, or, as upstream's dispatcher does, if any policy's
//! mutation applied in the first pass ([`super::dispatch::Reinvocation`]). Under matchPolicy
//! Equivalent (the default) a policy whose rules name another served version of a custom
//! resource mutates the write converted to that version, and the result comes back to the
//! version written.
//!
//! Where this differs from upstream: expressions are parsed, not type-checked (a mutation
//! returning the wrong type fails when evaluated, with upstream's message, rather than when
//! compiled); an apply configuration's fields are not checked against the schema (an unknown
//! field is dropped or refused as the object's decoding decides; at an equivalent version, by
//! the schema of the version written); the runtime cost counts comprehensions' iterations
//! only ([`crate::registry::cel::budget`]).

use super::activation::{
    bind_variables, compile_mutation, conditions_hold, execute, json, Compiled, Uses, BASE,
};
use super::chain::Chain;
use super::dispatch::{Key, Reinvocation};
use super::matching::{params_of, str_at, Binding, Header};
use super::patch::{self, Merge};
use super::webhooks::Invocation as Versioned;
use super::{Attributes, Error, Redecode, Request};
use crate::registry::cel::budget::{
    with_budget, MATCH_CONDITIONS_BUDGET, OUT_OF_BUDGET, RUNTIME_BUDGET,
};
use crate::registry::cel::{json_patch_literal, object_literal};
use kube_cel::cel::Context as CelContext;
use serde_json::Value;

/// How a mutation's result is applied (patchType).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum PatchType {
    ApplyConfiguration,
    JsonPatch,
}

/// One mutation of a policy.
struct Mutation {
    patch_type: PatchType,
    expression: String,
    compiled: Compiled,
}

impl Mutation {
    /// The object after this mutation (not yet made canonical).
    fn apply(
        &self,
        ctx: &CelContext<'_>,
        attrs: &Attributes<'_>,
        object: &Value,
        merge: Option<&dyn Merge>,
    ) -> Result<Value, String> {
        // A compile error is the whole message (`compilation failed: ...`), as upstream's.
        let expr = self.compiled.as_ref().map_err(Clone::clone)?;
        let result = execute(expr, ctx)
            .map_err(|e| format!("expression '{}' resulted in error: {e}", self.expression))?;
        match self.patch_type {
            PatchType::ApplyConfiguration => {
                let config = object_literal(&result).map_err(|e| e.to_string())?;
                patch::apply_configuration(merge, attrs, object, config)
            }
            PatchType::JsonPatch => {
                let ops = json_patch_literal(&result).map_err(|e| e.to_string())?;
                patch::json_patch(object, ops)
            }
        }
    }
}

/// A compiled MutatingAdmissionPolicy.
pub(super) struct Policy {
    header: Header,
    mutations: Vec<Mutation>,
    /// reinvocationPolicy IfNeeded.
    if_needed: bool,
    /// The variables its expressions read.
    uses: Uses,
}

impl Policy {
    /// Compiles the policy `v`.
    pub(super) fn new(v: &Value) -> Policy {
        let spec = v.get("spec").unwrap_or(&Value::Null);
        let header = Header::new(v);
        let mutations: Vec<Mutation> = spec
            .get("mutations")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|m| {
                let (patch_type, field) = match str_at(m, "/patchType") {
                    "ApplyConfiguration" => (PatchType::ApplyConfiguration, "applyConfiguration"),
                    "JSONPatch" => (PatchType::JsonPatch, "jsonPatch"),
                    // Validation allows no other.
                    _ => return None,
                };
                let expression = str_at(m, &format!("/{field}/expression")).to_string();
                Some(Mutation {
                    patch_type,
                    compiled: compile_mutation(&expression),
                    expression,
                })
            })
            .collect();
        let uses = Uses::of(
            header
                .conditions
                .iter()
                .chain(&header.variables)
                .map(|(_, p)| p)
                .chain(mutations.iter().map(|m| &m.compiled)),
        );
        Policy {
            if_needed: str_at(spec, "/reinvocationPolicy") == "IfNeeded",
            header,
            mutations,
            uses,
        }
    }
}

/// What one invocation (policy, binding, params) did.
#[derive(Default)]
struct Invocation {
    /// Its matchConditions held (or failed): it counts as invoked.
    ran: bool,
    /// One of its mutations applied (whether or not it changed anything).
    applied: bool,
    /// It changed the object.
    changed: bool,
    /// Why mutations (or the matchConditions) failed.
    errors: Vec<String>,
}

/// The environment of one write's mutations.
struct Write<'a> {
    req: &'a Request,
    attrs: &'a Attributes<'a>,
    namespace: Option<&'a Value>,
    merge: Option<&'a dyn Merge>,
    redecode: &'a Redecode<'a>,
}

impl Write<'_> {
    /// Runs `policy` with `params` over `object`.
    fn invoke(
        &self,
        (policy, binding): (&Policy, &Binding),
        params: Option<&Value>,
        object: &mut Value,
    ) -> Invocation {
        let metrics = &crate::metrics::global().admission;
        // The mutations' cost budget, as upstream's; the matchConditions have their own.
        let (mut out, ran_out) = with_budget(RUNTIME_BUDGET, || {
            BASE.with(|base| {
                let mut ctx = base.new_inner_scope();
                let uses = &policy.uses;
                uses.bind(
                    &mut ctx,
                    (self.req, self.attrs),
                    Some(object),
                    self.namespace,
                );
                ctx.add_variable_from_value("params", json(params));
                bind_variables(&mut ctx, &policy.header.variables);
                let mut out = Invocation::default();
                let (held, ran_out) = with_budget(MATCH_CONDITIONS_BUDGET, || {
                    conditions_hold(&ctx, &policy.header.conditions)
                });
                match held {
                    _ if ran_out => {
                        out.errors.push(OUT_OF_BUDGET.to_string());
                        return out;
                    }
                    Ok(true) => {}
                    Ok(false) => return out,
                    Err(e) => {
                        out.errors.push(e);
                        return out;
                    }
                }
                out.ran = true;
                for (i, m) in policy.mutations.iter().enumerate() {
                    if i > 0 && out.changed {
                        // Each mutation sees the object the previous ones left.
                        uses.bind_object(&mut ctx, Some(object));
                    }
                    let started = std::time::Instant::now();
                    let applied = m.apply(&ctx, self.attrs, object, self.merge);
                    let error_type = match &applied {
                        Ok(_) => "no_error",
                        Err(e) if e.starts_with("compilation") => "compile_error",
                        Err(_) => "invalid_error",
                    };
                    metrics.mutation_check(
                        &policy.header.name,
                        &binding.name,
                        error_type,
                        started.elapsed(),
                    );
                    let patched = match applied {
                        Ok(p) if &p == object => {
                            out.applied = true;
                            continue;
                        }
                        Ok(p) => p,
                        Err(e) => {
                            out.errors.push(e);
                            continue;
                        }
                    };
                    match (self.redecode)(patched) {
                        Ok(canonical) => {
                            out.applied = true;
                            out.changed |= &canonical != object;
                            *object = canonical;
                        }
                        Err(e) => out.errors.push(e.to_string()),
                    }
                }
                out
            })
        });
        if ran_out && !out.errors.iter().any(|e| e == OUT_OF_BUDGET) {
            out.errors.push(OUT_OF_BUDGET.to_string());
        }
        out
    }

    /// [`Self::invoke`] at `version`, another served version of the resource that the policy
    /// matched by matchPolicy Equivalent: the policy sees the object and the old one converted
    /// to it, each mutation's result is made canonical at the version written and converted
    /// again, and the object comes back converted (a conversion that fails is an internal
    /// error, as upstream's versioned attributes).
    fn invoke_at(
        &self,
        version: &str,
        policy: (&Policy, &Binding),
        params: Option<&Value>,
        object: &mut Value,
    ) -> Result<Invocation, Error> {
        let mut invocation = Versioned::new(Some(version.to_string()), self.attrs, Some(object))?;
        let Some(mut seen) = invocation.take_object() else {
            // No conversion to make (no equivalent versions): the policy sees the object as
            // written.
            return Ok(self.invoke(policy, params, object));
        };
        let (attrs, _) = invocation.view(self.attrs, None);
        let redecode = |patched: Value| -> Result<Value, crate::registry::Error> {
            let canonical = (self.redecode)(invocation.back(self.attrs, patched)?)?;
            Ok(invocation.forth(self.attrs, canonical)?)
        };
        let write = Write {
            attrs: &attrs,
            redecode: &redecode,
            ..*self
        };
        let outcome = write.invoke(policy, params, &mut seen);
        if outcome.changed {
            // Canonical already: the last mutation's result, written version and back.
            *object = invocation.back(self.attrs, seen)?;
        }
        Ok(outcome)
    }

    /// The refusal of a failed invocation under failurePolicy Fail; under Ignore, nothing.
    fn failed(
        &self,
        (policy, binding): (&Policy, &Binding),
        reason: &str,
        cause: String,
        object: &Value,
    ) -> Option<Error> {
        if !policy.header.fail {
            tracing::warn!(policy = %policy.header.name, binding = %binding.name, error = %cause,
                "mutating admission policy failed, failing open");
            return None;
        }
        // extractResourceName: the object's name, else its generateName, else "Unknown".
        let name = [
            self.attrs.name,
            meta(object, "name"),
            meta(object, "generateName"),
        ]
        .into_iter()
        .find(|n| !n.is_empty())
        .unwrap_or("Unknown");
        Some(Error::MutatingPolicy {
            reason: reason.to_string(),
            message: format!(
                "policy '{}' with binding '{}' denied request: {cause}",
                policy.header.name, binding.name
            ),
            group: self.attrs.group.to_string(),
            resource: self.attrs.resource.to_string(),
            name: name.to_string(),
        })
    }
}

fn meta<'a>(object: &'a Value, field: &str) -> &'a str {
    object
        .get("metadata")
        .and_then(|m| m.get(field))
        .and_then(Value::as_str)
        .unwrap_or("")
}

/// The reinvocation key of an invocation: policy, binding, and the params' namespace and name.
fn key(policy: &Policy, binding: &Binding, params: Option<&Value>) -> Key {
    let param = |field| params.map_or("", |p| meta(p, field)).to_string();
    (
        policy.header.name.clone(),
        binding.name.clone(),
        param("namespace"),
        param("name"),
    )
}

/// Runs the bound MutatingAdmissionPolicies over `object` (a create's or update's; nothing
/// for a delete), once, or on reinvocation only those `reinvocation` says to run again.
///
/// # Errors
///
/// The first failure of a policy whose failurePolicy is Fail (the others still run, as
/// upstream collects every policy's errors before refusing).
pub(super) async fn admit(
    chain: &Chain,
    (req, attrs): (&Request, &Attributes<'_>),
    object: &mut Option<Value>,
    namespace: Option<&Value>,
    redecode: &Redecode<'_>,
    reinvocation: &mut Reinvocation,
) -> Result<(), Error> {
    let bound = chain.mutating_policies();
    let Some(obj) = object.as_mut() else {
        return Ok(());
    };
    let write = Write {
        req,
        attrs,
        namespace,
        merge: chain.merge(),
        redecode,
    };
    let mut refusal = None;
    for (policy, binding) in bound.iter() {
        let (policy, binding): (&Policy, &Binding) = (policy, binding);
        // The version the policy sees the write at (matchPolicy Equivalent), None: as written.
        let Some(version) =
            policy
                .header
                .constraints
                .matched(attrs, &req.subresource, Some(obj), namespace)
        else {
            continue;
        };
        if !binding
            .resources
            .matches(attrs, &req.subresource, Some(obj), namespace)
        {
            continue;
        }
        let params = match params_of(&policy.header, binding, chain, attrs).await {
            Ok(p) => p,
            Err(e) => {
                let failed = write.failed((policy, binding), "Forbidden", e, obj);
                refusal = refusal.or(failed);
                continue;
            }
        };
        for p in params {
            let key = key(policy, binding, p.as_ref());
            if !reinvocation.should_run_policy(&key) {
                continue;
            }
            let outcome = match &version {
                None => write.invoke((policy, binding), p.as_ref(), obj),
                Some(v) => write.invoke_at(v, (policy, binding), p.as_ref(), obj)?,
            };
            for e in outcome.errors {
                let failed = write.failed((policy, binding), "Invalid", e, obj);
                refusal = refusal.or(failed);
            }
            if outcome.applied {
                reinvocation.applied();
            }
            if outcome.changed {
                reinvocation.changed();
            }
            if outcome.ran && policy.if_needed {
                reinvocation.ran_policy(key);
            }
        }
    }
    refusal.map_or(Ok(()), Err)
}

#[cfg(test)]
mod tests;
