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

use super::projection::Projection;
use super::webhooks::{labels, rule_matches, selector};
use super::{Attributes, Error, Request};
use crate::metrics::admission::PolicyOutcome;
use kube::core::{Selector, SelectorExt};
use kube_cel::cel::{Context as CelContext, Program, Value as CelValue};
use kube_cel::KubeCelExt;
use serde_json::Value;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

/// A compiled expression, or why it did not compile.
type Compiled = Result<Program, String>;

fn compile(expr: &str) -> Compiled {
    Program::compile(expr).map_err(|e| format!("compilation failed: {e}"))
}

fn str_at<'a>(v: &'a Value, ptr: &str) -> &'a str {
    v.pointer(ptr).and_then(Value::as_str).unwrap_or("")
}

/// What a policy or binding matches (MatchResources).
#[derive(Default)]
struct Matcher {
    rules: Vec<Value>,
    exclude: Vec<Value>,
    namespace_selector: Option<Selector>,
    object_selector: Option<Selector>,
    /// matchResources was given (a binding without one matches whatever its policy does).
    given: bool,
}

impl Matcher {
    fn new(v: Option<&Value>) -> Matcher {
        let Some(v) = v.filter(|v| v.is_object()) else {
            return Matcher::default();
        };
        let list = |k: &str| {
            v.get(k)
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default()
        };
        Matcher {
            rules: list("resourceRules"),
            exclude: list("excludeResourceRules"),
            namespace_selector: selector(v.get("namespaceSelector")),
            object_selector: selector(v.get("objectSelector")),
            given: true,
        }
    }

    fn named(rule: &Value, name: &str) -> bool {
        rule.get("resourceNames")
            .and_then(Value::as_array)
            .is_none_or(|n| n.is_empty() || n.iter().any(|x| x.as_str() == Some(name)))
    }

    fn matches(
        &self,
        attrs: &Attributes<'_>,
        subresource: &str,
        object: Option<&Value>,
        namespace: Option<&Value>,
    ) -> bool {
        if !self.given {
            return true;
        }
        let hit = |r: &Value| rule_matches(r, attrs, subresource) && Matcher::named(r, attrs.name);
        // A binding's empty resourceRules leave the policy's matching as it is.
        if (!self.rules.is_empty() && !self.rules.iter().any(hit)) || self.exclude.iter().any(hit) {
            return false;
        }
        if let Some(sel) = &self.object_selector {
            let on = |o: Option<&Value>| o.is_some() && sel.matches(&labels(o));
            if !on(object) && !on(attrs.old_object) {
                return false;
            }
        }
        if let Some(sel) = &self.namespace_selector {
            let is_namespace = attrs.group.is_empty() && attrs.resource == "namespaces";
            let ns_labels = if is_namespace {
                labels(object.or(attrs.old_object))
            } else if attrs.namespace.is_empty() {
                return true;
            } else {
                labels(namespace)
            };
            if !sel.matches(&ns_labels) {
                return false;
            }
        }
        true
    }
}

struct Validation {
    expression: String,
    program: Compiled,
    message: String,
    message_program: Option<Compiled>,
    reason: String,
}

/// A compiled ValidatingAdmissionPolicy.
pub(super) struct Policy {
    name: String,
    /// paramKind: apiVersion and kind.
    param_kind: Option<(String, String)>,
    constraints: Matcher,
    conditions: Vec<(String, Compiled)>,
    variables: Vec<(String, Compiled)>,
    validations: Vec<Validation>,
    fail: bool,
    /// The variables its expressions read.
    uses: Uses,
}

impl Policy {
    pub(super) fn new(v: &Value) -> Policy {
        let spec = v.get("spec").unwrap_or(&Value::Null);
        let named = |k: &str, field: &str| -> Vec<(String, Compiled)> {
            spec.get(k)
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .map(|c| (str_at(c, "/name").to_string(), compile(str_at(c, field))))
                .collect()
        };
        let param_kind = spec.get("paramKind").filter(|p| p.is_object()).map(|p| {
            (
                str_at(p, "/apiVersion").to_string(),
                str_at(p, "/kind").to_string(),
            )
        });
        let mut policy = Policy {
            name: str_at(v, "/metadata/name").to_string(),
            param_kind,
            constraints: Matcher::new(spec.get("matchConstraints")),
            conditions: named("matchConditions", "/expression"),
            variables: named("variables", "/expression"),
            validations: spec
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
                .collect(),
            fail: str_at(spec, "/failurePolicy") != "Ignore",
            uses: Uses::default(),
        };
        policy.uses = Uses::of(&policy);
        policy
    }

    /// Whether evaluating it needs the namespace object (its namespaceSelector, or
    /// `namespaceObject` in an expression).
    pub(super) fn needs_namespace(&self) -> bool {
        self.uses.namespace || self.constraints.namespace_selector.is_some()
    }
}

/// A ValidatingAdmissionPolicyBinding.
pub(super) struct Binding {
    name: String,
    policy: String,
    param_ref: Option<Value>,
    resources: Matcher,
    deny: bool,
    warn: bool,
}

impl Binding {
    pub(super) fn new(v: &Value) -> Binding {
        let spec = v.get("spec").unwrap_or(&Value::Null);
        let actions: Vec<&str> = spec
            .get("validationActions")
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        Binding {
            name: str_at(v, "/metadata/name").to_string(),
            policy: str_at(spec, "/policyName").to_string(),
            param_ref: spec.get("paramRef").filter(|p| p.is_object()).cloned(),
            resources: Matcher::new(spec.get("matchResources")),
            deny: actions.contains(&"Deny"),
            warn: actions.contains(&"Warn"),
        }
    }

    /// The policy bound.
    pub(super) fn policy(&self) -> &str {
        &self.policy
    }

    /// Whether its matchResources select by namespace labels.
    pub(super) fn needs_namespace(&self) -> bool {
        self.resources.namespace_selector.is_some()
    }
}

/// What the params of a binding are looked up with.
pub(super) trait Params: Send + Sync {
    /// The objects of `api_version`/`kind` named `name` (or matching `selector`) in
    /// `namespace` ("" for cluster-scoped or every namespace).
    fn find(
        &self,
        api_version: &str,
        kind: &str,
        namespace: &str,
        name: Option<&str>,
        selector: Option<&Selector>,
    ) -> futures::future::BoxFuture<'_, Result<Vec<Value>, String>>;
}

/// One decision of a (policy, binding, params).
enum Decision {
    Admit,
    Deny { reason: String, message: String },
}

fn json(v: &Value) -> CelValue {
    kube_cel::cel::to_value(v).unwrap_or(CelValue::Null)
}

/// The `request` variable, with only the top-level fields `parts` keeps (each is made only
/// when kept: the whole request costs more to build and convert than three rules do to run).
fn cel_request(req: &Request, attrs: &Attributes<'_>, parts: &Projection) -> Value {
    let kind =
        || serde_json::json!({"group": attrs.group, "version": attrs.version, "kind": attrs.kind});
    let resource = || serde_json::json!({"group": attrs.group, "version": attrs.version, "resource": attrs.resource});
    let fields: [(&str, &dyn Fn() -> Value); 11] = [
        ("operation", &|| attrs.operation.as_str().into()),
        ("name", &|| attrs.name.into()),
        ("namespace", &|| attrs.namespace.into()),
        ("dryRun", &|| attrs.dry_run.into()),
        ("kind", &kind),
        ("resource", &resource),
        ("subResource", &|| req.subresource.clone().into()),
        ("requestKind", &kind),
        ("requestResource", &resource),
        ("requestSubResource", &|| req.subresource.clone().into()),
        ("userInfo", &|| {
            serde_json::json!({"username": req.user.name, "uid": req.user.uid,
                               "groups": req.user.groups, "extra": req.user.extra})
        }),
    ];
    let kept = fields
        .iter()
        .filter(|(name, _)| parts.keeps(name))
        .map(|(name, make)| (name.to_string(), make()))
        .collect();
    parts.apply(&Value::Object(kept))
}

/// Runs `program`; an expression the interpreter cannot run (it panics on some, such as
/// object construction) is an evaluation error, decided by the failurePolicy like any other.
pub(super) fn execute(program: &Program, ctx: &CelContext<'_>) -> Result<CelValue, String> {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| program.execute(ctx))) {
        Ok(result) => result.map_err(|e| e.to_string()),
        Err(_) => Err("the expression uses CEL that kapi cannot evaluate yet".into()),
    }
}

/// Evaluates one policy for one params object (None: the policy takes none).
fn decide(
    policy: &Policy,
    base: &CelContext<'_>,
    params: Option<&Value>,
) -> Result<Decision, String> {
    let mut ctx = base.new_inner_scope();
    ctx.add_variable_from_value("params", params.map_or(CelValue::Null, json));
    // The label of an expression is formatted only for an error.
    let run = |ctx: &CelContext<'_>,
               p: &Compiled,
               what: &dyn Fn() -> String|
     -> Result<CelValue, String> {
        let program = p.as_ref().map_err(|e| format!("{}: {e}", what()))?;
        execute(program, ctx).map_err(|e| format!("{} resulted in error: {e}", what()))
    };
    if !policy.variables.is_empty() {
        let mut variables: HashMap<String, CelValue> = HashMap::new();
        for (name, p) in &policy.variables {
            if let Ok(v) = run(&ctx, p, &|| name.clone()) {
                variables.insert(name.clone(), v);
                ctx.add_variable_from_value("variables", variables.clone());
            }
        }
        ctx.add_variable_from_value("variables", variables);
    }
    for (name, p) in &policy.conditions {
        match run(&ctx, p, &|| format!("matchCondition '{name}'"))? {
            CelValue::Bool(true) => {}
            CelValue::Bool(false) => return Ok(Decision::Admit),
            _ => return Err(format!("matchCondition '{name}' must evaluate to bool")),
        }
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

thread_local! {
    /// A CEL context with the Kubernetes library registered, made once per thread: a write
    /// binds its variables in a scope over it.
    static BASE: CelContext<'static> = CelContext::default().with_all();
}

/// Which variables a policy's expressions read, and which parts of the object and the old
/// object, so a write converts only those.
#[derive(Default, Clone)]
struct Uses {
    object: bool,
    old_object: bool,
    request: bool,
    namespace: bool,
    /// What the expressions can observe of `object`, `oldObject` and `request`.
    object_parts: Projection,
    old_object_parts: Projection,
    request_parts: Projection,
}

impl Uses {
    fn of(policy: &Policy) -> Uses {
        let programs = policy
            .conditions
            .iter()
            .chain(&policy.variables)
            .map(|(_, p)| p)
            .chain(policy.validations.iter().map(|v| &v.program))
            .chain(
                policy
                    .validations
                    .iter()
                    .filter_map(|v| v.message_program.as_ref()),
            );
        let mut uses = Uses::default();
        for p in programs.filter_map(|p| p.as_ref().ok()) {
            let r = p.references();
            uses.object |= r.has_variable("object");
            uses.old_object |= r.has_variable("oldObject");
            uses.request |= r.has_variable("request");
            uses.namespace |= r.has_variable("namespaceObject");
            let expr = p.expression();
            uses.object_parts.union(&Projection::of(expr, "object"));
            uses.old_object_parts
                .union(&Projection::of(expr, "oldObject"));
            uses.request_parts.union(&Projection::of(expr, "request"));
        }
        uses
    }

    fn union(&mut self, o: &Uses) {
        self.object |= o.object;
        self.old_object |= o.old_object;
        self.request |= o.request;
        self.namespace |= o.namespace;
        self.object_parts.union(&o.object_parts);
        self.old_object_parts.union(&o.old_object_parts);
        self.request_parts.union(&o.request_parts);
    }
}

/// The params objects a binding is evaluated with (None: the policy takes none), or why it
/// cannot be.
type ParamsOf = Result<Vec<Option<Value>>, String>;

/// The params of `binding` for this write.
async fn params_of(
    policy: &Policy,
    binding: &Binding,
    params: &dyn Params,
    attrs: &Attributes<'_>,
) -> ParamsOf {
    match (&policy.param_kind, &binding.param_ref) {
        (None, _) => Ok(vec![None]),
        (Some(_), None) => Err(format!(
            "failed to configure binding: {} has paramKind but binding {} has no paramRef",
            policy.name, binding.name
        )),
        (Some((api_version, kind)), Some(r)) => {
            let ns = match str_at(r, "/namespace") {
                "" => attrs.namespace,
                n => n,
            };
            let name = Some(str_at(r, "/name")).filter(|n| !n.is_empty());
            let sel = selector(r.get("selector"));
            match params.find(api_version, kind, ns, name, sel.as_ref()).await {
                Ok(found) if found.is_empty() => {
                    if str_at(r, "/parameterNotFoundAction") == "Allow" {
                        Ok(Vec::new())
                    } else {
                        Err("failed to configure binding: no params found for policy binding with `Deny` parameterNotFoundAction".to_string())
                    }
                }
                Ok(found) => Ok(found.into_iter().map(Some).collect()),
                Err(e) => Err(format!("failed to configure binding: {e}")),
            }
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
    // What to evaluate: the matching bindings with their params (read first, as that awaits).
    let mut work: Vec<(&Policy, &Binding, ParamsOf)> = Vec::new();
    // One policy's uses as they are (the usual case); several policies' merged.
    let mut uses: Option<std::borrow::Cow<'_, Uses>> = None;
    for (policy, binding) in bound {
        if !policy
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
            params_of(policy, binding, params, attrs).await,
        ));
    }
    let Some(uses) = uses.filter(|_| !work.is_empty()) else {
        return Ok(());
    };
    type Decided<'p> = (&'p Policy, &'p Binding, Result<Decision, String>, Duration);
    let decisions: Vec<Decided<'_>> = BASE.with(|base| {
        let mut ctx = base.new_inner_scope();
        let bind = |ctx: &mut CelContext<'_>, name: &str, used: bool, v: Option<&Value>| {
            if used {
                ctx.add_variable_from_value(name.to_string(), v.map_or(CelValue::Null, json));
            }
        };
        // Only the parts of the objects the expressions can observe are converted.
        let object = object.map(|o| uses.object_parts.apply(o));
        let old_object = attrs.old_object.map(|o| uses.old_object_parts.apply(o));
        bind(&mut ctx, "object", uses.object, object.as_ref());
        bind(&mut ctx, "oldObject", uses.old_object, old_object.as_ref());
        bind(&mut ctx, "namespaceObject", uses.namespace, namespace);
        if uses.request {
            let request = cel_request(req, attrs, &uses.request_parts);
            ctx.add_variable_from_value("request", json(&request));
        }
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
            metrics.policy_check(&policy.name, &binding.name, *outcome, took);
        }
        let (reason, message) = match decision {
            Ok(Decision::Admit) => continue,
            Ok(Decision::Deny { reason, message }) => (reason, message),
            Err(e) if policy.fail => (String::new(), e),
            Err(e) => {
                tracing::warn!(policy = %policy.name, error = %e, "policy evaluation failed, failing open");
                continue;
            }
        };
        if binding.warn {
            req.warn(vec![format!(
                "Validation failed for ValidatingAdmissionPolicy '{}' with binding '{}': {message}",
                policy.name, binding.name
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
                    policy.name, binding.name
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_is_built_with_the_fields_expressions_select() {
        let req = Request::for_tests(crate::api::test_user("alice", &["devs"]), None);
        let attrs = Attributes {
            operation: super::super::Operation::Update,
            group: "",
            version: "v1",
            kind: "ConfigMap",
            resource: "configmaps",
            namespace: "team",
            name: "cm",
            dry_run: false,
            old_object: None,
            old_json: None,
        };
        let parts =
            |expr: &str| Projection::of(Program::compile(expr).unwrap().expression(), "request");
        let v = cel_request(&req, &attrs, &parts("request.userInfo.username == 'x'"));
        assert_eq!(v, serde_json::json!({"userInfo": {"username": "alice"}}));
        let v = cel_request(
            &req,
            &attrs,
            &parts("request.operation == 'UPDATE' && request.kind.kind != ''"),
        );
        assert_eq!(
            v,
            serde_json::json!({"operation": "UPDATE", "kind": {"kind": "ConfigMap"}})
        );
        // Used whole: every field, as upstream's request variable has them.
        let v = cel_request(&req, &attrs, &parts("request != null"));
        let keys: Vec<&String> = v.as_object().unwrap().keys().collect();
        assert_eq!(keys.len(), 11, "{keys:?}");
        assert_eq!(v["userInfo"]["groups"], serde_json::json!(["devs"]));
        assert_eq!(v["requestResource"]["resource"], "configmaps");
    }

    #[test]
    fn expressions_the_interpreter_cannot_run_are_errors_not_panics() {
        let ctx = CelContext::default().with_all();
        let ok = Program::compile("1 + 1 == 2").unwrap();
        assert!(matches!(execute(&ok, &ctx), Ok(CelValue::Bool(true))));
        // Object construction parses, but the interpreter does not support it.
        let object = Program::compile("Object{spec: 1} == null").unwrap();
        assert!(execute(&object, &ctx).is_err());
    }
}
