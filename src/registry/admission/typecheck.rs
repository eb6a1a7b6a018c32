//! Type checking of a ValidatingAdmissionPolicy's expressions against the schemas of the kinds
//! it matches (validating/typechecking.go), for `status.typeChecking`: a reference to a field
//! the schema does not declare is reported as cel-go reports it,
//! `ERROR: <input>:1:7: undefined field 'replica'` with the line and a caret.
//!
//! Operators and string functions applied to operands of primitive types no overload takes
//! are reported too (`found no matching overload for '_+_' applied to '(int, string)'`, `...
//! for 'startsWith' applied to 'string.(int)'`; see [`crate::registry::cel::overloads`]).
//!
//! Where this differs from upstream: field references are checked through `object`,
//! `oldObject`, indexes, optional selects and comprehension variables, and operators and the
//! string functions on primitive operands; other functions' overloads, `params` and
//! `variables.*` are taken as dynamic, so they raise no warning.

use crate::registry::cel::issues::{render, Issue, Token};
use crate::registry::cel::overloads::{self, Prim};
use crate::registry::cel::{parse, DECLARED_NAMES};
use kube_cel::cel::common::ast::{Expr, IdedExpr, LiteralValue};
use serde_json::{Map, Value};

/// A kind's schema: its root and the definitions its `$ref`s name (OpenAPI v3 components).
pub(crate) struct KindSchema<'a> {
    pub root: &'a Value,
    pub defs: &'a Map<String, Value>,
}

impl<'a> KindSchema<'a> {
    /// `s` with `$ref` and a one-element `allOf` followed.
    fn resolve(&self, mut s: &'a Value) -> &'a Value {
        for _ in 0..32 {
            if let Some(r) = s.get("$ref").and_then(Value::as_str) {
                match self.defs.get(r.rsplit('/').next().unwrap_or(r)) {
                    Some(next) => s = next,
                    None => return &Value::Null,
                }
            } else if let Some([one]) = s.get("allOf").and_then(Value::as_array).map(Vec::as_slice)
            {
                s = one;
            } else {
                return s;
            }
        }
        &Value::Null
    }
}

/// What an expression node is known to be.
#[derive(Clone, Copy)]
enum Ty<'a> {
    Dyn,
    Schema(&'a Value),
    Prim(Prim),
}

/// CEL's escaping of property names (`x-y` is read as `x__dash__y`), undone.
fn unescape(field: &str) -> String {
    if !field.contains("__") {
        return field.to_string();
    }
    field
        .replace("__underscores__", "\u{0}")
        .replace("__dot__", ".")
        .replace("__dash__", "-")
        .replace("__slash__", "/")
        .replace('\u{0}', "__")
}

/// The variables of admission policies' expressions besides `object` and `oldObject`, which
/// are typed: no issue is raised for them.
const VARIABLES: [&str; 5] = [
    "params",
    "request",
    "namespaceObject",
    "authorizer",
    "variables",
];

struct Checker<'a, 's> {
    schema: &'s KindSchema<'a>,
    vars: Vec<(String, Ty<'a>)>,
    /// (expression id, message) of each issue.
    issues: Vec<Issue>,
}

impl<'a> Checker<'a, '_> {
    /// The type of variable `name`, noting one nothing declares.
    fn var(&mut self, name: &str, id: u64) -> Ty<'a> {
        if let Some((_, t)) = self.vars.iter().rev().find(|(n, _)| n == name) {
            return *t;
        }
        if !VARIABLES.contains(&name) && !DECLARED_NAMES.contains(&name) {
            self.issues.push(Issue {
                id,
                message: format!("undeclared reference to '{name}' (in container '')"),
                token: Token::Ident,
            });
        }
        Ty::Dyn
    }

    /// The type of `field` of a value of type `t`, noting an undefined field.
    fn field(&mut self, t: Ty<'a>, field: &str, id: u64, root: bool) -> Ty<'a> {
        let Ty::Schema(s) = t else { return Ty::Dyn };
        let s = self.schema.resolve(s);
        if s.get("x-kubernetes-preserve-unknown-fields") == Some(&Value::Bool(true))
            || s.get("x-kubernetes-int-or-string") == Some(&Value::Bool(true))
        {
            return Ty::Dyn;
        }
        match s.get("additionalProperties") {
            Some(v @ Value::Object(_)) => return Ty::Schema(v),
            Some(Value::Bool(true)) => return Ty::Dyn,
            _ => {}
        }
        let Some(props) = s.get("properties").and_then(Value::as_object) else {
            return Ty::Dyn;
        };
        if let Some(p) = props.get(&unescape(field)) {
            return Ty::Schema(p);
        }
        // Always there at a resource's root, declared or not (WithTypeAndObjectMeta).
        if !(root && matches!(field, "apiVersion" | "kind" | "metadata")) {
            self.issues.push(Issue {
                id,
                message: format!("undefined field '{field}'"),
                token: Token::Dot,
            });
        }
        Ty::Dyn
    }

    fn index(&self, t: Ty<'a>) -> Ty<'a> {
        let Ty::Schema(s) = t else { return Ty::Dyn };
        let s = self.schema.resolve(s);
        match (s.get("items"), s.get("additionalProperties")) {
            (Some(items @ Value::Object(_)), _) => Ty::Schema(items),
            (_, Some(v @ Value::Object(_))) => Ty::Schema(v),
            _ => Ty::Dyn,
        }
    }

    /// The primitive type of a value of type `t`, when it has one.
    fn prim(&self, t: Ty<'a>) -> Option<Prim> {
        match t {
            Ty::Prim(p) => Some(p),
            Ty::Schema(s) => Prim::of_schema(self.schema.resolve(s)),
            Ty::Dyn => None,
        }
    }

    fn is_root(&self, e: &IdedExpr) -> bool {
        matches!(&e.expr, Expr::Ident(n) if n == "object" || n == "oldObject")
    }

    fn walk(&mut self, e: &'_ IdedExpr) -> Ty<'a> {
        match &e.expr {
            Expr::Ident(name) => self.var(name, e.id),
            Expr::Select(s) => {
                let root = self.is_root(&s.operand);
                let t = self.walk(&s.operand);
                let t = self.field(t, &s.field, e.id, root);
                if s.test {
                    Ty::Prim(Prim::Bool)
                } else {
                    t
                }
            }
            Expr::Call(c) => {
                let optional_select =
                    matches!(c.func_name.as_str(), "_?._" | "__kapi_opt_select__");
                if let (true, [operand, field]) = (optional_select, c.args.as_slice()) {
                    if let Expr::Literal(LiteralValue::String(f)) = &field.expr {
                        let root = self.is_root(operand);
                        let t = self.walk(operand);
                        return self.field(t, f.as_ref(), e.id, root);
                    }
                }
                if let ("_[_]" | "_[?_]", [target, key]) = (c.func_name.as_str(), c.args.as_slice())
                {
                    let t = self.walk(target);
                    self.walk(key);
                    return self.index(t);
                }
                // A member call's target, by its type when primitive.
                let target = c.target.as_ref().map(|t| {
                    let t = self.walk(t);
                    self.prim(t)
                });
                let args: Vec<Ty<'a>> = c.args.iter().map(|a| self.walk(a)).collect();
                let prims: Option<Vec<Prim>> = args.iter().map(|t| self.prim(*t)).collect();
                // Checked only when the target (if any) and every argument are primitive.
                let Some(prims) = prims else {
                    return Ty::Dyn;
                };
                let target = match target {
                    None => None,
                    Some(Some(p)) => Some(p),
                    Some(None) => return Ty::Dyn,
                };
                match overloads::check(&c.func_name, target, &prims) {
                    Ok(t) => t.map_or(Ty::Dyn, Ty::Prim),
                    Err((message, token)) => {
                        self.issues.push(Issue {
                            id: e.id,
                            message,
                            token,
                        });
                        Ty::Dyn
                    }
                }
            }
            Expr::Comprehension(c) => {
                let range = self.walk(&c.iter_range);
                self.walk(&c.accu_init);
                let element = self.index(range);
                let element = match range {
                    // Over a map, the variable is its keys.
                    Ty::Schema(s) if self.schema.resolve(s).get("items").is_none() => Ty::Dyn,
                    _ => element,
                };
                let depth = self.vars.len();
                self.vars.push((c.iter_var.clone(), element));
                self.vars.push((c.accu_var.clone(), Ty::Dyn));
                self.walk(&c.loop_cond);
                self.walk(&c.loop_step);
                self.walk(&c.result);
                self.vars.truncate(depth);
                Ty::Dyn
            }
            Expr::List(l) => {
                for x in &l.elements {
                    self.walk(x);
                }
                Ty::Dyn
            }
            Expr::Map(m) => {
                for entry in &m.entries {
                    if let kube_cel::cel::common::ast::EntryExpr::MapEntry(me) = &entry.expr {
                        self.walk(&me.key);
                        self.walk(&me.value);
                    }
                }
                Ty::Dyn
            }
            Expr::Literal(l) => match l {
                LiteralValue::Boolean(_) => Ty::Prim(Prim::Bool),
                LiteralValue::Int(_) => Ty::Prim(Prim::Int),
                LiteralValue::UInt(_) => Ty::Prim(Prim::Uint),
                LiteralValue::Double(_) => Ty::Prim(Prim::Double),
                LiteralValue::String(_) => Ty::Prim(Prim::String),
                LiteralValue::Bytes(_) => Ty::Prim(Prim::Bytes),
                LiteralValue::Null => Ty::Dyn,
            },
            Expr::Struct(_) | Expr::Unspecified => Ty::Dyn,
        }
    }
}

/// The issues of `expression` against `schema` (`object` and `oldObject` of that kind;
/// `params` is taken as dynamic), cel-go's text joined by newlines; None when there are none
/// (or the expression does not parse: compile errors are reported on writes).
pub(crate) fn check_expression(expression: &str, schema: &KindSchema<'_>) -> Option<String> {
    let parsed = parse(expression, true).ok()?;
    let mut checker = Checker {
        schema,
        vars: vec![
            ("object".into(), Ty::Schema(schema.root)),
            ("oldObject".into(), Ty::Schema(schema.root)),
        ],
        issues: Vec::new(),
    };
    checker.walk(&parsed);
    render(expression, checker.issues)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn deployment() -> (Value, Map<String, Value>) {
        let root = json!({"type": "object", "properties": {
            "metadata": {"$ref": "#/components/schemas/ObjectMeta"},
            "spec": {"type": "object", "properties": {
                "replicas": {"type": "integer"},
                "template": {"type": "object", "properties": {"spec": {"type": "object", "properties": {
                    "containers": {"type": "array", "items": {"$ref": "#/components/schemas/Container"}}}}}},
            }},
        }});
        let defs = json!({
            "ObjectMeta": {"type": "object", "properties": {
                "name": {"type": "string"},
                "labels": {"type": "object", "additionalProperties": {"type": "string"}}}},
            "Container": {"type": "object", "properties": {"image": {"type": "string"}, "name": {"type": "string"}}},
        });
        (root, defs.as_object().unwrap().clone())
    }

    fn check(expr: &str) -> Option<String> {
        let (root, defs) = deployment();
        check_expression(
            expr,
            &KindSchema {
                root: &root,
                defs: &defs,
            },
        )
    }

    #[test]
    fn declared_fields_pass() {
        for expr in [
            "object.spec.replicas > 1",
            "object.metadata.labels.team == 'a'",
            "object.metadata.labels['x-y'] == 'b'",
            "object.spec.template.spec.containers.all(c, c.image != '')",
            "has(object.spec.replicas) && object.?spec.?replicas.orValue(1) > 0",
            "object.kind == 'Deployment' && variables.anything.goes",
            "request.userInfo.username != ''",
            "object.spec.replicas + 1 > 2.5 && !(object.metadata.name + '-x' == 'y')",
            "object.spec.replicas == 1u || -object.spec.replicas < 0",
        ] {
            assert_eq!(check(expr), None, "{expr}");
        }
    }

    #[test]
    fn undefined_fields_are_reported_as_cel_go_reports_them() {
        assert_eq!(
            check("object.replicas > 1").unwrap(),
            "ERROR: <input>:1:7: undefined field 'replicas'\n | object.replicas > 1\n | ......^"
        );
        assert_eq!(
            check("object.spec.template.spec.containers.all(c, c.imag != '')").unwrap(),
            "ERROR: <input>:1:46: undefined field 'imag'\n | object.spec.template.spec.containers.all(c, c.imag != '')\n | .............................................^"
        );
        let two = check("oldObject.spec.replica == 1 ||\nobject.metadata.nme == ''").unwrap();
        assert!(
            two.contains("ERROR: <input>:1:15: undefined field 'replica'"),
            "{two}"
        );
        assert!(two.contains("ERROR: <input>:2:16: undefined field 'nme'\n | object.metadata.nme == ''\n | ...............^"), "{two}");
        assert_eq!(
            check("size(params.x) > 0 && objec.spec.replicas > 1").unwrap(),
            "ERROR: <input>:1:23: undeclared reference to 'objec' (in container '')\n | size(params.x) > 0 && objec.spec.replicas > 1\n | ......................^"
        );
    }

    #[test]
    fn operators_no_overload_takes_are_reported_as_cel_go_reports_them() {
        assert_eq!(
            check("object.spec.replicas + 'x' == 'y'").unwrap(),
            "ERROR: <input>:1:22: found no matching overload for '_+_' applied to '(int, string)'\n | object.spec.replicas + 'x' == 'y'\n | .....................^"
        );
        assert_eq!(
            check("object.metadata.name == 3").unwrap(),
            "ERROR: <input>:1:22: found no matching overload for '_==_' applied to '(string, int)'\n | object.metadata.name == 3\n | .....................^"
        );
        assert_eq!(
            check("object.spec.replicas > 1 && object.metadata.name").unwrap(),
            "ERROR: <input>:1:26: found no matching overload for '_&&_' applied to '(bool, string)'\n | object.spec.replicas > 1 && object.metadata.name\n | .........................^"
        );
        // Dynamic operands (params, variables, int-or-string) are never reported.
        assert_eq!(check("params.max + 'x' == object.spec.replicas"), None);
    }

    #[test]
    fn functions_no_overload_takes_are_reported_at_their_parenthesis() {
        assert_eq!(
            check("object.metadata.name.startsWith(1)").unwrap(),
            "ERROR: <input>:1:32: found no matching overload for 'startsWith' applied to 'string.(int)'\n | object.metadata.name.startsWith(1)\n | ...............................^"
        );
        assert_eq!(
            check("size(object.spec.replicas) > 0").unwrap(),
            "ERROR: <input>:1:5: found no matching overload for 'size' applied to '(int)'\n | size(object.spec.replicas) > 0\n | ....^"
        );
        assert_eq!(
            check("object.spec.replicas.contains('x')").unwrap(),
            "ERROR: <input>:1:30: found no matching overload for 'contains' applied to 'int.(string)'\n | object.spec.replicas.contains('x')\n | .............................^"
        );
        // Calls that an overload takes, and targets or arguments of unknown types.
        for fine in [
            "object.metadata.name.startsWith('a') && object.metadata.name.size() < 64",
            "object.metadata.name.substring(1, 2).lowerAscii() == 'x'",
            "params.x.startsWith(1)",
            "object.metadata.name.startsWith(params.prefix)",
            "isQuantity(object.metadata.name)",
        ] {
            assert_eq!(check(fine), None, "{fine}");
        }
        // Kubernetes' parsing functions are global: as a member of a string, none takes it.
        assert_eq!(
            check("object.metadata.name.isQuantity()").unwrap(),
            "ERROR: <input>:1:32: found no matching overload for 'isQuantity' applied to 'string.()'\n | object.metadata.name.isQuantity()\n | ...............................^"
        );
    }
}
