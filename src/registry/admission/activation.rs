//! The CEL side of admission policies (k8s.io/apiserver's admission/plugin/cel): compiling a
//! policy's expressions, binding what a write offers them (`object`, `oldObject`, `request`,
//! `params`, `namespaceObject`, `variables`), converting only the parts of the objects they
//! can observe ([`Uses`]), and running them.
//!
//! Struct literals are refused where upstream declares no object types and rewritten in
//! mutations (see [`crate::registry::cel`]).

use super::authz::{self, RequestResource};
use super::leaves::{self, Reads};
use super::projection::Projection;
use super::{Attributes, Request};
use crate::registry::cel::{budget, wording};
use crate::registry::cel::{from_json, parse, refuse_structs, rewrite_structs};
use kube_cel::cel::{Context as CelContext, IdedExpr, Value as CelValue};
use serde_json::Value;
use std::collections::HashMap;

/// A compiled expression, or why it did not compile.
pub(super) type Compiled = Result<IdedExpr, String>;

/// Compiles an expression of a validation, variable or matchCondition: no struct literals.
pub(super) fn compile(expr: &str) -> Compiled {
    let mut expr = parse(expr, true).map_err(|e| format!("compilation failed: {e}"))?;
    refuse_structs(&expr).map_err(|e| format!("compilation failed: ERROR: <input>: {e}"))?;
    authz::rewrite_request_resource(&mut expr);
    leaves::rewrite(&mut expr);
    budget::meter(&mut expr);
    Ok(expr)
}

/// Compiles a mutation's expression, whose `Object` and `JSONPatch` literals become maps.
pub(super) fn compile_mutation(expr: &str) -> Compiled {
    let parsed = parse(expr, true).map_err(|e| format!("compilation failed: {e}"))?;
    let mut expr =
        rewrite_structs(&parsed).map_err(|e| format!("compilation failed: ERROR: <input>: {e}"))?;
    authz::rewrite_request_resource(&mut expr);
    leaves::rewrite(&mut expr);
    budget::meter(&mut expr);
    Ok(expr)
}

/// Runs `expr` under the per-call cost limit, charged to the open budget (see
/// [`budget`]); an expression the interpreter cannot run (it panics on a few) is an
/// evaluation error, decided by the failurePolicy like any other.
pub(super) fn execute(expr: &IdedExpr, ctx: &CelContext<'_>) -> Result<CelValue, String> {
    match budget::run(expr, ctx).map_err(|budget::OutOfBudget| budget::OUT_OF_BUDGET.to_string())? {
        budget::Outcome::Unsupported => {
            Err("the expression uses CEL that kapi cannot evaluate yet".into())
        }
        budget::Outcome::Value(v) => Ok(v),
        // The per-call limit's error among them: cel-go's words are its message.
        budget::Outcome::Error(e) => Err(wording::runtime_error(&e)),
    }
}

/// Runs a compiled expression; `what` names it in the errors (formatted only for one).
pub(super) fn run(
    ctx: &CelContext<'_>,
    compiled: &Compiled,
    what: &dyn Fn() -> String,
) -> Result<CelValue, String> {
    let expr = compiled.as_ref().map_err(|e| format!("{}: {e}", what()))?;
    execute(expr, ctx).map_err(|e| format!("{} resulted in error: {e}", what()))
}

/// Binds `variables`, each seeing those before it; one that fails is left out (an expression
/// that reads it then fails).
pub(super) fn bind_variables(ctx: &mut CelContext<'_>, variables: &[(String, Compiled)]) {
    let mut values: HashMap<String, CelValue> = HashMap::new();
    for (name, p) in variables {
        if let Ok(v) = run(ctx, p, &|| name.clone()) {
            values.insert(name.clone(), v);
            ctx.add_variable_from_value("variables", values.clone());
        }
    }
    ctx.add_variable_from_value("variables", values);
}

/// Whether the matchConditions hold (matchconditions.Matcher): false as soon as one is false,
/// whatever the others did; otherwise the first error; otherwise true.
///
/// # Errors
///
/// A condition failed to compile or evaluate, or is not a bool, and none is false.
pub(super) fn conditions_hold(
    ctx: &CelContext<'_>,
    conditions: &[(String, Compiled)],
) -> Result<bool, String> {
    let mut error = None;
    for (name, p) in conditions {
        match run(ctx, p, &|| format!("matchCondition '{name}'")) {
            Ok(CelValue::Bool(true)) => {}
            Ok(CelValue::Bool(false)) => return Ok(false),
            Ok(_) => {
                error.get_or_insert(format!("matchCondition '{name}' must evaluate to bool"));
            }
            Err(e) => {
                error.get_or_insert(e);
            }
        }
    }
    error.map_or(Ok(true), Err)
}

/// A JSON value as CEL reads it (`null` for none).
pub(super) fn json(v: Option<&Value>) -> CelValue {
    v.map_or(CelValue::Null, from_json)
}

/// The `request` variable (CreateAdmissionRequest), with only the top-level fields `parts`
/// keeps (each is made only when kept: the whole request costs more to build and convert than
/// three rules do to run).
fn request_json(req: &Request, attrs: &Attributes<'_>, parts: &Projection) -> Value {
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
            // Only the fields selected (the groups and extra are copied only when read).
            let user = parts.field("userInfo");
            let fields: [(&str, &dyn Fn() -> Value); 4] = [
                ("username", &|| req.user.name.clone().into()),
                ("uid", &|| req.user.uid.clone().into()),
                ("groups", &|| serde_json::json!(req.user.groups)),
                ("extra", &|| serde_json::json!(req.user.extra)),
            ];
            Value::Object(
                fields
                    .iter()
                    .filter(|(name, _)| user.is_some_and(|u| u.keeps(name)))
                    .map(|(name, make)| (name.to_string(), make()))
                    .collect(),
            )
        }),
    ];
    let kept = fields
        .iter()
        .filter(|(name, _)| parts.keeps(name))
        .map(|(name, make)| (name.to_string(), make()))
        .collect();
    Value::Object(kept)
}

thread_local! {
    /// A CEL context with the Kubernetes library registered, made once per thread: a write
    /// binds its variables in a scope over it.
    pub(super) static BASE: CelContext<'static> = {
        let mut ctx = crate::registry::cel::library_context();
        authz::register(&mut ctx);
        ctx
    };
}

/// Which variables a policy's expressions read, and which parts of the object and the old
/// object, so a write converts only those.
#[derive(Default, Clone)]
pub(super) struct Uses {
    object: bool,
    old_object: bool,
    request: bool,
    namespace: bool,
    authorizer: bool,
    /// What the expressions read of `object`, `oldObject` and `request`.
    object_reads: Reads,
    old_object_reads: Reads,
    request_reads: Reads,
}

impl Uses {
    /// What `exprs` read (those that did not compile read nothing).
    pub(super) fn of<'e>(exprs: impl IntoIterator<Item = &'e Compiled>) -> Uses {
        let mut uses = Uses::default();
        for expr in exprs.into_iter().filter_map(|p| p.as_ref().ok()) {
            let r = expr.references();
            uses.object |= r.has_variable("object");
            uses.old_object |= r.has_variable("oldObject");
            uses.request |= r.has_variable("request");
            uses.namespace |= r.has_variable("namespaceObject");
            uses.authorizer |=
                r.has_variable("authorizer") || r.has_variable(authz::REQUEST_RESOURCE);
            uses.object_reads.union(&Reads::of(expr, "object"));
            uses.old_object_reads.union(&Reads::of(expr, "oldObject"));
            uses.request_reads.union(&Reads::of(expr, "request"));
        }
        uses
    }

    /// Whether an expression reads `namespaceObject`.
    pub(super) fn reads_namespace(&self) -> bool {
        self.namespace
    }

    /// Reads what either reads.
    pub(super) fn union(&mut self, o: &Uses) {
        self.object |= o.object;
        self.old_object |= o.old_object;
        self.request |= o.request;
        self.namespace |= o.namespace;
        self.authorizer |= o.authorizer;
        self.object_reads.union(&o.object_reads);
        self.old_object_reads.union(&o.old_object_reads);
        self.request_reads.union(&o.request_reads);
    }

    /// Binds `object` (the parts read).
    pub(super) fn bind_object(&self, ctx: &mut CelContext<'_>, object: Option<&Value>) {
        if self.object {
            self.object_reads.bind(ctx, "object", object);
        }
    }

    /// Binds `object`, `oldObject`, `namespaceObject`, `request` and `authorizer`, those read
    /// (`authorizer` only once the server has set its authorizer).
    pub(super) fn bind(
        &self,
        ctx: &mut CelContext<'_>,
        (req, attrs): (&Request, &Attributes<'_>),
        object: Option<&Value>,
        namespace: Option<&Value>,
    ) {
        self.bind_object(ctx, object);
        if self.old_object {
            self.old_object_reads
                .bind(ctx, "oldObject", attrs.old_object);
        }
        if self.namespace {
            ctx.add_variable_from_value("namespaceObject", json(namespace));
        }
        if self.request {
            let request = request_json(req, attrs, self.request_reads.parts());
            self.request_reads.bind(ctx, "request", Some(&request));
        }
        if let Some(authorizer) = self.authorizer.then(|| req.chain.authorizer()).flatten() {
            let request = RequestResource {
                group: attrs.group,
                resource: attrs.resource,
                subresource: &req.subresource,
                namespace: attrs.namespace,
                name: attrs.name,
            };
            authz::bind(ctx, authorizer, req.user.clone(), &request);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube_cel::KubeCelExt;

    #[test]
    fn request_is_built_with_the_fields_expressions_select() {
        let req = Request::for_tests(crate::api::test_user("alice", &["devs"]), None);
        let attrs = Attributes::for_tests(super::super::Operation::Update);
        let reads = |expr: &str| Reads::of(&compile(expr).unwrap(), "request");
        let v = request_json(
            &req,
            &attrs,
            reads("request.userInfo.username == 'x'").parts(),
        );
        assert_eq!(v, serde_json::json!({"userInfo": {"username": "alice"}}));
        let v = request_json(
            &req,
            &attrs,
            reads("request.operation == 'UPDATE' && request.kind.kind != ''").parts(),
        );
        assert_eq!(
            v,
            serde_json::json!({"operation": "UPDATE",
                               "kind": {"group": "", "version": "v1", "kind": "ConfigMap"}})
        );
        // Used whole: every field, as upstream's request variable has them.
        let v = request_json(&req, &attrs, reads("request != null").parts());
        assert_eq!(v.as_object().map(serde_json::Map::len), Some(11), "{v}");
        assert_eq!(v["userInfo"]["groups"], serde_json::json!(["devs"]));
        assert_eq!(v["requestResource"]["resource"], "configmaps");
    }

    #[test]
    fn expressions_the_interpreter_cannot_run_are_errors_not_panics() {
        let ctx = CelContext::default().with_all();
        let ok = compile("1 + 1 == 2").unwrap();
        assert!(matches!(execute(&ok, &ctx), Ok(CelValue::Bool(true))));
        // A missing key reads as cel-go words it.
        let missing = compile("{'a': 1}.b == 1").unwrap();
        assert_eq!(execute(&missing, &ctx), Err("no such key: b".to_string()));
        // size() of what has none names the type, not a Rust value, as cel-go words it.
        let mut sized = CelContext::default().with_all();
        crate::registry::cel::register_size(&mut sized);
        let int = compile("5.size() == 1").unwrap();
        assert_eq!(
            execute(&int, &sized),
            Err("no such overload: size(int)".to_string())
        );
        let text = compile("'héllo'.size() == 5").unwrap();
        assert_eq!(execute(&text, &sized), Ok(CelValue::Bool(true)));
        // Object construction is refused where no object types are declared.
        assert_eq!(
            compile("Object{spec: 1} == null").unwrap_err(),
            "compilation failed: ERROR: <input>: undeclared reference to 'Object' (in container '')"
        );
        // A mutation's literals evaluate.
        let object = compile_mutation("Object{spec: 1}.spec == 1").unwrap();
        assert!(matches!(execute(&object, &ctx), Ok(CelValue::Bool(true))));
    }

    #[test]
    fn optional_syntax_reads_fields_that_may_be_missing() {
        let mut ctx = CelContext::default().with_all();
        crate::registry::cel::register_optional_select(&mut ctx);
        let object = serde_json::json!({"metadata": {"labels": {"team": "a"}}});
        let run = |expr: &str| {
            let compiled = compile(expr).unwrap();
            let mut scope = ctx.new_inner_scope();
            Reads::of(&compiled, "object").bind(&mut scope, "object", Some(&object));
            execute(&compiled, &scope).unwrap()
        };
        assert_eq!(
            run("object.metadata.?labels.?team.orValue('none')"),
            CelValue::String(std::sync::Arc::new("a".into()))
        );
        assert_eq!(
            run("object.?spec.?replicas.orValue(1) == 1"),
            CelValue::Bool(true)
        );
        assert_eq!(
            run("object.metadata.labels[?'owner'].hasValue()"),
            CelValue::Bool(false)
        );
    }

    #[test]
    fn one_false_condition_wins_over_errors() {
        let ctx = CelContext::default().with_all();
        let conditions = |exprs: &[&str]| -> Vec<(String, Compiled)> {
            exprs
                .iter()
                .enumerate()
                .map(|(i, e)| (format!("c{i}"), compile(e)))
                .collect()
        };
        assert_eq!(
            conditions_hold(&ctx, &conditions(&["true", "1 == 1"])),
            Ok(true)
        );
        assert_eq!(
            conditions_hold(&ctx, &conditions(&["nope.x", "false"])),
            Ok(false)
        );
        assert_eq!(
            conditions_hold(&ctx, &conditions(&["true", "'a'"])),
            Err("matchCondition 'c1' must evaluate to bool".into())
        );
        assert!(conditions_hold(&ctx, &conditions(&["Object{}"]))
            .unwrap_err()
            .contains("undeclared reference to 'Object'"));
    }
}
