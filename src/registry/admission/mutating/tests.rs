use super::*;
use crate::api::{GroupVersionKind, UserInfo};
use crate::registry::admission::Operation;
use serde_json::json;

/// A merge for the tests: objects merged key by key, the rest replaced.
struct JsonMerge;

fn merged(object: &Value, patch: &Value) -> Value {
    match (object, patch) {
        (Value::Object(o), Value::Object(p)) => {
            let mut out = o.clone();
            for (k, v) in p {
                let m = o.get(k).map_or_else(|| v.clone(), |ov| merged(ov, v));
                out.insert(k.clone(), m);
            }
            Value::Object(out)
        }
        _ => patch.clone(),
    }
}

impl Merge for JsonMerge {
    fn merge(
        &self,
        _: &GroupVersionKind,
        _: Option<&Value>,
        object: &Value,
        patch: &Value,
    ) -> Result<Value, String> {
        Ok(merged(object, patch))
    }
}

fn request() -> Request {
    Request::for_tests(
        UserInfo {
            name: "alice".into(),
            ..UserInfo::default()
        },
        None,
    )
}

fn attrs() -> Attributes<'static> {
    Attributes::for_tests(Operation::Create)
}

/// A policy with these mutations ((patchType, expression)) and more of its spec.
fn policy(mutations: &[(&str, &str)], spec: Value) -> Policy {
    let mutations: Vec<Value> = mutations
        .iter()
        .map(|(t, e)| match *t {
            "JSONPatch" => json!({"patchType": t, "jsonPatch": {"expression": e}}),
            _ => json!({"patchType": t, "applyConfiguration": {"expression": e}}),
        })
        .collect();
    let mut spec = spec;
    spec["mutations"] = Value::Array(mutations);
    Policy::new(&json!({"metadata": {"name": "p"}, "spec": spec}))
}

fn configmap() -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap",
           "metadata": {"name": "cm", "namespace": "default"}, "data": {"a": "1"}})
}

/// Runs `policy` over a ConfigMap; the object after and what the invocation did.
fn invoke(policy: &Policy, params: Option<&Value>) -> (Value, Invocation) {
    invoke_as(policy, params, None)
}

/// [`invoke`], through [`Write::invoke_at`] when `version` is given.
fn invoke_as(
    policy: &Policy,
    params: Option<&Value>,
    version: Option<&str>,
) -> (Value, Invocation) {
    let req = request();
    let attrs = attrs();
    let identity = |v: Value| Ok(v);
    let write = Write {
        req: &req,
        attrs: &attrs,
        namespace: None,
        merge: Some(&JsonMerge),
        redecode: &identity,
    };
    let mut object = configmap();
    let binding = Binding::new(&json!({"metadata": {"name": "b"}, "spec": {"policyName": "p"}}));
    let outcome = match version {
        None => write.invoke((policy, &binding), params, &mut object),
        Some(v) => write
            .invoke_at(v, (policy, &binding), params, &mut object)
            .unwrap(),
    };
    (object, outcome)
}

#[test]
fn mutations_apply_in_order_each_seeing_the_last() {
    let p = policy(
        &[
            (
                "ApplyConfiguration",
                r#"Object{metadata: Object.metadata{labels: {"team": request.userInfo.username}}}"#,
            ),
            (
                "JSONPatch",
                r#"[JSONPatch{op: "add", path: "/data/team", value: object.metadata.labels["team"]},
                    JSONPatch{op: "replace", path: "/data/a", value: params.data.a}]"#,
            ),
        ],
        json!({}),
    );
    let params = json!({"data": {"a": "from-params"}});
    let (object, outcome) = invoke(&p, Some(&params));
    assert!(outcome.ran && outcome.changed, "{:?}", outcome.errors);
    assert_eq!(object["metadata"]["labels"], json!({"team": "alice"}));
    assert_eq!(object["data"], json!({"a": "from-params", "team": "alice"}));
}

#[test]
fn match_conditions_decide_whether_it_runs() {
    let add = [("ApplyConfiguration", r#"Object{data: {"b": "2"}}"#)];
    let skipped = policy(
        &add,
        json!({"matchConditions": [{"name": "never", "expression": "object.data.a == '2'"}]}),
    );
    let (object, outcome) = invoke(&skipped, None);
    assert!(!outcome.ran && !outcome.applied && !outcome.changed && outcome.errors.is_empty());
    assert_eq!(object, configmap());
    let broken = policy(
        &add,
        json!({"matchConditions": [{"name": "bad", "expression": "object.nope.x"}]}),
    );
    let (_, outcome) = invoke(&broken, None);
    assert!(!outcome.ran);
    assert_eq!(outcome.errors.len(), 1, "{:?}", outcome.errors);
    assert!(outcome.errors[0].starts_with("matchCondition 'bad' resulted in error"));
}

#[test]
fn a_failed_mutation_leaves_the_object_to_the_next() {
    let p = policy(
        &[
            ("ApplyConfiguration", "Object{data: Object.datax{b: '2'}}"),
            (
                "JSONPatch",
                r#"[JSONPatch{op: "remove", path: "/data/nope"}]"#,
            ),
            (
                "JSONPatch",
                "[JSONPatch{op: 'test', path: '/data/a', value: 'x'}, \
                           JSONPatch{op: 'add', path: '/data/c', value: '3'}]",
            ),
            ("ApplyConfiguration", "'teapot'"),
            (
                "ApplyConfiguration",
                "Object{data: Object.data{d: object.data.a + '!'}}",
            ),
        ],
        json!({}),
    );
    let (object, outcome) = invoke(&p, None);
    assert_eq!(
        outcome.errors,
        [
            r#"type mismatch: unexpected type name "Object.datax", expected "Object.data", which matches field name path from root Object type"#,
            "JSON Patch: operation '/0' failed at path '/data/nope': path is invalid",
            "must evaluate to Object but got string",
        ]
    );
    // The failed test left the object as it was; the last mutation applied.
    assert_eq!(object["data"], json!({"a": "1", "d": "1!"}));
    assert!(outcome.applied && outcome.changed);
    // A failed test applies without changing anything.
    let p = policy(
        &[(
            "JSONPatch",
            "[JSONPatch{op: 'test', path: '/data/a', value: 'x'}]",
        )],
        json!({}),
    );
    let (object, outcome) = invoke(&p, None);
    assert!(outcome.applied && !outcome.changed && outcome.errors.is_empty());
    assert_eq!(object, configmap());
}

#[test]
fn failures_refuse_under_fail_only() {
    let req = request();
    let attrs = attrs();
    let identity = |v: Value| Ok(v);
    let write = Write {
        req: &req,
        attrs: &attrs,
        namespace: None,
        merge: None,
        redecode: &identity,
    };
    let binding = Binding::new(&json!({"metadata": {"name": "b"}, "spec": {"policyName": "p"}}));
    let fail = policy(&[], json!({"failurePolicy": "Fail"}));
    let refusal = write.failed((&fail, &binding), "Invalid", "boom".into(), &configmap());
    match refusal {
        Some(Error::MutatingPolicy {
            reason,
            message,
            name,
            ..
        }) => {
            assert_eq!(reason, "Invalid");
            assert_eq!(message, "policy 'p' with binding 'b' denied request: boom");
            assert_eq!(name, "cm");
        }
        other => panic!("{other:?}"),
    }
    let ignore = policy(&[], json!({"failurePolicy": "Ignore"}));
    assert!(write
        .failed((&ignore, &binding), "Invalid", "boom".into(), &configmap())
        .is_none());
    // Without the server's merge, an apply configuration cannot be merged.
    let p = policy(
        &[("ApplyConfiguration", "Object{data: {'b': '2'}}")],
        json!({}),
    );
    let mut object = configmap();
    let outcome = write.invoke((&p, &binding), None, &mut object);
    assert_eq!(
        outcome.errors,
        ["error applying patch: type converter must not be nil"]
    );
}

#[test]
fn an_equivalent_version_mutates_the_converted_object_and_brings_it_back() {
    let two = crate::registry::admission::matching::tests::Versions(vec!["v1".into(), "v2".into()]);
    let req = request();
    let attrs = Attributes {
        version: "v2",
        equivalents: Some(&two),
        ..attrs()
    };
    // What the store makes canonical must be at the version written.
    let redecode = |v: Value| -> Result<Value, crate::registry::Error> {
        assert_eq!(
            v["apiVersion"], "example.com/v2",
            "redecoded at another version"
        );
        Ok(v)
    };
    let write = Write {
        req: &req,
        attrs: &attrs,
        namespace: None,
        merge: Some(&JsonMerge),
        redecode: &redecode,
    };
    let p = policy(
        &[
            (
                "JSONPatch",
                r#"[JSONPatch{op: "add", path: "/data/seen", value: object.apiVersion}]"#,
            ),
            (
                "ApplyConfiguration",
                r#"Object{data: {"next": object.data.seen}}"#,
            ),
        ],
        json!({}),
    );
    let binding = Binding::new(&json!({"metadata": {"name": "b"}, "spec": {"policyName": "p"}}));
    let mut object = configmap();
    object["apiVersion"] = json!("example.com/v2");
    let outcome = write
        .invoke_at("v1", (&p, &binding), None, &mut object)
        .unwrap();
    assert!(
        outcome.changed && outcome.errors.is_empty(),
        "{:?}",
        outcome.errors
    );
    assert_eq!(object["apiVersion"], "example.com/v2");
    // Both mutations saw v1, the second the first's result.
    assert_eq!(
        object["data"],
        json!({"a": "1", "seen": "example.com/v1", "next": "example.com/v1"})
    );
}

#[test]
fn without_equivalent_versions_a_policy_sees_the_object_as_written() {
    // No conversion to make: the policy mutates the object itself, never an empty one.
    let p = policy(
        &[(
            "JSONPatch",
            r#"[JSONPatch{op: "add", path: "/data/seen", value: object.data.a}]"#,
        )],
        json!({}),
    );
    let (object, outcome) = invoke_as(&p, None, Some("v1"));
    assert!(
        outcome.changed && outcome.errors.is_empty(),
        "{:?}",
        outcome.errors
    );
    assert_eq!(object["data"], json!({"a": "1", "seen": "1"}));
}
