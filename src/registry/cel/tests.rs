use super::*;
use kube_cel::cel::{Context, Program};
use kube_cel::KubeCelExt;
use serde_json::json;

fn parse(expr: &str) -> IdedExpr {
    Program::compile(expr).unwrap().expression().clone()
}

/// Evaluates a mutation's expression with `object` bound.
fn eval(expr: &str) -> CelValue {
    let rewritten = rewrite_structs(&parse(expr)).unwrap();
    let mut ctx = Context::default().with_all();
    let object = json!({"metadata": {"name": "a", "labels": {"x": "1"}}, "spec": {"replicas": 2}});
    ctx.add_variable_from_value("object", from_json(&object));
    CelValue::resolve(&rewritten, &ctx).unwrap()
}

#[test]
fn struct_literals_are_refused_wherever_they_are() {
    for expr in [
        "Object{spec: 1} == null",
        "size([Foo{}]) == 1",
        "[1].all(x, {'a': .Object.spec{}} != null)",
        "has(JSONPatch{op: 'add'}.op)",
    ] {
        let err = refuse_structs(&parse(expr)).unwrap_err();
        assert!(matches!(err, Error::UndeclaredType(_)), "{expr}: {err}");
    }
    assert_eq!(
        refuse_structs(&parse("Object{spec: 1} == null"))
            .unwrap_err()
            .to_string(),
        "undeclared reference to 'Object' (in container '')"
    );
    // Maps and lists are not struct literals.
    refuse_structs(&parse("{'a': [1, {'b': 2}]}.a[1].b == 2")).unwrap();
}

#[test]
fn apply_configurations_become_json() {
    let v = eval("Object{spec: Object.spec{replicas: object.spec.replicas + 1}}");
    assert_eq!(
        object_literal(&v).unwrap(),
        json!({"spec": {"replicas": 3}})
    );
    let v = eval(r#"Object{metadata: Object.metadata{labels: {"b": "2", "a": "1"}}}"#);
    assert_eq!(
        object_literal(&v).unwrap(),
        json!({"metadata": {"labels": {"a": "1", "b": "2"}}})
    );
    // Literals in lists take the list's path.
    let v = eval(
        "Object{spec: Object.spec{volumes: [Object.spec.volumes{name: 'y', \
         hostPath: Object.spec.volumes.hostPath{path: 'a'}}]}}",
    );
    assert_eq!(
        object_literal(&v).unwrap(),
        json!({"spec": {"volumes": [{"name": "y", "hostPath": {"path": "a"}}]}})
    );
    // The literal is a value like any other inside the expression.
    assert_eq!(
        eval("Object{spec: Object.spec{replicas: 1}}.spec.replicas == 1"),
        CelValue::Bool(true)
    );
}

#[test]
fn apply_configurations_are_checked_as_upstream_checks_them() {
    let err = |expr: &str| object_literal(&eval(expr)).unwrap_err().to_string();
    assert_eq!(
        err("Object{spec: Object.specx{replicas: 1}}"),
        r#"type mismatch: unexpected type name "Object.specx", expected "Object.spec", which matches field name path from root Object type"#
    );
    assert_eq!(
        err("Object{spec: Object.spec{v: [Object.spec{}]}}"),
        r#"type mismatch: unexpected type name "Object.spec", expected "Object.spec.v", which matches field name path from root Object type"#
    );
    assert_eq!(
        err(r#""I'm a teapot!""#),
        "must evaluate to Object but got string"
    );
    assert_eq!(
        err("Object.spec.metadata{}"),
        "must evaluate to Object but got Object.spec.metadata"
    );
    assert_eq!(
        err("Object{spec: {1: 2}}"),
        "map key Int(1) is not a string"
    );
    let refused = rewrite_structs(&parse("Object{spec: Spec{}}")).unwrap_err();
    assert_eq!(refused, Error::UndeclaredType("Spec".into()));
}

#[test]
fn json_patches_become_a_patch_document() {
    let v = eval(
        r#"[JSONPatch{op: "add", path: "/metadata/labels/" + jsonpatch.escapeKey("a/b~c"), value: "v"},
            JSONPatch{op: "replace", path: "/spec", value: Object.spec{replicas: 5}},
            JSONPatch{op: "move", from: "/a", path: "/b"},
            JSONPatch{op: "remove", path: "/spec/x"}]"#,
    );
    assert_eq!(
        json_patch_literal(&v).unwrap(),
        json!([
            {"op": "add", "path": "/metadata/labels/a~1b~0c", "value": "v"},
            {"op": "replace", "path": "/spec", "value": {"replicas": 5}},
            {"op": "move", "from": "/a", "path": "/b"},
            {"op": "remove", "path": "/spec/x"},
        ])
    );
    let err = |expr: &str| json_patch_literal(&eval(expr)).unwrap_err().to_string();
    assert_eq!(
        err("JSONPatch{op: 'add'}"),
        "must evaluate to list(JSONPatch) but got JSONPatch"
    );
    assert_eq!(
        err("[Object{}]"),
        "must evaluate to list(JSONPatch) but got list(Object)"
    );
    assert_eq!(
        err("[JSONPatch{op: 1, path: '/a'}]"),
        "unexpected type int for JSONPatchType 'op' field"
    );
    assert_eq!(
        err("[JSONPatch{op: 'add', path: '/a', value: Object.x{y: Object.z{}}}]"),
        r#"type mismatch: unexpected type name "Object.z", expected "Object.x.y", which matches field name path from root Object type"#
    );
    let refused = rewrite_structs(&parse("[JSONPatch{op: 'add', values: 1}]")).unwrap_err();
    assert_eq!(refused.to_string(), "undefined field 'values'");
}

#[test]
fn crd_rules_refuse_struct_literals() {
    use crate::registry::cel::compile_failure;
    assert_eq!(
        compile_failure("self.spec == Object{}", false).as_deref(),
        Some("ERROR: <input>: undeclared reference to 'Object' (in container '')")
    );
    assert_eq!(compile_failure("self.spec == {'a': 1}", false), None);
}

#[test]
fn references_are_identifiers_not_fields_or_strings() {
    use crate::registry::cel::references;
    let rule = "oldSelf.x == 'oldSelf' && self.oldSelf == 1 || oldSelf == null";
    assert!(references(
        &crate::registry::cel::parse(rule, false).unwrap(),
        "oldSelf"
    ));
    assert!(!references(
        &crate::registry::cel::parse("self.oldSelf == 'oldSelf'", false).unwrap(),
        "oldSelf"
    ));
}

#[test]
fn parse_errors_read_as_cel_go_displays_them() {
    // cel-go's ToDisplayString: the position, the line, a caret under the column (a wide dot
    // for each wide character before it).
    assert_eq!(
        compile_failure("'é' == ", false).unwrap(),
        "ERROR: <input>:1:8: Syntax error: mismatched input '<EOF>' expecting {'[', '{', '(', '.', '-', '!', 'true', 'false', 'null', NUM_FLOAT, NUM_INT, NUM_UINT, STRING, BYTES, IDENTIFIER}\n | 'é' == \n | .\u{FF0E}.....^"
    );
    // On the second line, with its own column.
    assert!(compile_failure("self.a &&\n  self.b +", false)
        .unwrap()
        .starts_with("ERROR: <input>:2:11: Syntax error: mismatched input '<EOF>'"));
}

#[test]
fn contains_is_a_string_function_as_in_cel_go() {
    let ctx = library_context();
    let mut scope = ctx.new_inner_scope();
    scope.add_variable_from_value("n", 1);
    scope.add_variable_from_value("l", CelValue::List(Arc::new(vec![CelValue::Int(1)])));
    let run = |expr: &str| CelValue::resolve(&parse(expr), &scope);
    assert_eq!(run("'kapi'.contains('ap')"), Ok(CelValue::Bool(true)));
    assert_eq!(run("'kapi'.contains('x')"), Ok(CelValue::Bool(false)));
    for (expr, want) in [
        (
            "'kapi'.contains(n)",
            "no such overload: string.contains(int)",
        ),
        ("l.contains(1)", "no such overload: list(dyn).contains(int)"),
    ] {
        let err = run(expr).expect_err(expr);
        assert_eq!(wording::runtime_error(&err), want, "{expr}");
    }
}
