use super::*;
use crate::registry::admission::activation::{compile, execute};
use crate::registry::cel::{parse, register_optional_select, register_size};
use kube_cel::KubeCelExt;
use serde_json::json;

fn base() -> CelContext<'static> {
    let mut ctx = CelContext::default().with_all();
    register_optional_select(&mut ctx);
    register_size(&mut ctx);
    crate::registry::cel::budget::register(&mut ctx);
    ctx
}

const EXPRESSIONS: &[&str] = &[
    "object.metadata.name.size() < 64",
    "!has(object.data) || size(object.data) < 100",
    "has(object.metadata)",
    "has(object.spec)",
    "has(object.data) || object.metadata.name == 'b'",
    "object.spec.replicas > 1",
    "has(object.spec.replicas)",
    "object.metadata.labels['team'] == 'x'",
    "object.data.k == 'v' && object.metadata.name != ''",
    "object.metadata.name == oldObject.metadata.name",
    "has(oldObject.data) && oldObject.data == object.data",
    "[{'x': 1}].all(object, object.x > 0) && object.metadata.name == 'a'",
    "object.metadata.?labels.orValue({}).size() >= 0",
    "object.data.k.size() > 0",
    "object.data.k.size()",
    "size(object.metadata) + size(object.data)",
    "object.spec.replicas.size() == 1",
    "request.userInfo.username != 'nobody' && request.operation == 'UPDATE'",
    "request.userInfo.nope == 'x'",
    "object == oldObject || object.metadata.name == 'b'",
];

fn objects() -> Vec<Option<Value>> {
    vec![
        Some(json!({"metadata": {"name": "a", "labels": {"team": "x"}},
                    "data": {"k": "v"}, "spec": {"replicas": 2}})),
        Some(json!({"metadata": {"name": "b"}, "data": {"k": "héllo", "l": ""}})),
        Some(json!({"metadata": {"name": "b"}})),
        Some(json!({"metadata": {"name": "c", "labels": null}, "spec": null, "data": {"k": 1}})),
        Some(json!({"metadata": "x", "data": [1, 2]})),
        Some(json!([])),
        None,
    ]
}

/// Runs `expr` with the variables bound as admission binds them (`reads` of each).
fn with_leaves(
    expr: &str,
    reads: &[Reads; 3],
    values: [Option<&Value>; 3],
) -> Result<CelValue, String> {
    let base = base();
    let mut ctx = base.new_inner_scope();
    for ((name, _), (r, v)) in VARIABLES.iter().zip(reads.iter().zip(values)) {
        r.bind(&mut ctx, name, v);
    }
    execute(&compile(expr).unwrap(), &ctx)
}

/// Runs `expr` as written, with the variables bound whole.
fn as_written(expr: &str, values: [Option<&Value>; 3]) -> Result<CelValue, String> {
    let mut ctx = base();
    for ((name, _), v) in VARIABLES.iter().zip(values) {
        ctx.add_variable_from_value(*name, v.map_or(CelValue::Null, from_json));
    }
    execute(&parse(expr, true).unwrap(), &ctx)
}

fn reads_of(exprs: &[&str]) -> [Reads; 3] {
    let mut out: [Reads; 3] = Default::default();
    for e in exprs {
        let compiled = compile(e).unwrap();
        for (r, (name, _)) in out.iter_mut().zip(VARIABLES) {
            r.union(&Reads::of(&compiled, name));
        }
    }
    out
}

#[test]
fn leaves_answer_as_the_expressions_as_written_do() {
    let request = json!({"operation": "UPDATE", "userInfo": {"username": "alice"}});
    let objects = objects();
    let all = reads_of(EXPRESSIONS);
    for expr in EXPRESSIONS {
        let own = reads_of(&[expr]);
        for object in &objects {
            for old in &objects {
                let values = [object.as_ref(), old.as_ref(), Some(&request)];
                let want = as_written(expr, values);
                // Bound for this expression alone, and for all of them (as the policies of
                // one write are).
                assert_eq!(
                    with_leaves(expr, &own, values),
                    want,
                    "{expr} on {object:?}, {old:?}"
                );
                assert_eq!(
                    with_leaves(expr, &all, values),
                    want,
                    "{expr} (all) on {object:?}"
                );
            }
        }
    }
}

#[test]
fn chains_become_leaves_and_the_object_is_left_unbound() {
    let exprs = [
        "object.metadata.name.size() < 64",
        "!has(object.data) || size(object.data) < 100",
        "object.metadata.name != 'b'",
    ];
    let reads = reads_of(&exprs);
    let idents: Vec<&str> = reads[0].leaves.iter().map(|l| l.ident.as_str()).collect();
    assert_eq!(
        idents,
        [
            "@size(object.metadata.name)",
            "@has(object.data)",
            "@size(object.data)",
            "@object.metadata.name"
        ]
    );
    assert!(reads[0].rest.is_empty());
    let base = base();
    let object = json!({"metadata": {"name": "a", "managedFields": []}, "data": {"k": "v"}});
    // A string's size counts its code points, as CEL's spec has it.
    let mut ctx = base.new_inner_scope();
    reads[0].bind(
        &mut ctx,
        "object",
        Some(&json!({"metadata": {"name": "héllo"}, "data": {}})),
    );
    let size = ctx.get_variable("@size(object.metadata.name)").unwrap();
    assert_eq!(CelValue::try_from(size.as_ref()).unwrap(), CelValue::Int(5));
    let mut ctx = base.new_inner_scope();
    reads[0].bind(&mut ctx, "object", Some(&object));
    assert!(ctx.get_variable("object").is_none(), "bound whole");
    let leaf = ctx.get_variable("@object.metadata.name").unwrap();
    assert_eq!(
        CelValue::try_from(leaf.as_ref()).unwrap(),
        CelValue::String(std::sync::Arc::new("a".into()))
    );
    // A chain that does not resolve: bound as written, and the flag says so.
    let mut ctx = base.new_inner_scope();
    reads[0].bind(&mut ctx, "object", Some(&json!({"data": {}})));
    let flag = ctx.get_variable("@object").unwrap();
    assert_eq!(
        CelValue::try_from(flag.as_ref()).unwrap(),
        CelValue::Bool(false)
    );
    assert!(ctx.get_variable("object").is_some());
}

#[test]
fn a_variable_shadowed_by_a_comprehension_is_left_alone() {
    let reads =
        reads_of(&["[{'metadata': {'name': 'x'}}].all(object, object.metadata.name == 'x')"]);
    assert!(reads[0].leaves.is_empty());
    let reads = reads_of(&["object.items.exists(i, i.name == object.metadata.name)"]);
    let idents: Vec<&str> = reads[0].leaves.iter().map(|l| l.ident.as_str()).collect();
    assert_eq!(idents, ["@object.items", "@object.metadata.name"]);
}
