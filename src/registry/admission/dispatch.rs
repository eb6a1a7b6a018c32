//! One write through admission, in kube-apiserver's plugin order: mutating admission
//! (MutatingAdmissionPolicy, then MutatingAdmissionWebhook; the pass runs once more when a
//! policy or webhook with `reinvocationPolicy: IfNeeded` saw a later change), then, after the
//! resource's own validation, validating admission (ValidatingAdmissionPolicy, then
//! ValidatingAdmissionWebhook, the webhooks called in parallel).

use super::chain::Kind;
use super::webhooks::{call_key, NamespaceCell};
use super::{exempt, mutating, policies, review, Attributes, Redecode, Request};
use serde_json::Value;
use std::collections::HashMap;

/// What identifies a policy invocation for reinvocation: policy, binding, and the params'
/// namespace and name.
pub(super) type Key = (String, String, String, String);

/// Reinvocation (admission's reinvoker with the policy and webhook reinvocation contexts): a
/// mutator that asked for it runs again in the second pass when the object changed after it
/// last ran, whoever changed it. Policies follow one more rule of upstream's dispatcher: a
/// first pass in which any policy's mutation applied (changed or not: it marks the object
/// dirty) queues every IfNeeded policy that ran for the second pass.
#[derive(Debug, Default)]
pub(super) struct Reinvocation {
    /// Changes made to the object so far.
    changes: usize,
    /// The second pass is running.
    again: bool,
    /// A policy's mutation applied in the first pass.
    applied: bool,
    /// The IfNeeded policy invocations that ran, with the changes made by then.
    policies: HashMap<Key, usize>,
    /// The IfNeeded webhooks (by position) that ran, with the changes made by then.
    webhooks: HashMap<usize, usize>,
}

impl Reinvocation {
    /// A mutator changed the object.
    pub(super) fn changed(&mut self) {
        self.changes += 1;
    }

    /// A policy's mutation applied.
    pub(super) fn applied(&mut self) {
        self.applied |= !self.again;
    }

    /// Whether the second pass runs: something changed, or a policy's mutation applied.
    fn again(&self) -> bool {
        self.changes > 0 || self.applied
    }

    /// Whether the policy invocation `key` runs in this pass.
    pub(super) fn should_run_policy(&self, key: &Key) -> bool {
        !self.again
            || self
                .policies
                .get(key)
                .is_some_and(|seen| self.applied || self.changes > *seen)
    }

    /// The IfNeeded policy invocation `key` ran.
    pub(super) fn ran_policy(&mut self, key: Key) {
        self.policies.insert(key, self.changes);
    }

    fn should_run_webhook(&self, i: usize) -> bool {
        !self.again
            || self
                .webhooks
                .get(&i)
                .is_some_and(|seen| self.changes > *seen)
    }

    fn ran_webhook(&mut self, i: usize) {
        self.webhooks.insert(i, self.changes);
    }
}

/// Runs one admission step, mutating (admit) or validating, timed in the metrics
/// (apiserver_admission_step_admission_duration_seconds).
async fn timed_step(
    mutating: bool,
    attrs: &Attributes<'_>,
    step: impl std::future::Future<Output = Result<(), crate::registry::Error>>,
) -> Result<(), crate::registry::Error> {
    let started = std::time::Instant::now();
    let result = step.await;
    crate::metrics::global().admission.step(
        mutating,
        attrs.operation.as_str(),
        result.is_err(),
        started.elapsed(),
    );
    result
}

impl Request {
    /// Mutating admission of `object` (None for a delete): the matching
    /// MutatingAdmissionPolicies in binding name order, then the matching mutating webhooks in
    /// configuration name order, each result made canonical again by `redecode`; then, if
    /// anything changed, those that asked to be reinvoked and saw a later change, once more.
    pub(crate) async fn mutate(
        &self,
        attrs: &Attributes<'_>,
        object: &mut Option<Value>,
        redecode: &Redecode<'_>,
    ) -> Result<(), crate::registry::Error> {
        // Nothing to run: not even timed.
        if exempt(attrs.group, attrs.resource) || !self.chain.has_mutating() {
            return Ok(());
        }
        timed_step(true, attrs, self.mutate_all(attrs, object, redecode)).await
    }

    /// [`Self::mutate`] without the metrics.
    async fn mutate_all(
        &self,
        attrs: &Attributes<'_>,
        object: &mut Option<Value>,
        redecode: &Redecode<'_>,
    ) -> Result<(), crate::registry::Error> {
        let hooks = self.chain.hooks(Kind::Mutating);
        let has_policies = !self.chain.mutating_policies().is_empty();
        let ns = NamespaceCell::new();
        let mut reinvocation = Reinvocation::default();
        for again in [false, true] {
            if again && !reinvocation.again() {
                break;
            }
            reinvocation.again = again;
            if has_policies && object.is_some() {
                let namespace = match attrs.namespace {
                    "" => &None,
                    name => ns.get_or_init(|| self.chain.namespace(name)).await,
                };
                let namespace = namespace.as_ref().map(|n| &n.obj);
                let write = (self, attrs);
                mutating::admit(
                    &self.chain,
                    write,
                    object,
                    namespace,
                    redecode,
                    &mut reinvocation,
                )
                .await?;
            }
            for (i, hook) in hooks.iter().enumerate() {
                if !reinvocation.should_run_webhook(i) {
                    continue;
                }
                let Some(invocation) = hook
                    .decides((&self.chain, &ns), self, attrs, object.as_ref())
                    .await?
                else {
                    continue;
                };
                let at = (usize::from(again), i);
                if hook
                    .mutate(at, (self, attrs), &invocation, object, redecode)
                    .await?
                {
                    reinvocation.changed();
                }
                if hook.if_needed {
                    reinvocation.ran_webhook(i);
                }
            }
        }
        Ok(())
    }

    /// Validating admission of `object`: the bound ValidatingAdmissionPolicies, then every
    /// matching validating webhook, called in parallel; the first refusal (in configuration
    /// order) wins.
    pub(crate) async fn validate(
        &self,
        attrs: &Attributes<'_>,
        object: Option<&Value>,
    ) -> Result<(), crate::registry::Error> {
        if exempt(attrs.group, attrs.resource) || !self.chain.has_validating() {
            return Ok(());
        }
        timed_step(false, attrs, self.validate_all(attrs, object)).await
    }

    /// [`Self::validate`] without the metrics.
    async fn validate_all(
        &self,
        attrs: &Attributes<'_>,
        object: Option<&Value>,
    ) -> Result<(), crate::registry::Error> {
        let bound = self.chain.validating_policies();
        let ns = NamespaceCell::new();
        if !bound.is_empty() {
            // The namespace is read only when a selector or an expression looks at it.
            let wanted = bound
                .iter()
                .any(|(p, b)| p.needs_namespace() || b.needs_namespace());
            let namespace = match attrs.namespace {
                name if wanted && !name.is_empty() => {
                    ns.get_or_init(|| self.chain.namespace(name)).await
                }
                _ => &None,
            };
            let namespace = namespace.as_ref().map(|n| &n.obj);
            policies::validate(&bound, self.chain.as_ref(), self, attrs, object, namespace).await?;
        }
        let hooks = self.chain.hooks(Kind::Validating);
        let mut deciding = Vec::new();
        for hook in hooks.iter() {
            if let Some(invocation) = hook
                .decides((&self.chain, &ns), self, attrs, object)
                .await?
            {
                deciding.push((hook.clone(), invocation));
            }
        }
        let calls = deciding
            .iter()
            .enumerate()
            .map(|(i, (hook, invocation))| async move {
                let (attrs, object) = invocation.view(attrs, object);
                match hook.call(false, self, &attrs, object).await {
                    Ok(answer) => {
                        hook.annotate(self, answer.audit_annotations);
                        self.warn(answer.warnings);
                        if answer.allowed {
                            Ok(())
                        } else {
                            Err(review::denied(&hook.name, answer.status.as_ref()))
                        }
                    }
                    Err(cause) => hook.call_failed(
                        self,
                        call_key("failed-open.validating.webhook.admission.k8s.io/", (0, i)),
                        cause,
                    ),
                }
            });
        for result in futures::future::join_all(calls).await {
            result?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(name: &str) -> Key {
        (name.into(), "b".into(), String::new(), String::new())
    }

    #[test]
    fn a_mutator_runs_again_only_after_a_later_change() {
        let mut r = Reinvocation::default();
        // First pass: a runs, a webhook changes the object, b and webhook 0 run after.
        r.ran_policy(key("a"));
        r.changed();
        r.ran_policy(key("b"));
        r.ran_webhook(0);
        assert!(r.again());
        r.again = true;
        assert!(r.should_run_policy(&key("a")));
        assert!(!r.should_run_policy(&key("b")));
        assert!(!r.should_run_webhook(0));
        assert!(!r.should_run_policy(&key("never-ran")));
        // A change in the second pass makes the webhook run again after it.
        r.changed();
        assert!(r.should_run_webhook(0));
    }

    #[test]
    fn an_applied_policy_mutation_reinvokes_every_if_needed_policy() {
        let mut r = Reinvocation::default();
        r.ran_policy(key("a"));
        assert!(!r.again());
        // b's mutation applied without changing anything: a and b both run again.
        r.applied();
        r.ran_policy(key("b"));
        r.ran_webhook(0);
        assert!(r.again());
        r.again = true;
        assert!(r.should_run_policy(&key("a")) && r.should_run_policy(&key("b")));
        // Webhooks still need a change after them.
        assert!(!r.should_run_webhook(0));
    }
}
