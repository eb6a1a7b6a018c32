//! The `authorizer` variable of admission policies (k8s.io/apiserver pkg/cel/library/authz.go):
//! `authorizer.group('apps').resource('deployments').namespace('ns').name('x').check('update')`
//! and `authorizer.path('/healthz').check('get')` ask the server's authorizer about the
//! requesting user (or `authorizer.serviceAccount(ns, name)`), and the Decision answers
//! `allowed()`, `reason()`, `errored()` and `error()`. `authorizer.requestResource` is the
//! check of the request's own resource, subresource, namespace and name.
//!
//! The values are opaque to CEL, as upstream's receiver-only objects. `fieldSelector` and
//! `labelSelector` are accepted and, as kapi's authorizers do not look at selectors, change
//! nothing.

use crate::api::authorizer::Authorizer;
use crate::api::{RequestInfo, UserInfo};
use crate::registry::cel::visit_mut;
use kube_cel::cel::common::ast::{Expr, IdedExpr};
use kube_cel::cel::extractors::This;
use kube_cel::cel::objects::Opaque;
use kube_cel::cel::{Context as CelContext, ExecutionError, ResolveResult, Value as CelValue};
use std::sync::Arc;

/// The variable of the request's own resource check, as expressions name it.
pub(super) const REQUEST_RESOURCE: &str = "authorizer.requestResource";

/// Where a chain of calls stands.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Step {
    Authorizer,
    Path(String),
    Group(String),
    Resource(Resource),
    Decision { allowed: bool, reason: String },
}

/// What a ResourceCheck asks about.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Resource {
    group: String,
    resource: String,
    subresource: String,
    namespace: String,
    name: String,
}

/// An Authorizer, PathCheck, GroupCheck, ResourceCheck or Decision.
#[derive(Clone)]
struct Authz {
    authorizer: Arc<dyn Authorizer>,
    user: Arc<UserInfo>,
    step: Step,
}

impl std::fmt::Debug for Authz {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Authz")
            .field("user", &self.user.name)
            .field("step", &self.step)
            .finish_non_exhaustive()
    }
}

impl PartialEq for Authz {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.authorizer, &other.authorizer)
            && self.user == other.user
            && self.step == other.step
    }
}

impl Eq for Authz {}

impl Opaque for Authz {
    fn runtime_type_name(&self) -> &str {
        match self.step {
            Step::Authorizer => "kubernetes.authorization.Authorizer",
            Step::Path(_) => "kubernetes.authorization.PathCheck",
            Step::Group(_) => "kubernetes.authorization.GroupCheck",
            Step::Resource(_) => "kubernetes.authorization.ResourceCheck",
            Step::Decision { .. } => "kubernetes.authorization.Decision",
        }
    }
}

impl Authz {
    fn then(&self, step: Step) -> CelValue {
        CelValue::Opaque(Arc::new(Authz {
            step,
            ..self.clone()
        }))
    }

    fn decide(&self, info: &RequestInfo) -> CelValue {
        let decision = self.authorizer.authorize(&self.user, info);
        self.then(Step::Decision {
            allowed: decision.allowed(),
            reason: decision.reason().to_string(),
        })
    }
}

/// The authorization value `v` is, at the step `want` names (for the error).
fn step_of<'v>(v: &'v CelValue, function: &str) -> Result<&'v Authz, ExecutionError> {
    match v {
        CelValue::Opaque(o) => o.downcast_ref::<Authz>(),
        _ => None,
    }
    .ok_or_else(|| ExecutionError::function_error(function, "no such overload"))
}

fn path(This(this): This<CelValue>, path: Arc<String>) -> ResolveResult {
    let a = step_of(&this, "path")?;
    if !matches!(a.step, Step::Authorizer) {
        return Err(ExecutionError::function_error("path", "no such overload"));
    }
    if path.trim().is_empty() {
        return Err(ExecutionError::function_error(
            "path",
            "path must not be empty",
        ));
    }
    Ok(a.then(Step::Path(path.to_string())))
}

fn group(This(this): This<CelValue>, group: Arc<String>) -> ResolveResult {
    let a = step_of(&this, "group")?;
    if !matches!(a.step, Step::Authorizer) {
        return Err(ExecutionError::function_error("group", "no such overload"));
    }
    Ok(a.then(Step::Group(group.to_string())))
}

fn service_account(
    This(this): This<CelValue>,
    namespace: Arc<String>,
    name: Arc<String>,
) -> ResolveResult {
    let f = "serviceAccount";
    let a = step_of(&this, f)?;
    if !matches!(a.step, Step::Authorizer) {
        return Err(ExecutionError::function_error(f, "no such overload"));
    }
    if !crate::api::selectors::is_dns1123_subdomain(&name) {
        return Err(ExecutionError::function_error(
            f,
            "Invalid service account name",
        ));
    }
    if !crate::api::selectors::is_dns1123_label(&namespace) {
        return Err(ExecutionError::function_error(
            f,
            "Invalid service account namespace",
        ));
    }
    let user = UserInfo {
        name: format!("system:serviceaccount:{namespace}:{name}"),
        groups: vec![
            "system:serviceaccounts".into(),
            format!("system:serviceaccounts:{namespace}"),
        ],
        ..UserInfo::default()
    };
    Ok(CelValue::Opaque(Arc::new(Authz {
        authorizer: a.authorizer.clone(),
        user: Arc::new(user),
        step: Step::Authorizer,
    })))
}

fn resource(This(this): This<CelValue>, resource: Arc<String>) -> ResolveResult {
    let a = step_of(&this, "resource")?;
    let Step::Group(group) = &a.step else {
        return Err(ExecutionError::function_error(
            "resource",
            "no such overload",
        ));
    };
    if resource.trim().is_empty() {
        return Err(ExecutionError::function_error(
            "resource",
            "resource must not be empty",
        ));
    }
    Ok(a.then(Step::Resource(Resource {
        group: group.clone(),
        resource: resource.to_string(),
        ..Resource::default()
    })))
}

/// A ResourceCheck with one of its fields set (`subresource`, `namespace`, `name`; the
/// selectors change nothing).
fn refine(this: &CelValue, function: &str, set: impl FnOnce(&mut Resource)) -> ResolveResult {
    let a = step_of(this, function)?;
    let Step::Resource(r) = &a.step else {
        return Err(ExecutionError::function_error(function, "no such overload"));
    };
    let mut r = r.clone();
    set(&mut r);
    Ok(a.then(Step::Resource(r)))
}

fn subresource(This(this): This<CelValue>, v: Arc<String>) -> ResolveResult {
    refine(&this, "subresource", |r| r.subresource = v.to_string())
}

fn namespace(This(this): This<CelValue>, v: Arc<String>) -> ResolveResult {
    refine(&this, "namespace", |r| r.namespace = v.to_string())
}

fn name(This(this): This<CelValue>, v: Arc<String>) -> ResolveResult {
    refine(&this, "name", |r| r.name = v.to_string())
}

fn field_selector(This(this): This<CelValue>, _v: Arc<String>) -> ResolveResult {
    refine(&this, "fieldSelector", |_| {})
}

fn label_selector(This(this): This<CelValue>, _v: Arc<String>) -> ResolveResult {
    refine(&this, "labelSelector", |_| {})
}

fn check(This(this): This<CelValue>, verb: Arc<String>) -> ResolveResult {
    let a = step_of(&this, "check")?;
    let info = match &a.step {
        Step::Path(path) => RequestInfo {
            is_resource_request: false,
            verb: verb.to_string(),
            path: path.clone(),
            ..RequestInfo::default()
        },
        Step::Resource(r) => RequestInfo {
            is_resource_request: true,
            verb: verb.to_string(),
            api_group: r.group.clone(),
            api_version: "*".into(),
            resource: r.resource.clone(),
            subresource: r.subresource.clone(),
            namespace: r.namespace.clone(),
            name: r.name.clone(),
            ..RequestInfo::default()
        },
        _ => return Err(ExecutionError::function_error("check", "no such overload")),
    };
    Ok(a.decide(&info))
}

/// The Decision `this` is.
fn decision<'v>(this: &'v CelValue, function: &str) -> Result<(bool, &'v str), ExecutionError> {
    match &step_of(this, function)?.step {
        Step::Decision { allowed, reason } => Ok((*allowed, reason)),
        _ => Err(ExecutionError::function_error(function, "no such overload")),
    }
}

fn allowed(This(this): This<CelValue>) -> ResolveResult {
    Ok(CelValue::Bool(decision(&this, "allowed")?.0))
}

fn reason(This(this): This<CelValue>) -> ResolveResult {
    let (_, reason) = decision(&this, "reason")?;
    Ok(CelValue::String(Arc::new(reason.to_string())))
}

/// kapi's authorizers answer without errors.
fn errored(This(this): This<CelValue>) -> ResolveResult {
    decision(&this, "errored")?;
    Ok(CelValue::Bool(false))
}

fn error(This(this): This<CelValue>) -> ResolveResult {
    decision(&this, "error")?;
    Ok(CelValue::String(Arc::new(String::new())))
}

/// Registers the library's functions.
pub(super) fn register(ctx: &mut CelContext<'_>) {
    ctx.add_function("path", path);
    ctx.add_function("group", group);
    ctx.add_function("serviceAccount", service_account);
    ctx.add_function("resource", resource);
    ctx.add_function("subresource", subresource);
    ctx.add_function("namespace", namespace);
    ctx.add_function("name", name);
    ctx.add_function("fieldSelector", field_selector);
    ctx.add_function("labelSelector", label_selector);
    ctx.add_function("check", check);
    ctx.add_function("allowed", allowed);
    ctx.add_function("reason", reason);
    ctx.add_function("errored", errored);
    ctx.add_function("error", error);
}

/// What the request's own check asks about: its group, resource, subresource, namespace and
/// name.
pub(super) struct RequestResource<'a> {
    pub group: &'a str,
    pub resource: &'a str,
    pub subresource: &'a str,
    pub namespace: &'a str,
    pub name: &'a str,
}

/// Binds `authorizer` (for `user`) and `authorizer.requestResource`.
pub(super) fn bind(
    ctx: &mut CelContext<'_>,
    authorizer: Arc<dyn Authorizer>,
    user: Arc<UserInfo>,
    request: &RequestResource<'_>,
) {
    let a = Authz {
        authorizer,
        user,
        step: Step::Authorizer,
    };
    ctx.add_variable_from_value(
        REQUEST_RESOURCE,
        a.then(Step::Resource(Resource {
            group: request.group.to_string(),
            resource: request.resource.to_string(),
            subresource: request.subresource.to_string(),
            namespace: request.namespace.to_string(),
            name: request.name.to_string(),
        })),
    );
    ctx.add_variable_from_value("authorizer", CelValue::Opaque(Arc::new(a)));
}

/// `authorizer.requestResource` read as the variable [`REQUEST_RESOURCE`] (the interpreter
/// selects no field of an opaque value; cel-go declares the dotted name as one variable).
pub(super) fn rewrite_request_resource(expr: &mut IdedExpr) {
    visit_mut(expr, &mut |e| {
        let Expr::Select(s) = &e.expr else { return };
        let is_authorizer = matches!(&s.operand.expr, Expr::Ident(n) if n == "authorizer");
        if is_authorizer && s.field == "requestResource" && !s.test {
            e.expr = Expr::Ident(REQUEST_RESOURCE.to_string());
        }
    });
}
