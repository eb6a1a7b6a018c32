//! The merge keeps what kube-openapi's aggregator keeps: filtering by path prefix with the
//! definitions the kept paths reach, path conflicts ignored, conflicting definitions and
//! parameters renamed with their references, equal ones shared with their GVKs merged.

use super::*;
use serde_json::json;

fn get_ref(schema: &str) -> Value {
    json!({"get": {"responses": {"200": {"schema": {"$ref": format!("#/definitions/{schema}")}}}}})
}

fn object(doc: &Value, key: &str) -> Map<String, Value> {
    doc[key].as_object().cloned().unwrap_or_default()
}

fn keys(doc: &Value, key: &str) -> Vec<String> {
    object(doc, key).keys().cloned().collect()
}

fn merged(dest: Value, source: Value) -> Value {
    let mut dest = dest.as_object().cloned().unwrap();
    merge(&mut dest, source);
    Value::Object(dest)
}

#[test]
fn filtering_keeps_the_prefixed_paths_and_what_they_reach() {
    let spec = json!({
        "swagger": "2.0",
        "paths": {
            "/apis/a.io/v1/things": get_ref("a.Thing"),
            "/apis/a.io/v1beta1/things": get_ref("a.OldThing"),
            "/apis/b.io/v1/others": get_ref("b.Other"),
        },
        "definitions": {
            "a.Thing": {"properties": {"meta": {"$ref": "#/definitions/meta.ObjectMeta"}}},
            "a.OldThing": {"properties": {"meta": {"$ref": "#/definitions/meta.ObjectMeta"}}},
            "b.Other": {"properties": {"spec": {"$ref": "#/definitions/b.Spec"}}},
            "b.Spec": {"type": "object"},
            "meta.ObjectMeta": {"type": "object"},
            "unreferenced.Event": {"type": "object"},
        },
    });
    let out = filter_paths(&spec, |p| p.starts_with("/apis/a.io/v1/"));
    assert_eq!(keys(&out, "paths"), ["/apis/a.io/v1/things"]);
    assert_eq!(
        keys(&out, "definitions"),
        ["a.Thing", "meta.ObjectMeta", "unreferenced.Event"],
        "reachable ones stay, so do those no path ever used"
    );
    assert_eq!(out["swagger"], "2.0");

    let none = filter_paths(&spec, |p| p.starts_with("/apis/c.io/v1/"));
    assert!(object(&none, "paths").is_empty());
    assert_eq!(keys(&none, "definitions"), ["unreferenced.Event"]);

    let pathless = json!({"definitions": {"x": {}}});
    assert_eq!(filter_paths(&pathless, |_| false), pathless);
}

#[test]
fn parameters_lead_to_the_definitions_they_use() {
    let spec = json!({
        "paths": {"/apis/a.io/v1/things": {"post": {"parameters": [{"$ref": "#/parameters/body"}]}}},
        "parameters": {"body": {"in": "body", "name": "body", "schema": {"$ref": "#/definitions/a.Thing"}}},
        "definitions": {"a.Thing": {"type": "object"}, "a.Gone": {"type": "object"}},
    });
    let mut spec = spec;
    spec["paths"]["/apis/a.io/v2/gone"] = get_ref("a.Gone");
    let out = filter_paths(&spec, |p| p.starts_with("/apis/a.io/v1/"));
    assert_eq!(keys(&out, "definitions"), ["a.Thing"]);
    assert_eq!(keys(&out, "parameters"), ["body"]);
}

#[test]
fn existing_paths_are_kept_and_new_ones_added() {
    let dest = json!({
        "swagger": "2.0",
        "info": {"title": "Kubernetes"},
        "paths": {"/api/v1/pods": get_ref("Pod")},
        "definitions": {"Pod": {"description": "local"}},
    });
    let source = json!({
        "info": {"title": "remote"},
        "paths": {
            "/api/v1/pods": get_ref("RemotePod"),
            "/apis/r.io/v1/things": get_ref("Thing"),
        },
        "definitions": {"RemotePod": {"type": "object"}, "Thing": {"type": "object"}},
    });
    let out = merged(dest, source);
    assert_eq!(
        out["paths"]["/api/v1/pods"],
        get_ref("Pod"),
        "the local path wins"
    );
    assert_eq!(out["paths"]["/apis/r.io/v1/things"], get_ref("Thing"));
    assert_eq!(
        keys(&out, "definitions"),
        ["Pod", "Thing"],
        "the definition only the conflicting path used is not taken"
    );
    assert_eq!(out["info"]["title"], "Kubernetes");
}

#[test]
fn a_source_whose_paths_all_conflict_adds_nothing() {
    let dest = json!({"paths": {"/a": get_ref("A")}, "definitions": {"A": {}}});
    let source = json!({"paths": {"/a": get_ref("B")}, "definitions": {"B": {}, "C": {}}});
    assert_eq!(merged(dest.clone(), source), dest);
    let pathless = json!({"definitions": {"B": {}}});
    assert_eq!(merged(dest.clone(), pathless), dest);
}

#[test]
fn conflicting_definitions_are_renamed_with_their_references() {
    let dest = json!({
        "paths": {"/apis/l.io/v1/locals": get_ref("Spec")},
        "definitions": {"Spec": {"type": "string"}},
    });
    let source = json!({
        "paths": {"/apis/r.io/v1/things": get_ref("Thing")},
        "definitions": {
            "Thing": {"properties": {"spec": {"$ref": "#/definitions/Spec"},
                "items": {"type": "array", "items": {"$ref": "#/definitions/Spec"}}}},
            "Spec": {"type": "object"},
        },
    });
    let out = merged(dest, source.clone());
    assert_eq!(out["definitions"]["Spec"], json!({"type": "string"}));
    assert_eq!(out["definitions"]["Spec_v2"], json!({"type": "object"}));
    let thing = &out["definitions"]["Thing"]["properties"];
    assert_eq!(thing["spec"]["$ref"], "#/definitions/Spec_v2");
    assert_eq!(thing["items"]["items"]["$ref"], "#/definitions/Spec_v2");

    // A second source with the same body reuses the renamed copy; a third body gets _v3.
    let again = json!({
        "paths": {"/apis/s.io/v1/more": get_ref("Spec")},
        "definitions": {"Spec": {"type": "object"}},
    });
    let out = merged(out, again);
    assert_eq!(
        out["paths"]["/apis/s.io/v1/more"],
        get_ref("Spec_v2"),
        "same body, same renamed copy"
    );
    let third = json!({
        "paths": {"/apis/t.io/v1/most": get_ref("Spec")},
        "definitions": {"Spec": {"type": "integer"}},
    });
    let out = merged(out, third);
    assert_eq!(out["paths"]["/apis/t.io/v1/most"], get_ref("Spec_v3"));
    assert_eq!(out["definitions"]["Spec_v3"], json!({"type": "integer"}));
    assert_eq!(keys(&out, "definitions").len(), 4);
}

#[test]
fn a_new_name_skips_the_names_the_source_uses() {
    let dest = json!({"paths": {}, "definitions": {"Spec": {"type": "string"}}});
    let source = json!({
        "paths": {"/r": get_ref("Spec"), "/s": get_ref("Spec_v2")},
        "definitions": {"Spec": {"type": "object"}, "Spec_v2": {"type": "boolean"}},
    });
    let out = merged(dest, source);
    assert_eq!(out["paths"]["/r"], get_ref("Spec_v3"));
    assert_eq!(out["paths"]["/s"], get_ref("Spec_v2"));
    assert_eq!(out["definitions"]["Spec_v3"], json!({"type": "object"}));
    assert_eq!(out["definitions"]["Spec_v2"], json!({"type": "boolean"}));
}

#[test]
fn equal_definitions_are_shared_and_their_gvks_merged() {
    let gvk = |g: &str, k: &str| json!({"group": g, "version": "v1", "kind": k});
    let dest = json!({
        "paths": {},
        "definitions": {"DeleteOptions": {"type": "object",
            "x-kubernetes-group-version-kind": [gvk("", "DeleteOptions"), gvk("z.io", "DeleteOptions")]}},
    });
    let source = json!({
        "paths": {"/apis/r.io/v1/things": get_ref("DeleteOptions")},
        "definitions": {"DeleteOptions": {"type": "object",
            "x-kubernetes-group-version-kind": [gvk("", "DeleteOptions"), gvk("r.io", "DeleteOptions")]}},
    });
    let out = merged(dest, source);
    assert_eq!(keys(&out, "definitions"), ["DeleteOptions"]);
    assert_eq!(
        out["definitions"]["DeleteOptions"]["x-kubernetes-group-version-kind"],
        json!([
            gvk("", "DeleteOptions"),
            gvk("r.io", "DeleteOptions"),
            gvk("z.io", "DeleteOptions")
        ])
    );
    assert_eq!(
        out["paths"]["/apis/r.io/v1/things"],
        get_ref("DeleteOptions")
    );

    // Another extension differs: that is a conflict.
    let dest = json!({"paths": {}, "definitions": {"D": {"x-a": 1}}});
    let source = json!({"paths": {"/p": get_ref("D")}, "definitions": {"D": {"x-a": 2}}});
    assert_eq!(merged(dest, source)["paths"]["/p"], get_ref("D_v2"));
}

#[test]
fn conflicting_parameters_are_renamed_with_their_references() {
    let param = |name: &str| json!({"name": name, "in": "query", "type": "string"});
    let dest = json!({"paths": {}, "parameters": {"pretty": param("pretty")}});
    let source = json!({
        "paths": {"/apis/r.io/v1/things": {"parameters": [{"$ref": "#/parameters/pretty"}]}},
        "parameters": {"pretty": param("pretty-remote"), "limit": param("limit")},
    });
    let out = merged(dest, source);
    assert_eq!(
        out["paths"]["/apis/r.io/v1/things"]["parameters"][0]["$ref"],
        "#/parameters/pretty_v2"
    );
    assert_eq!(out["parameters"]["pretty"], param("pretty"));
    assert_eq!(out["parameters"]["pretty_v2"], param("pretty-remote"));
    assert_eq!(out["parameters"]["limit"], param("limit"));
}

#[test]
fn remotes_are_filtered_to_their_group_version_then_merged_in_order() {
    let local = json!({
        "swagger": "2.0",
        "paths": {"/api/v1/namespaces": get_ref("Namespace")},
        "definitions": {"Namespace": {"type": "object"}},
    });
    let first = json!({
        "paths": {
            "/api/v1/namespaces": get_ref("Namespace"),
            "/apis/a.io/v1/things": get_ref("Thing"),
            "/apis/b.io/v1/others": get_ref("Other"),
        },
        "definitions": {"Namespace": {"type": "object"}, "Thing": {"description": "first"},
            "Other": {"type": "object"}},
    });
    let second = json!({
        "paths": {"/apis/b.io/v1/others": get_ref("Thing")},
        "definitions": {"Thing": {"description": "second"}},
    });
    let out = merge_remotes(
        local,
        [("/apis/a.io/v1/", &first), ("/apis/b.io/v1/", &second)],
    );
    assert_eq!(
        keys(&out, "paths"),
        [
            "/api/v1/namespaces",
            "/apis/a.io/v1/things",
            "/apis/b.io/v1/others"
        ]
    );
    assert_eq!(
        keys(&out, "definitions"),
        ["Namespace", "Thing", "Thing_v2"]
    );
    assert_eq!(out["paths"]["/apis/b.io/v1/others"], get_ref("Thing_v2"));
}

#[test]
fn odd_documents_do_not_break_the_merge() {
    let local = json!({"paths": {"/a": get_ref("A")}, "definitions": {"A": {}}});
    let odd = [
        json!(null),
        json!([1, 2]),
        json!({"paths": []}),
        json!({"paths": {"/apis/x/v1/a": 7}, "definitions": "no"}),
        json!({"paths": {"/apis/x/v1/a": {"$ref": 3}}, "definitions": {"A": {
            "x-kubernetes-group-version-kind": "not a list"}}}),
    ];
    for doc in &odd {
        let out = merge_remotes(local.clone(), [("/apis/x/v1/", doc)]);
        assert_eq!(out["paths"]["/a"], get_ref("A"), "{doc}");
    }
    // GVK lists that are not lists of objects are left alone.
    let mut a = json!({"x-kubernetes-group-version-kind": [1]});
    merge_gvks(
        &mut a,
        &json!({"x-kubernetes-group-version-kind": [{"group": "g"}]}),
    );
    assert_eq!(a, json!({"x-kubernetes-group-version-kind": [1]}));
}
