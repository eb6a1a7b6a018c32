//! Pruning, nulls, defaulting, embedded resources and list types against upstream's tests
//! (apiextensions-apiserver v0.35.7).

use super::tests::{errors, schema};
use super::{embedded, CoerceOptions};
use serde_json::json;

// pkg/apiserver/schema/pruning/algorithm_test.go "nested x-kubernetes-preserve-unknown-fields".
#[test]
fn pruning_follows_preserve_unknown_fields() {
    let s = schema(json!({
        "type": "object", "x-kubernetes-preserve-unknown-fields": true,
        "properties": {
            "alpha": {"type": "string"}, "beta": {"type": "number"},
            "pruning": {"type": "object", "properties": {
                "preserving": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
                "pruning": {"type": "object"}
            }},
            "preserving": {"type": "object", "x-kubernetes-preserve-unknown-fields": true, "properties": {
                "preserving": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
                "preservingUnknownType": {"x-kubernetes-preserve-unknown-fields": true},
                "pruning": {"type": "object"}
            }},
            "preservingAdditionalPropertiesNotInheritingXPreserveUnknownFields": {
                "type": "object", "x-kubernetes-preserve-unknown-fields": true,
                "additionalProperties": {"type": "object", "properties": {"specified": {"type": "object"}}}
            },
            "preservingAdditionalPropertiesKeyPruneValues": {
                "type": "object",
                "additionalProperties": {"type": "object", "properties": {"specified": {"type": "object"}}}
            }
        }
    }));
    let mut obj = json!({
        "unspecified": "bar", "alpha": "abc", "beta": 42.0,
        "unspecifiedObject": {"unspecified": "bar"},
        "pruning": {
            "unspecified": "bar", "unspecifiedObject": {"unspecified": "bar"},
            "pruning": {"unspecified": "bar"}, "apiVersion": "unknown",
            "preserving": {"unspecified": "bar"}
        },
        "preserving": {
            "unspecified": "bar", "unspecifiedObject": {"unspecified": "bar"},
            "pruning": {"unspecified": "bar"}, "preserving": {"unspecified": "bar"},
            "preservingUnknownType": [{"foo": true}, {"bar": true}]
        },
        "preservingAdditionalPropertiesNotInheritingXPreserveUnknownFields": {
            "foo": {"specified": {"unspecified": "bar"}, "unspecified": "bar"}
        },
        "preservingAdditionalPropertiesKeyPruneValues": {
            "foo": {"specified": {"unspecified": "bar"}, "unspecified": "bar"}
        }
    });
    let pruned = s.prune(&mut obj, true);
    assert_eq!(
        obj,
        json!({
            "unspecified": "bar", "alpha": "abc", "beta": 42.0,
            "unspecifiedObject": {"unspecified": "bar"},
            "pruning": {"pruning": {}, "preserving": {"unspecified": "bar"}},
            "preserving": {
                "unspecified": "bar", "unspecifiedObject": {"unspecified": "bar"},
                "pruning": {}, "preserving": {"unspecified": "bar"},
                "preservingUnknownType": [{"foo": true}, {"bar": true}]
            },
            "preservingAdditionalPropertiesNotInheritingXPreserveUnknownFields": {"foo": {"specified": {}}},
            "preservingAdditionalPropertiesKeyPruneValues": {"foo": {"specified": {}}}
        })
    );
    assert_eq!(
        pruned,
        [
            "preserving.pruning.unspecified",
            "preservingAdditionalPropertiesKeyPruneValues.foo.specified.unspecified",
            "preservingAdditionalPropertiesKeyPruneValues.foo.unspecified",
            "preservingAdditionalPropertiesNotInheritingXPreserveUnknownFields.foo.specified.unspecified",
            "preservingAdditionalPropertiesNotInheritingXPreserveUnknownFields.foo.unspecified",
            "pruning.apiVersion",
            "pruning.pruning.unspecified",
            "pruning.unspecified",
            "pruning.unspecifiedObject",
        ]
    );
    assert!(s.prune(&mut obj, true).is_empty());
}

// algorithm_test.go "object array", "additionalProperties with schema", "... with bool".
#[test]
fn pruning_paths_of_items_and_additional_properties() {
    let s = schema(json!({"type": "object", "properties": {
        "array": {"type": "array", "items": {"type": "object", "properties": {"a": {}, "c": {}}}},
        "a": {},
        "c": {"type": "object", "additionalProperties": {"type": "integer"}},
        "d": {"type": "object", "additionalProperties": false}
    }}));
    let mut obj = json!({
        "array": [{"a": 1}, {"b": 1}, {"a": 1, "b": 2, "c": 3}],
        "a": 1, "b": 1, "c": {"a": 1, "b": 2, "c": {"a": 1}},
        "d": {"a": 1, "c": {"a": 1, "apiVersion": "unknown"}}
    });
    let pruned = s.prune(&mut obj, true);
    assert_eq!(
        obj,
        json!({"array": [{"a": 1}, {}, {"a": 1, "c": 3}], "a": 1, "c": {"a": 1, "b": 2, "c": {}},
               "d": {"a": 1, "c": {}}})
    );
    assert_eq!(
        pruned,
        [
            "array[1].b",
            "array[2].b",
            "b",
            "c.c.a",
            "d.c.a",
            "d.c.apiVersion"
        ]
    );
}

// algorithm_test.go "x-kubernetes-embedded-resource, with root=true".
#[test]
fn embedded_resources_keep_their_type_and_object_meta() {
    let s = schema(json!({"type": "object", "properties": {
        "metadata": {"type": "object"},
        "pruned": {"type": "object", "x-kubernetes-embedded-resource": true, "properties": {
            "metadata": {"type": "object"}, "spec": {"type": "object"}
        }},
        "preserving": {"type": "object", "x-kubernetes-embedded-resource": true,
                       "x-kubernetes-preserve-unknown-fields": true},
        "nested": {"type": "object", "x-kubernetes-embedded-resource": true, "properties": {
            "spec": {"type": "object", "properties": {"embedded": {
                "type": "object", "x-kubernetes-embedded-resource": true,
                "properties": {"metadata": {"type": "object"}, "spec": {"type": "object"}}
            }}}
        }}
    }}));
    let meta = json!({"name": "instance", "namespace": "myns", "labels": {"foo": "bar"}, "unspecified": "bar"});
    let resource = |spec: serde_json::Value| json!({"apiVersion": "foo/v1", "kind": "Foo", "unspecified": "bar", "metadata": meta, "spec": spec});
    let mut obj = json!({
        "apiVersion": "foo/v1", "kind": "Foo", "metadata": meta, "unspecified": "bar",
        "pruned": resource(json!({"unspecified": "bar"})),
        "preserving": resource(json!({"unspecified": "bar"})),
        "nested": resource(json!({"unspecified": "bar", "embedded": resource(json!({"unspecified": "bar"}))}))
    });
    let pruned = s.prune(&mut obj, true);
    let kept = |spec: serde_json::Value| json!({"apiVersion": "foo/v1", "kind": "Foo", "metadata": meta, "spec": spec});
    assert_eq!(
        obj,
        json!({
            "apiVersion": "foo/v1", "kind": "Foo", "metadata": meta,
            "pruned": kept(json!({})),
            "preserving": resource(json!({"unspecified": "bar"})),
            "nested": kept(json!({"embedded": kept(json!({}))}))
        })
    );
    assert_eq!(
        pruned,
        [
            "nested.spec.embedded.spec.unspecified",
            "nested.spec.embedded.unspecified",
            "nested.spec.unspecified",
            "nested.unspecified",
            "pruned.spec.unspecified",
            "pruned.unspecified",
            "unspecified",
        ]
    );
}

// pkg/apiserver/schema/objectmeta/algorithm_test.go TestCoerce "x-kubernetes-embedded-resource":
// embedded metadata loses its unknown fields, reported under its field path.
#[test]
fn embedded_metadata_is_read_as_object_meta() {
    let s = schema(json!({"type": "object", "properties": {
        "pruned": {"type": "object", "x-kubernetes-embedded-resource": true,
                   "properties": {"spec": {"type": "object"}}},
        "items": {"type": "array", "items": {"type": "object", "x-kubernetes-embedded-resource": true,
                   "x-kubernetes-preserve-unknown-fields": true}},
        "map": {"type": "object", "additionalProperties": {"type": "object",
                "x-kubernetes-embedded-resource": true, "x-kubernetes-preserve-unknown-fields": true}}
    }}));
    let meta = json!({"name": "instance", "unspecified": "bar", "creationTimestamp": null});
    let mut obj = json!({
        "metadata": meta,
        "pruned": {"apiVersion": "foo/v1", "kind": "Foo", "metadata": meta, "spec": {}},
        "items": [{"apiVersion": "foo/v1", "kind": "Foo", "metadata": meta}],
        "map": {"k": {"apiVersion": "foo/v1", "kind": "Foo", "metadata": meta}}
    });
    let mut unknown = Vec::new();
    embedded::coerce(&s.root, &mut obj, false, &mut unknown).unwrap();
    unknown.sort();
    assert_eq!(
        unknown,
        [
            "items[0].metadata.unspecified",
            "map[k].metadata.unspecified",
            "pruned.metadata.unspecified"
        ]
    );
    // The root's metadata is the registry's to read.
    assert_eq!(obj["metadata"], meta);
    assert_eq!(obj["pruned"]["metadata"], json!({"name": "instance"}));
    assert_eq!(obj["map"]["k"]["metadata"], json!({"name": "instance"}));

    let mut bad = json!({"pruned": {"apiVersion": 1, "kind": "Foo"}});
    let err = embedded::coerce(&s.root, &mut bad, false, &mut unknown).unwrap_err();
    assert_eq!(
        err.to_string(),
        "pruned.apiVersion: Invalid value: 1: must be a string"
    );
    embedded::coerce(&s.root, &mut bad, true, &mut unknown).unwrap();
    assert_eq!(bad, json!({"pruned": {"kind": "Foo"}}));
}

// The decoding step as a whole: pruned paths sorted, then embedded metadata's.
#[test]
fn coerce_reports_pruned_then_metadata_fields() {
    let s = schema(json!({"type": "object", "properties": {
        "spec": {"type": "object", "properties": {
            "template": {"type": "object", "x-kubernetes-embedded-resource": true,
                         "x-kubernetes-preserve-unknown-fields": true},
            "n": {"type": "integer"}
        }}
    }}));
    let mut obj = json!({"apiVersion": "a/v1", "kind": "A", "metadata": {"name": "x"},
        "spec": {"z": 1, "n": null, "template": {"apiVersion": "v1", "kind": "Pod",
                 "metadata": {"labels": {"a": "b"}, "bogus": 1}, "spec": {}}}});
    let opts = CoerceOptions {
        track_unknown: true,
        drop_invalid_metadata: false,
    };
    let unknown = s.coerce(&mut obj, opts).unwrap();
    assert_eq!(unknown, ["spec.z", "spec.template.metadata.bogus"]);
    assert_eq!(
        obj["spec"],
        json!({"template": {"apiVersion": "v1", "kind": "Pod", "metadata": {"labels": {"a": "b"}}, "spec": {}}})
    );
    let untracked = s.coerce(&mut obj, CoerceOptions::default()).unwrap();
    assert!(untracked.is_empty());
}

// pkg/apiserver/schema/defaulting/prunenulls_test.go "object array".
#[test]
fn nulls_go_unless_nullable_or_defaulted() {
    let s = schema(
        json!({"type": "object", "properties": {"list": {"type": "array", "items": {
            "type": "object", "properties": {
                "a": {"default": "A"}, "b": {"nullable": true},
                "c": {"default": "C", "nullable": true}, "d": {}
            }
        }}}}),
    );
    let mut obj =
        json!({"list": [{"a": null}, {"b": null}, {"c": null}, {"d": null}, {"e": null}]});
    s.prune_nulls(&mut obj);
    assert_eq!(
        obj,
        json!({"list": [{"a": null}, {"b": null}, {"c": null}, {}, {"e": null}]})
    );
}

// pkg/apiserver/schema/defaulting/algorithm_test.go "object array object", "empty and null",
// "null in non-nullable list", "null in nullable object".
#[test]
fn defaults_fill_missing_and_non_nullable_nulls() {
    let s = schema(json!({"type": "object", "properties": {
        "array": {"type": "array", "items": {"type": "object", "properties": {
            "a": {"type": "string", "default": "A"}, "b": {"type": "string", "default": "B"}
        }}},
        "object": {"type": "object", "properties": {
            "a": {"type": "string", "default": "N"}, "b": {"type": "string", "default": "O"}
        }},
        "additionalProperties": {"type": "object", "additionalProperties": {"type": "object", "properties": {
            "a": {"type": "string", "default": "alpha"}, "b": {"type": "string", "default": "beta"}
        }}},
        "foo": {"type": "string", "default": "bar"},
        "list": {"type": "array", "items": {"type": "string", "default": "A"}},
        "nullable": {"type": "string", "nullable": true, "default": "A"}
    }}));
    let mut obj = json!({"array": [{"a": 1}, {"b": 2}], "object": {"a": 1},
        "additionalProperties": {"x": {"a": 1}, "y": {"b": 2}},
        "list": [null, "x"], "nullable": null});
    s.default(&mut obj);
    assert_eq!(
        obj,
        json!({"array": [{"a": 1, "b": "B"}, {"a": "A", "b": 2}], "object": {"a": 1, "b": "O"},
               "additionalProperties": {"x": {"a": 1, "b": "beta"}, "y": {"a": "alpha", "b": 2}},
               "list": ["A", "x"], "nullable": null, "foo": "bar"})
    );
    let s = schema(
        json!({"type": "object", "properties": {"items": {"type": "array",
        "items": {"type": "object", "properties": {"a": {"default": "A"}}}}}}),
    );
    let mut obj = json!({"items": [{}, {"a": 1}, {"a": 0}, {"a": 0.0}, {"a": ""}, {"a": null}, {"a": []}, {"a": {}}]});
    s.default(&mut obj);
    assert_eq!(
        obj,
        json!({"items": [{"a": "A"}, {"a": 1}, {"a": 0}, {"a": 0.0}, {"a": ""}, {"a": "A"}, {"a": []}, {"a": {}}]})
    );
}

// Defaults are pruned once, at compile time (prune.go PruneDefaults), and copied deeply.
#[test]
fn defaults_are_pruned_when_compiled() {
    let s = schema(json!({"type": "object", "properties": {"spec": {
        "type": "object", "default": {"a": 1, "unknown": 2},
        "properties": {"a": {"type": "integer"}, "b": {"type": "object", "properties": {
            "c": {"type": "string", "default": "C"}}, "default": {}}}
    }}}));
    let mut obj = json!({});
    s.default(&mut obj);
    assert_eq!(obj, json!({"spec": {"a": 1, "b": {"c": "C"}}}));
}

// pkg/apiserver/schema/objectmeta/validation_test.go TestValidate and
// TestValidateEmbeddedResource.
#[test]
fn embedded_resources_are_validated() {
    let s = schema(json!({"type": "object", "properties": {
        "embedded": {"type": "object", "x-kubernetes-embedded-resource": true,
                     "x-kubernetes-preserve-unknown-fields": true},
        "items": {"type": "array", "items": {"type": "object", "x-kubernetes-embedded-resource": true,
                  "x-kubernetes-preserve-unknown-fields": true}},
        "additionalProperties": {"type": "object", "additionalProperties": {"type": "object",
            "x-kubernetes-embedded-resource": true, "x-kubernetes-preserve-unknown-fields": true}}
    }}));
    assert_eq!(
        errors(
            &s,
            json!({"embedded": {}, "items": [{}], "additionalProperties": {"foo": {}}})
        ),
        [
            "embedded.apiVersion: Required value",
            "embedded.kind: Required value",
            "items[0].apiVersion: Required value",
            "items[0].kind: Required value",
            "additionalProperties[foo].apiVersion: Required value",
            "additionalProperties[foo].kind: Required value",
        ]
    );
    assert!(errors(
        &s,
        json!({"embedded": {"apiVersion": "foo/v1", "kind": "Foo",
        "metadata": {"namespace": "kube-system"}}})
    )
    .is_empty());
    let errs = errors(
        &s,
        json!({"embedded": {"apiVersion": "foo/v1", "kind": "foo.bar-com"}}),
    );
    assert_eq!(errs.len(), 1);
    assert!(errs[0].starts_with("embedded.kind: Invalid value: \"foo.bar-com\": may have mixed case, but should otherwise match: a DNS-1035 label"), "{}", errs[0]);
    let errs = errors(
        &s,
        json!({"embedded": {"apiVersion": "foo/v1", "kind": "Foo", "metadata": {
        "name": "..", "namespace": "$$$", "labels": {"#": "#"}, "annotations": {"#": "#"}}}}),
    );
    let fields: Vec<&str> = errs.iter().map(|e| e.split(':').next().unwrap()).collect();
    assert_eq!(
        fields,
        [
            "embedded.metadata.name",
            "embedded.metadata.namespace",
            "embedded.metadata.labels",
            "embedded.metadata.labels",
            "embedded.metadata.annotations",
        ]
    );
    assert_eq!(
        errs[0],
        "embedded.metadata.name: Invalid value: \"..\": may not be '..'"
    );
}

// pkg/apiserver/schema/listtype/validation_test.go and test/integration/listtype_test.go.
#[test]
fn list_types_must_be_unique() {
    let s = schema(json!({"type": "object", "properties": {
        "correct-map": {"type": "array", "x-kubernetes-list-type": "map",
            "x-kubernetes-list-map-keys": ["a", "b"], "items": {"type": "object",
            "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}, "c": {"type": "string"}}}},
        "invalid-map": {"type": "array", "x-kubernetes-list-type": "map",
            "x-kubernetes-list-map-keys": ["a", "b"], "items": {"type": "object",
            "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}, "c": {"type": "string"}}}},
        "one-key": {"type": "array", "x-kubernetes-list-type": "map",
            "x-kubernetes-list-map-keys": ["name"], "items": {"type": "object",
            "properties": {"name": {"type": "string"}}}},
        "invalid-set": {"type": "array", "x-kubernetes-list-type": "set",
            "items": {"type": "object", "additionalProperties": {"type": "integer"}}},
        "scalars": {"type": "array", "x-kubernetes-list-type": "set", "items": {}}
    }}));
    assert_eq!(
        errors(
            &s,
            json!({
                "correct-map": [{"a": 1, "b": 1, "c": "1"}, {"a": 1, "b": 2, "c": "2"}],
                "invalid-map": [{"a": 1, "b": 1, "c": "1"}, {"a": 1, "b": 2}, {"a": 1, "b": 1, "c": "4"}],
                "one-key": [{"name": "x"}, {}, {"name": "x"}, {"name": "x"}, {}],
                "invalid-set": [{"a": 1, "b": 1}, {"a": 1}, {"b": 1, "a": 1}],
                "scalars": ["a", 1, 1.0, "a", true, null, null]
            })
        ),
        [
            "invalid-map[2]: Duplicate value: {\"a\":1,\"b\":1}",
            "one-key[2]: Duplicate value: {\"name\":\"x\"}",
            "one-key[4]: Duplicate value: {}",
            "invalid-set[2]: Duplicate value: {\"a\":1,\"b\":1}",
            "scalars[3]: Duplicate value: \"a\"",
            "scalars[6]: Duplicate value: null",
        ]
    );
    assert_eq!(
        errors(&s, json!({"one-key": [{"name": "x"}, "y"]})),
        [
            "one-key[1]: Invalid value: \"string\": one-key[1] in body must be of type object: \"string\"",
            "one-key[1]: Invalid value: \"y\": must be an object for an array of list-type map",
        ]
    );
    // Long lists take the hashed path; the answer is the same.
    let long: Vec<_> = (0..40)
        .map(|i| json!({"name": format!("n{}", i % 30)}))
        .collect();
    let errs = errors(&s, json!({"one-key": long}));
    assert_eq!(errs.len(), 10);
    assert_eq!(errs[0], "one-key[30]: Duplicate value: {\"name\":\"n0\"}");
}
