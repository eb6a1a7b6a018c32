//! Server-side apply of custom resources: lists and maps merge and are owned as the CRD's
//! structural schema says (list-type map by its keys, set, atomic; map-type atomic).

use super::*;

fn gvk() -> GroupVersionKind {
    GroupVersionKind::new("stable.example.com", "v1", "CronTab")
}

fn schema() -> Value {
    json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
        "ports": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
                  "items": {"type": "object", "properties": {"name": {"type": "string"}, "port": {"type": "integer"}}}},
        "tags": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}},
        "args": {"type": "array", "items": {"type": "string"}},
        "selector": {"type": "object", "x-kubernetes-map-type": "atomic", "additionalProperties": {"type": "string"}},
        "env": {"type": "object", "additionalProperties": {"type": "string"}}
    }}}})
}

fn crontab(spec: Value) -> Value {
    json!({"apiVersion": "stable.example.com/v1", "kind": "CronTab",
           "metadata": {"name": "c", "namespace": "default"}, "spec": spec})
}

fn apply_as(
    live: Option<&Value>,
    spec: Value,
    manager: &str,
    force: bool,
) -> Result<Value, ApplyError> {
    let schema = schema();
    server_side_apply_of(live, &crontab(spec), manager, force, &gvk(), Some(&schema))
}

fn owned(obj: &Value, manager: &str) -> Value {
    obj["metadata"]["managedFields"]
        .as_array()
        .and_then(|a| a.iter().find(|e| e["manager"] == manager))
        .map(|e| e["fieldsV1"].clone())
        .unwrap_or(Value::Null)
}

#[test]
fn list_map_items_are_owned_by_key_and_merged() {
    let a = apply_as(
        None,
        json!({"ports": [{"name": "http", "port": 80}]}),
        "a",
        false,
    )
    .unwrap();
    let b = apply_as(
        Some(&a),
        json!({"ports": [{"name": "metrics", "port": 9090}]}),
        "b",
        false,
    )
    .unwrap();
    assert_eq!(
        b["spec"]["ports"],
        json!([{"name": "http", "port": 80}, {"name": "metrics", "port": 9090}]),
        "both managers' items are kept"
    );
    assert_eq!(
        owned(&b, "b")["f:spec"]["f:ports"],
        json!({"k:{\"name\":\"metrics\"}": {".": {}, "f:name": {}, "f:port": {}}})
    );
    assert_eq!(
        owned(&b, "a")["f:spec"]["f:ports"],
        json!({"k:{\"name\":\"http\"}": {".": {}, "f:name": {}, "f:port": {}}})
    );
    // b applies again without its item: only b's item goes.
    let c = apply_as(Some(&b), json!({}), "b", false).unwrap();
    assert_eq!(c["spec"]["ports"], json!([{"name": "http", "port": 80}]));
    // b changing a's item conflicts, naming the field and its owner.
    let err = apply_as(
        Some(&b),
        json!({"ports": [{"name": "http", "port": 81}]}),
        "b",
        false,
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "Apply failed with 1 conflict: conflict with \"a\": .spec.ports[name=\"http\"].port"
    );
}

#[test]
fn sets_merge_and_atomic_lists_and_maps_are_replaced_whole() {
    let a = apply_as(
        None,
        json!({"tags": ["x"], "args": ["1"], "selector": {"app": "a"}, "env": {"A": "1"}}),
        "a",
        false,
    )
    .unwrap();
    let b = apply_as(
        Some(&a),
        json!({"tags": ["y"], "env": {"B": "2"}}),
        "b",
        false,
    )
    .unwrap();
    assert_eq!(b["spec"]["tags"], json!(["x", "y"]), "a set merges");
    assert_eq!(
        b["spec"]["env"],
        json!({"A": "1", "B": "2"}),
        "a granular map merges"
    );
    assert_eq!(owned(&b, "b")["f:spec"]["f:tags"], json!({"v:\"y\"": {}}));
    let err = apply_as(Some(&b), json!({"args": ["2"]}), "b", false).unwrap_err();
    assert!(err.to_string().ends_with(".spec.args"), "{err}");
    let err = apply_as(Some(&b), json!({"selector": {"app": "b"}}), "b", false).unwrap_err();
    assert!(err.to_string().ends_with(".spec.selector"), "{err}");
    let forced = apply_as(Some(&b), json!({"args": ["2"]}), "b", true).unwrap();
    assert_eq!(
        forced["spec"]["args"],
        json!(["2"]),
        "an atomic list is replaced whole"
    );
    assert_eq!(owned(&forced, "b")["f:spec"]["f:args"], json!({}));
}
