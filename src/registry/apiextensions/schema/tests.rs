//! Validation against upstream's expectations. Each case names the upstream test it comes
//! from; `v0.35.7` is apiextensions-apiserver's tag for kube 1.35.

use super::Schema;
use serde_json::{json, Value};

pub(super) fn schema(v: Value) -> Schema {
    Schema::compile(&serde_json::from_value(v).expect("a JSONSchemaProps"))
}

pub(super) fn errors(s: &Schema, obj: Value) -> Vec<String> {
    s.validate(&obj).iter().map(ToString::to_string).collect()
}

/// A schema with one property `field`.
fn field(props: Value) -> Schema {
    schema(json!({"type": "object", "properties": {"field": props}}))
}

#[track_caller]
fn assert_errors(s: &Schema, obj: Value, want: &[&str]) {
    assert_eq!(errors(s, obj.clone()), want, "object {obj}");
}

// pkg/apiserver/validation/validation_test.go TestValidateCustomResource "!nullable".
#[test]
fn a_wrong_type_names_the_json_type() {
    let s = field(json!({"type": "object"}));
    assert_errors(&s, json!({}), &[]);
    assert_errors(&s, json!({"field": {}}), &[]);
    for (v, t) in [
        (json!("foo"), "string"),
        (json!(42), "integer"),
        (json!(true), "boolean"),
        (json!(1.2), "number"),
        (json!([]), "array"),
        (json!(null), "null"),
    ] {
        let want =
            format!("field: Invalid value: \"{t}\": field in body must be of type object: \"{t}\"");
        assert_errors(&s, json!({ "field": v }), &[&want]);
    }
    let e = &s.validate(&json!({"field": 1}))[0];
    assert_eq!(e.kind.reason(), "FieldValueTypeInvalid");
}

// validation_test.go "nullable", "nullable and no type".
#[test]
fn nullable_allows_null_and_no_type_allows_anything() {
    let s = field(json!({"type": "object", "nullable": true}));
    assert_errors(&s, json!({"field": null}), &[]);
    assert_errors(
        &s,
        json!({"field": 42}),
        &["field: Invalid value: \"integer\": field in body must be of type object: \"integer\""],
    );
    let s = field(json!({"nullable": true}));
    for v in [
        json!(null),
        json!("foo"),
        json!(42),
        json!(true),
        json!(1.2),
        json!([]),
        json!({}),
    ] {
        assert_errors(&s, json!({ "field": v }), &[]);
    }
}

// validation_test.go "x-kubernetes-int-or-string", "nullable and x-kubernetes-int-or-string".
#[test]
fn int_or_string_is_integer_or_string() {
    let s = field(json!({"x-kubernetes-int-or-string": true}));
    assert_errors(&s, json!({"field": 42}), &[]);
    assert_errors(&s, json!({"field": "foo"}), &[]);
    assert_errors(
        &s,
        json!({"field": null}),
        &["field: Invalid value: \"null\": field in body must be of type integer,string: \"null\""],
    );
    assert_errors(
        &s,
        json!({"field": 1.2}),
        &["field: Invalid value: \"number\": field in body must be of type integer,string: \"number\""],
    );
    let s = field(json!({"x-kubernetes-int-or-string": true, "nullable": true}));
    assert_errors(&s, json!({"field": null}), &[]);
    assert_errors(
        &s,
        json!({"field": {}}),
        &["field: Invalid value: \"object\": field in body must be of type integer,string: \"object\""],
    );
}

// validation_test.go "nullable, x-kubernetes-int-or-string and user-provided anyOf" and
// "... allOf": the junction errors land on the nil path.
#[test]
fn junction_errors_land_on_the_nil_path() {
    let s = field(json!({
        "nullable": true, "x-kubernetes-int-or-string": true,
        "anyOf": [{"type": "integer"}, {"type": "string"}]
    }));
    assert_errors(&s, json!({"field": null}), &[]);
    assert_errors(&s, json!({"field": 42}), &[]);
    assert_errors(
        &s,
        json!({"field": true}),
        &[
            "field: Invalid value: \"boolean\": field in body must be of type integer,string: \"boolean\"",
            "<nil>: Invalid value: \"\": \"field\" must validate at least one schema (anyOf)",
            "field: Invalid value: \"boolean\": field in body must be of type integer: \"boolean\"",
        ],
    );
    let s = field(json!({
        "nullable": true, "x-kubernetes-int-or-string": true,
        "allOf": [{"anyOf": [{"type": "integer"}, {"type": "string"}]}]
    }));
    assert_errors(&s, json!({"field": "foo"}), &[]);
    assert_errors(
        &s,
        json!({"field": 1.2}),
        &[
            "field: Invalid value: \"number\": field in body must be of type integer,string: \"number\"",
            "<nil>: Invalid value: \"\": \"field\" must validate at least one schema (anyOf)",
            "field: Invalid value: \"number\": field in body must be of type integer: \"number\"",
            "<nil>: Invalid value: \"\": \"field\" must validate all the schemas (allOf). None validated",
        ],
    );
}

// kube-openapi schema_props.go: oneOf counts the valid branches, not fails when one holds;
// anyOf reports the failing branch with the most passing checks (MatchCount).
#[test]
fn one_of_and_not_and_the_best_any_of_branch() {
    let s = field(json!({"type": "integer", "oneOf": [{"minimum": 0}, {"maximum": 10}]}));
    assert_errors(&s, json!({"field": 20}), &[]);
    assert_errors(
        &s,
        json!({"field": 5}),
        &["<nil>: Invalid value: \"\": \"field\" must validate one and only one schema (oneOf). Found 2 valid alternatives"],
    );
    let s = field(json!({"type": "string", "not": {"enum": ["x"]}}));
    assert_errors(
        &s,
        json!({"field": "x"}),
        &["<nil>: Invalid value: \"\": \"field\" must not validate the schema (not)"],
    );
    // The second branch fails on more checks' success (its type check passes): its errors
    // are the ones reported.
    let s = field(json!({"anyOf": [{"type": "boolean"}, {"type": "string", "maxLength": 1}]}));
    assert_errors(
        &s,
        json!({"field": "abc"}),
        &[
            "<nil>: Invalid value: \"\": \"field\" must validate at least one schema (anyOf)",
            "field: Too long: may not be more than 1 byte",
        ],
    );
}

// validation_test.go "invalid regex": the message carries the compiler's error, which is
// the regex crate's here (Go's reads "error parsing regexp: missing argument to repetition
// operator: `+`").
#[test]
fn an_invalid_pattern_is_reported_with_the_value() {
    let s = field(json!({"type": "string", "pattern": "+"}));
    let errs = errors(&s, json!({"field": "foo"}));
    assert_eq!(errs.len(), 1);
    assert!(
        errs[0].starts_with(
            "field: Invalid value: \"foo\": field in body should match '+, but pattern is invalid: "
        ),
        "{}",
        errs[0]
    );
}

// validation_test.go "required field" and test/integration/validation_test.go
// TestCustomResourceValidationErrors "absent alpha and beta".
#[test]
fn required_fields() {
    let s = schema(json!({
        "type": "object", "required": ["field"],
        "properties": {"field": {"type": "object", "required": ["nested"], "properties": {"nested": {}}}}
    }));
    assert_errors(&s, json!({"test": "a"}), &["field: Required value"]);
    assert_errors(&s, json!({"field": {}}), &["field.nested: Required value"]);
    assert_errors(&s, json!({"field": {"nested": null}}), &[]);
}

// validation_test.go "enum" and test/integration/validation_test.go "bad gamma".
#[test]
fn enums_list_the_supported_values() {
    let s = field(json!({
        "type": "object", "required": ["nestedint", "nestedstring"],
        "properties": {
            "nestedint": {"type": "integer", "enum": [1, 2]},
            "nestedstring": {"type": "string", "enum": ["a", "b"]}
        }
    }));
    assert_errors(
        &s,
        json!({"field": {}}),
        &[
            "field.nestedint: Required value",
            "field.nestedstring: Required value",
        ],
    );
    assert_errors(
        &s,
        json!({"field": {"nestedint": "x", "nestedstring": true}}),
        &[
            "field.nestedint: Invalid value: \"string\": field.nestedint in body must be of type integer: \"string\"",
            "field.nestedint: Unsupported value: \"x\": supported values: \"1\", \"2\"",
            "field.nestedstring: Invalid value: \"boolean\": field.nestedstring in body must be of type string: \"boolean\"",
            "field.nestedstring: Unsupported value: true: supported values: \"a\", \"b\"",
        ],
    );
    let s = schema(
        json!({"type": "object", "properties": {"gamma": {"type": "string", "enum": ["foo", "bar", "baz"]}}}),
    );
    assert_errors(
        &s,
        json!({"gamma": "qux"}),
        &["gamma: Unsupported value: \"qux\": supported values: \"foo\", \"bar\", \"baz\""],
    );
    // A null is not in any enum, and shows as null (values.go converts to the enum's type:
    // 1.0 equals 1).
    let s = field(json!({"nullable": true, "enum": [1, {"a": 1}]}));
    assert_errors(
        &s,
        json!({"field": null}),
        &["field: Unsupported value: null: supported values: \"1\", \"{\\\"a\\\":1}\""],
    );
    assert_errors(&s, json!({"field": 1.0}), &[]);
    assert_errors(&s, json!({"field": {"a": 1}}), &[]);
}

// validation_test.go "maxProperties", "maxItems", "maxLength".
#[test]
fn too_many_and_too_long() {
    let s = field(json!({"type": "object", "maxProperties": 2}));
    assert_errors(
        &s,
        json!({"field": {"a": true, "b": true, "c": true}}),
        &["field: Too many: 3: must have at most 2 items"],
    );
    let s = field(json!({"type": "array", "maxItems": 2}));
    assert_errors(
        &s,
        json!({"field": ["a", "b", "c"]}),
        &["field: Too many: 3: must have at most 2 items"],
    );
    let s = field(json!({"type": "string", "maxLength": 2}));
    assert_errors(
        &s,
        json!({"field": "abc"}),
        &["field: Too long: may not be more than 2 bytes"],
    );
    // Length counts runes.
    assert_errors(&s, json!({"field": "éé"}), &[]);
}

// kube-openapi errors/schema.go messages for the lower bounds, converted with field.Invalid.
#[test]
fn too_few_and_too_short() {
    let s = field(json!({"type": "object", "minProperties": 2}));
    assert_errors(
        &s,
        json!({"field": {"a": 1}}),
        &["field: Invalid value: 1: field in body should have at least 2 properties"],
    );
    let s = field(json!({"type": "array", "minItems": 1}));
    assert_errors(
        &s,
        json!({"field": []}),
        &["field: Invalid value: 0: field in body should have at least 1 items"],
    );
    let s = field(json!({"type": "string", "minLength": 3}));
    assert_errors(
        &s,
        json!({"field": "ab"}),
        &["field: Invalid value: \"ab\": field in body should be at least 3 chars long"],
    );
    let s = field(json!({"type": "array", "uniqueItems": true}));
    assert_errors(
        &s,
        json!({"field": [1, {"a": 1}, {"a": 1}]}),
        &["field: Invalid value: \"\": field in body shouldn't contain duplicates"],
    );
    assert_errors(&s, json!({"field": [1, 1.0]}), &[]);
}

// validation_test.go "k8sLongName", "k8sShortName".
#[test]
fn formats_are_checked_by_name() {
    let s = field(json!({"type": "string", "format": "k8s-long-name"}));
    assert_errors(
        &s,
        json!({"field": "a.-"}),
        &["field: Invalid value: \"a.-\": field in body must be of type k8s-long-name: \"a.-\""],
    );
    let s = field(json!({"type": "string", "format": "k8s-short-name"}));
    assert_errors(
        &s,
        json!({"field": "a-"}),
        &["field: Invalid value: \"a-\": field in body must be of type k8s-short-name: \"a-\""],
    );
    let s = field(json!({"type": "string", "format": "date-time"}));
    assert_errors(&s, json!({"field": "2024-05-01T10:00:00Z"}), &[]);
    assert_errors(
        &s,
        json!({"field": "yesterday"}),
        &["field: Invalid value: \"yesterday\": field in body must be of type date-time: \"yesterday\""],
    );
    // kube-openapi type.go: a number where a formatted string belongs names the format and
    // the number's Go format; an array passes the type check.
    assert_errors(
        &s,
        json!({"field": 5}),
        &["field: Invalid value: \"int64\": field in body must be of type date-time: \"int64\""],
    );
    assert_errors(&s, json!({"field": []}), &[]);
    // formats.go strips what CRDs do not support: int32 is never checked.
    let s = field(json!({"type": "integer", "format": "int32"}));
    assert_errors(&s, json!({"field": 1_i64 << 40}), &[]);
}

// test/integration/validation_test.go "bad alpha", "bad beta"; values.go (int64 bounds for
// an int64 value, floats printed as Go's %v).
#[test]
fn patterns_and_numbers() {
    let s = schema(json!({"type": "object", "properties": {
        "alpha": {"type": "string", "pattern": "^[a-zA-Z0-9_]*$"},
        "beta": {"type": "number", "minimum": 10},
        "ratio": {"type": "number", "maximum": 1.5, "exclusiveMaximum": true, "multipleOf": 0.5},
        "count": {"type": "integer", "multipleOf": 3}
    }}));
    assert_errors(
        &s,
        json!({"alpha": "foo_123!"}),
        &["alpha: Invalid value: \"foo_123!\": alpha in body should match '^[a-zA-Z0-9_]*$'"],
    );
    assert_errors(
        &s,
        json!({"beta": 5}),
        &["beta: Invalid value: 5: beta in body should be greater than or equal to 10"],
    );
    assert_errors(
        &s,
        json!({"ratio": 1.75}),
        &[
            "ratio: Invalid value: 1.75: ratio in body should be a multiple of 0.5",
            "ratio: Invalid value: 1.75: ratio in body should be less than 1.5",
        ],
    );
    assert_errors(
        &s,
        json!({"count": 4}),
        &["count: Invalid value: 4: count in body should be a multiple of 3"],
    );
    // A whole float is an integer; 1.0 is valid for `type: integer`.
    let s = field(json!({"type": "integer", "maximum": 1e6}));
    assert_errors(&s, json!({"field": 1.0}), &[]);
    assert_errors(
        &s,
        json!({"field": 2e6}),
        &["field: Invalid value: 2e+06: field in body should be less than or equal to 1e+06"],
    );
}

// test/integration/subresources_test.go: "status.num: Invalid value: 15: num in body should
// be less than or equal to 10" — the status validator's messages are relative to status.
#[test]
fn status_errors_are_relative_to_status() {
    let s = schema(json!({"type": "object", "properties": {
        "spec": {"type": "object", "properties": {"num": {"type": "integer", "maximum": 10}}},
        "status": {"type": "object", "properties": {"num": {"type": "integer", "maximum": 10}}}
    }}));
    let new = json!({"spec": {"num": 15}, "status": {"num": 15}});
    let errs: Vec<String> = s
        .validate_status_update(&new, &json!({}))
        .iter()
        .map(ToString::to_string)
        .collect();
    assert_eq!(
        errs,
        ["status.num: Invalid value: 15: num in body should be less than or equal to 10"]
    );
    assert_errors(
        &s,
        new,
        &[
            "spec.num: Invalid value: 15: spec.num in body should be less than or equal to 10",
            "status.num: Invalid value: 15: status.num in body should be less than or equal to 10",
        ],
    );
}

// object_validator.go: additionalProperties schemas get `.key` paths, `false` forbids.
#[test]
fn additional_properties() {
    let s = schema(json!({"type": "object", "properties": {
        "labels": {"type": "object", "additionalProperties": {"type": "string", "maxLength": 3}}
    }}));
    assert_errors(&s, json!({"labels": {"a": "abc"}}), &[]);
    assert_errors(
        &s,
        json!({"labels": {"a.b": 1}}),
        &["labels.a.b: Invalid value: \"integer\": labels.a.b in body must be of type string: \"integer\""],
    );
    let s =
        field(json!({"type": "object", "properties": {"a": {}}, "additionalProperties": false}));
    assert_errors(
        &s,
        json!({"field": {"a": 1, "b": 2}}),
        &["field: Invalid value: \"b\": field.b in body is a forbidden property"],
    );
}

// ratcheting_test.go TestObjectScalarFieldsRatcheting / TestObjectObjectFieldsRatcheting.
#[test]
fn updates_ratchet_unchanged_values() {
    let s = schema(
        json!({"type": "object", "properties": {"nested": {"type": "object", "properties": {
            "small": {"type": "number", "maximum": 50},
            "medium": {"type": "number", "minimum": 50, "maximum": 10000}
        }}}}),
    );
    let small = |n: i64| json!({"nested": {"small": n}});
    assert!(s.validate_update(&small(500), &small(500)).is_empty());
    let old = json!({"nested": {"small": 501, "medium": 500}});
    assert!(s.validate_update(&small(501), &old).is_empty());
    let errs = s.validate_update(&small(500), &small(501));
    assert_eq!(
        errs[0].to_string(),
        "nested.small: Invalid value: 500: nested.small in body should be less than or equal to 50"
    );
    // A created object gets no such leniency.
    assert_eq!(s.validate(&small(500)).len(), 1);
}

// Ratcheting correlates list-map items by key, and only them.
#[test]
fn list_map_items_ratchet_by_key() {
    let s = schema(json!({"type": "object", "properties": {"ports": {
        "type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
        "items": {"type": "object", "properties": {
            "name": {"type": "string"}, "port": {"type": "integer", "maximum": 100}
        }}
    }}}));
    let old = json!({"ports": [{"name": "a", "port": 500}, {"name": "b", "port": 1}]});
    let reordered = json!({"ports": [{"name": "b", "port": 1}, {"name": "a", "port": 500}]});
    assert!(s.validate_update(&reordered, &old).is_empty());
    let changed = json!({"ports": [{"name": "a", "port": 501}]});
    assert_eq!(s.validate_update(&changed, &old).len(), 1);
}

// values.go MultipleOfNativeType / MinimumNativeType: an int64 value takes the bounds and
// the factor as int64 (2.5 becomes 2, 0.5 becomes 0 and "must be positive").
#[test]
fn integer_values_truncate_float_bounds() {
    let s = schema(json!({"type": "object", "properties": {
        "a": {"type": "integer", "multipleOf": 2.5},
        "b": {"type": "integer", "multipleOf": 0.5},
        "c": {"type": "integer", "minimum": 1.5, "exclusiveMinimum": true}
    }}));
    assert_errors(&s, json!({"a": 4}), &[]);
    assert_errors(
        &s,
        json!({"a": 5}),
        &["a: Invalid value: 5: a in body should be a multiple of 2"],
    );
    assert_errors(
        &s,
        json!({"b": 1}),
        &["b: Invalid value: 0: factor MultipleOf declared for b must be positive: 0"],
    );
    assert_errors(
        &s,
        json!({"c": 1}),
        &["c: Invalid value: 1: c in body should be greater than 1"],
    );
    assert_errors(&s, json!({"c": 2}), &[]);
}

// pkg/registry/customresource/strategy.go ValidateUpdate: list-type errors count on update
// only when the old object had none.
#[test]
fn list_type_errors_ratchet_on_update() {
    let s = schema(json!({"type": "object", "properties": {
        "tags": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}}
    }}));
    let dup = json!({"tags": ["a", "a"]});
    assert_eq!(errors(&s, dup.clone()), ["tags[1]: Duplicate value: \"a\""]);
    assert!(s.validate_update(&dup, &dup).is_empty());
    assert_eq!(s.validate_update(&dup, &json!({"tags": ["a"]})).len(), 1);
}
