//! Tests of the schema rules: structural schemas (pkg/apiserver/schema/validation.go), the
//! OpenAPI walk and its x-kubernetes-* rules (validation.go). Each test puts a schema into the
//! single version of the crontab CRD, so errors are reported under `spec.validation`, as
//! kube-apiserver reports them for a v1 CRD whose versions share one schema.

use serde_json::{json, Value};

use super::tests::{create, crontab, with};

const ROOT: &str = "spec.validation.openAPIV3Schema";

/// The errors of the crontab CRD with `schema` as its root schema.
fn root(schema: Value) -> Vec<String> {
    create(with(
        crontab(),
        "/spec/versions/0/schema/openAPIV3Schema",
        schema,
    ))
}

/// The errors with `schema` as the property `a` of an object root.
fn prop(schema: Value) -> Vec<String> {
    root(json!({"type": "object", "properties": {"a": schema}}))
}

fn at(rest: &str) -> String {
    format!("{ROOT}{rest}")
}

// validation_test.go "additionalProperties and properties forbidden".
#[test]
fn additional_properties_with_properties() {
    assert_eq!(
        prop(json!({"type": "object", "properties": {"x": {"type": "string"}}, "additionalProperties": {"type": "string"}})),
        [at(".properties[a].additionalProperties: Forbidden: additionalProperties and properties are mutual exclusive")]
    );
    // "additionalProperties without properties allowed (map[string]string)".
    assert_eq!(
        prop(json!({"type": "object", "additionalProperties": {"type": "string"}})),
        Vec::<String>::new()
    );
    // additionalProperties: true is allowed next to properties.
    assert_eq!(
        prop(
            json!({"type": "object", "properties": {"x": {"type": "string"}}, "additionalProperties": true})
        ),
        Vec::<String>::new()
    );
}

// validation_test.go "additionalProperties at resource root".
#[test]
fn additional_properties_at_the_root() {
    assert_eq!(
        root(json!({"type": "object", "additionalProperties": {"type": "string"}})),
        [at(
            ".additionalProperties: Forbidden: must not be used at the root"
        )]
    );
}

#[test]
fn types_are_required_and_valid() {
    assert_eq!(
        root(json!({"properties": {"a": {"type": "string"}}})),
        [at(".type: Required value: must not be empty at the root")]
    );
    assert_eq!(
        prop(json!({"type": "array", "items": {"description": "x"}})),
        [at(".properties[a].items.type: Required value: must not be empty for specified array items")]
    );
    assert_eq!(
        prop(json!({"type": "array"})),
        [at(
            ".properties[a].items: Required value: must be specified"
        )]
    );
    // "invalid types disallowed".
    assert_eq!(
        prop(json!({"type": "bool"})),
        [at(".properties[a].type: Unsupported value: \"bool\": supported values: \"array\", \"boolean\", \"integer\", \"number\", \"object\", \"string\"")]
    );
    assert_eq!(
        prop(json!({"type": "null"})),
        [
            at(".properties[a].type: Unsupported value: \"null\": supported values: \"array\", \"boolean\", \"integer\", \"number\", \"object\", \"string\""),
            at(".properties[a].type: Forbidden: type cannot be set to null, use nullable as an alternative"),
        ]
    );
    assert_eq!(
        root(json!({"type": "array", "items": {"type": "string"}})),
        [at(
            ".type: Invalid value: \"array\": must be object at the root"
        )]
    );
}

#[test]
fn junctors_may_not_carry_types_and_the_like() {
    assert_eq!(
        prop(
            json!({"type": "string", "anyOf": [{"type": "string", "description": "d"}, {"pattern": "^a"}]})
        ),
        [
            at(".properties[a].anyOf[0].description: Forbidden: must be empty to be structural"),
            at(".properties[a].anyOf[0].type: Forbidden: must be empty to be structural"),
        ]
    );
    // Completeness (complete.go) looks at the junctors of the root schema only.
    assert_eq!(
        root(json!({"type": "object", "properties": {"x": {"type": "string"}}, "oneOf": [{"properties": {"y": {"minLength": 1}}}]})),
        [at(".properties[y]: Required value: because it is defined in spec.validation.openAPIV3Schema.oneOf[0].properties[y]")]
    );
    assert_eq!(
        prop(json!({"type": "object", "oneOf": [{"properties": {"y": {"minLength": 1}}}]})),
        Vec::<String>::new()
    );
    assert_eq!(
        prop(json!({"type": "object", "not": {"properties": {"metadata": {"required": ["x"]}}}})),
        [at(".properties[a].not.properties[metadata]: Forbidden: must not be specified in a nested context")]
    );
}

#[test]
fn int_or_string() {
    assert_eq!(
        prop(
            json!({"x-kubernetes-int-or-string": true, "anyOf": [{"type": "integer"}, {"type": "string"}]})
        ),
        Vec::<String>::new()
    );
    assert_eq!(
        prop(
            json!({"x-kubernetes-int-or-string": true, "allOf": [{"anyOf": [{"type": "integer"}, {"type": "string"}]}, {"pattern": "^[0-9]+%?$"}]})
        ),
        Vec::<String>::new()
    );
    assert_eq!(
        prop(
            json!({"x-kubernetes-int-or-string": true, "anyOf": [{"type": "integer"}, {"type": "string", "maxLength": 3}]})
        ),
        [
            at(".properties[a].anyOf[0].type: Forbidden: must be empty to be structural"),
            at(".properties[a].anyOf[1].type: Forbidden: must be empty to be structural"),
        ]
    );
    assert_eq!(
        prop(json!({"x-kubernetes-int-or-string": true, "x-kubernetes-preserve-unknown-fields": true})),
        [at(".properties[a].x-kubernetes-preserve-unknown-fields: Invalid value: true: must be false if x-kubernetes-int-or-string is true")]
    );
}

// validation_test.go "x-kubernetes-preserve-unknown-field: false".
#[test]
fn preserve_unknown_fields_false() {
    assert_eq!(
        prop(json!({"type": "object", "x-kubernetes-preserve-unknown-fields": false})),
        [at(".properties[a].x-kubernetes-preserve-unknown-fields: Invalid value: false: must be true or undefined")]
    );
}

#[test]
fn metadata_may_only_restrict_name_and_generate_name() {
    let meta = |m: Value| root(json!({"type": "object", "properties": {"metadata": m}}));
    assert_eq!(meta(json!({"type": "object"})), Vec::<String>::new());
    assert_eq!(
        meta(
            json!({"type": "object", "properties": {"name": {"type": "string", "maxLength": 20}}})
        ),
        Vec::<String>::new()
    );
    assert_eq!(
        meta(json!({"type": "object", "properties": {"labels": {"type": "object"}}})),
        [at(".properties[metadata]: Forbidden: must not specify anything other than name and generateName, but metadata is implicitly specified")]
    );
    assert_eq!(
        meta(json!({"type": "string"})),
        [at(
            ".properties[metadata].type: Invalid value: \"string\": must be object"
        )]
    );
    // "top-level metadata default".
    assert_eq!(
        meta(json!({"type": "object", "default": {"name": "x"}})),
        [at(
            ".properties[metadata].default: Forbidden: must not be set in top-level metadata"
        )]
    );
    // "contradicting meta field types".
    assert_eq!(
        root(
            json!({"type": "object", "properties": {"kind": {"type": "integer"}, "apiVersion": {"type": "string"}}})
        ),
        [at(
            ".properties[kind].type: Invalid value: \"integer\": must be string"
        )]
    );
}

// validation_test.go "x-kubernetes-embedded-resource with pruning and empty properties" and
// "x-kubernetes-embedded-resource inside resource meta".
#[test]
fn embedded_resources() {
    assert_eq!(
        prop(json!({"x-kubernetes-embedded-resource": true})),
        [
            at(".properties[a].properties: Required value: must not be empty if x-kubernetes-embedded-resource is true without x-kubernetes-preserve-unknown-fields"),
            at(".properties[a].type: Required value: must be object if x-kubernetes-embedded-resource is true"),
        ]
    );
    assert_eq!(
        prop(
            json!({"type": "object", "x-kubernetes-embedded-resource": true, "x-kubernetes-preserve-unknown-fields": true})
        ),
        Vec::<String>::new()
    );
    assert_eq!(
        root(json!({"type": "object", "properties": {"metadata": {"type": "object",
            "x-kubernetes-embedded-resource": true, "x-kubernetes-preserve-unknown-fields": true}}})),
        [
            at(".properties[metadata]: Forbidden: must not specify anything other than name and generateName, but metadata is implicitly specified"),
            at(".properties[metadata].x-kubernetes-embedded-resource: Forbidden: must not be used inside of resource meta"),
        ]
    );
}

#[test]
fn list_types() {
    assert_eq!(
        prop(json!({"type": "array", "x-kubernetes-list-type": "map", "items": {"type": "object", "properties": {"k": {"type": "string"}}}})),
        [at(".properties[a].x-kubernetes-list-map-keys: Required value: must not be empty if x-kubernetes-list-type is map")]
    );
    assert_eq!(
        prop(json!({"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["k"],
                    "items": {"type": "object", "properties": {"k": {"type": "string"}}}})),
        [at(".properties[a].items.properties[k].default: Required value: this property is in x-kubernetes-list-map-keys, so it must have a default or be a required property")]
    );
    assert_eq!(
        prop(json!({"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["k", "z", "k"],
                    "items": {"type": "object", "required": ["k"], "properties": {"k": {"type": "object"}}}})),
        [
            at(".properties[a].items.properties[k].type: Invalid value: \"object\": must be a scalar type if parent array's x-kubernetes-list-type is map"),
            at(".properties[a].x-kubernetes-list-map-keys: Invalid value: [\"k\",\"z\",\"k\"]: entries must all be names of item properties"),
            at(".properties[a].items.properties[k].type: Invalid value: \"object\": must be a scalar type if parent array's x-kubernetes-list-type is map"),
            at(".properties[a].x-kubernetes-list-map-keys: Invalid value: [\"k\",\"z\",\"k\"]: must not contain duplicate entries"),
        ]
    );
    assert_eq!(
        prop(json!({"type": "object", "x-kubernetes-list-type": "set"})),
        [at(".properties[a].type: Invalid value: \"object\": must be array if x-kubernetes-list-type is specified")]
    );
    assert_eq!(
        prop(json!({"type": "array", "x-kubernetes-list-type": "bag", "items": {"type": "string"}})),
        [at(".properties[a].x-kubernetes-list-type: Unsupported value: \"bag\": supported values: \"atomic\", \"set\", \"map\"")]
    );
    assert_eq!(
        prop(json!({"type": "array", "x-kubernetes-list-map-keys": ["k"], "items": {"type": "string"}})),
        [at(".properties[a].x-kubernetes-list-type: Required value: must be map if x-kubernetes-list-map-keys is non-empty")]
    );
    assert_eq!(
        prop(json!({"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string", "nullable": true}})),
        [at(".properties[a].items.nullable: Forbidden: cannot be nullable when x-kubernetes-list-type is set")]
    );
    assert_eq!(
        prop(json!({"type": "string", "x-kubernetes-map-type": "struct"})),
        [
            at(".properties[a].type: Invalid value: \"string\": must be object if x-kubernetes-map-type is specified"),
            at(".properties[a].x-kubernetes-map-type: Unsupported value: \"struct\": supported values: \"atomic\", \"granular\""),
        ]
    );
}

#[test]
fn unsupported_keywords() {
    assert_eq!(
        prop(json!({"type": "string", "uniqueItems": true})),
        [at(".properties[a].uniqueItems: Forbidden: uniqueItems cannot be set to true since the runtime complexity becomes quadratic")]
    );
    // The walk reports $ref, so NewStructural's own error is not shown.
    assert_eq!(
        prop(json!({"$ref": "#/definitions/x"})),
        [at(".properties[a].$ref: Forbidden: $ref is not supported")]
    );
    assert_eq!(
        prop(json!({"type": "array", "items": [{"type": "string"}]})),
        [at(
            ".properties[a].items: Forbidden: items must be a schema object and not an array"
        )]
    );
    assert_eq!(
        root(json!({"type": "object", "nullable": true})),
        [at(
            ".nullable: Forbidden: nullable cannot be true at the root"
        )]
    );
}

#[test]
fn a_schema_keyword_without_a_walk_rule_shows_new_structurals_error() {
    assert_eq!(
        prop(json!({"type": "string", "$schema": "http://json-schema.org/draft-04/schema#"})),
        [at(
            ": Invalid value: \"\": OpenAPIV3Schema 'schema' is not supported"
        )]
    );
}

#[test]
fn patterns_must_compile_as_go_regexps() {
    assert_eq!(
        prop(json!({"type": "string", "pattern": "^(?!kube-).*$"})),
        [at(".properties[a].pattern: Invalid value: \"^(?!kube-).*$\": must be a valid regular expression, but isn't: error parsing regexp: invalid or unsupported Perl syntax: `(?!`")]
    );
    assert_eq!(
        prop(json!({"type": "string", "pattern": "^[a-z]+\\.example\\.com$"})),
        Vec::<String>::new()
    );
}

// "default inside additionalSchema" (in metadata) and "v1.15 era tests for metadata defaults".
#[test]
fn defaults_in_embedded_metadata_maps_are_forbidden() {
    assert_eq!(
        prop(json!({"type": "object", "x-kubernetes-embedded-resource": true, "properties": {
            "metadata": {"type": "object", "properties": {
                "labels": {"type": "object", "additionalProperties": {"type": "string", "default": "x"}}
            }}
        }})),
        [at(".properties[a].properties[metadata].properties[labels].additionalProperties.default: Forbidden: must not be set inside additionalProperties applying to object metadata")]
    );
}

// validation_test.go "x-kubernetes-validations should have valid reason and fieldPath".
#[test]
fn validation_rules_static_shape() {
    assert_eq!(
        prop(json!({"type": "object", "properties": {"x": {"type": "string"}}, "x-kubernetes-validations": [
            {"rule": " "},
            {"rule": "self.x != ''", "message": "  "},
            {"rule": "self.x\n!= ''"},
            {"rule": "true", "messageExpression": " ", "reason": "FieldValueBad"},
            {"rule": "true", "fieldPath": ".y"},
            {"rule": "true", "fieldPath": ".x"}
        ]})),
        [
            at(".properties[a].x-kubernetes-validations[0].rule: Required value: rule is not specified"),
            at(".properties[a].x-kubernetes-validations[1].message: Invalid value: \"  \": must be non-empty if specified"),
            at(".properties[a].x-kubernetes-validations[2].message: Required value: message must be specified if rule contains line breaks"),
            at(".properties[a].x-kubernetes-validations[3].messageExpression: Required value: messageExpression must be non-empty if specified"),
            at(".properties[a].x-kubernetes-validations[3].reason: Unsupported value: \"FieldValueBad\": supported values: \"FieldValueDuplicate\", \"FieldValueForbidden\", \"FieldValueInvalid\", \"FieldValueRequired\""),
            at(".properties[a].x-kubernetes-validations[4].fieldPath: Invalid value: \".y\": must be a valid path"),
        ]
    );
    assert_eq!(
        prop(json!({"type": "string", "anyOf": [{"x-kubernetes-validations": [{"rule": "true"}]}]})),
        [at(".properties[a].anyOf[0].x-kubernetes-validations: Forbidden: must be empty to be structural")]
    );
}

#[test]
fn status_subresource_restricts_the_root() {
    let v = with(
        crontab(),
        "/spec/versions/0/subresources",
        json!({"status": {}}),
    );
    let v = with(
        v,
        "/spec/versions/0/schema/openAPIV3Schema",
        json!({"type": "object", "minProperties": 1}),
    );
    assert_eq!(
        create(v.clone()),
        [format!(
            "{ROOT}: Invalid value: {}: only [Description Type Format Title Maximum ExclusiveMaximum Minimum ExclusiveMinimum MaxLength MinLength Pattern MaxItems MinItems UniqueItems MultipleOf Required Items Properties ExternalDocs Example XPreserveUnknownFields XValidations] fields are allowed at the root of the schema if the status subresource is enabled",
            r#"{"ID":"","Schema":"","Ref":null,"Description":"","Type":"object","Nullable":false,"Format":"","Title":"","Default":null,"Maximum":null,"ExclusiveMaximum":false,"Minimum":null,"ExclusiveMinimum":false,"MaxLength":null,"MinLength":null,"Pattern":"","MaxItems":null,"MinItems":null,"UniqueItems":false,"MultipleOf":null,"Enum":null,"MaxProperties":null,"MinProperties":1,"Required":null,"Items":null,"AllOf":null,"OneOf":null,"AnyOf":null,"Not":null,"Properties":null,"AdditionalProperties":null,"PatternProperties":null,"Dependencies":null,"AdditionalItems":null,"Definitions":null,"ExternalDocs":null,"Example":null,"XPreserveUnknownFields":null,"XEmbeddedResource":false,"XIntOrString":false,"XListMapKeys":null,"XListType":null,"XMapType":null,"XValidations":null}"#
        )]
    );
    let v = with(
        v,
        "/spec/versions/0/schema/openAPIV3Schema",
        json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true, "required": ["spec"], "properties": {"spec": {"type": "object"}}}),
    );
    assert_eq!(create(v), Vec::<String>::new());
}

#[test]
fn structural_errors_come_sorted_by_their_text_before_the_walks() {
    assert_eq!(
        root(json!({"properties": {"b": {}, "a": {"type": "array"}}, "additionalProperties": {"type": "string"}})),
        [
            at(".additionalProperties: Forbidden: must not be used at the root"),
            at(".properties[a].items: Required value: must be specified"),
            at(".properties[b].type: Required value: must not be empty for specified object fields"),
            at(".type: Required value: must not be empty at the root"),
            at(".additionalProperties: Forbidden: additionalProperties and properties are mutual exclusive"),
        ]
    );
}

// validation_test.go "forbid transition rule on element of list of type atomic" and friends.
#[test]
fn transition_rules_need_correlatable_nodes() {
    let immutable = json!([{"rule": "self == oldSelf"}]);
    let list = |list_type: &str| {
        // Bounded, so the rule is within the cost budget.
        json!({"type": "array", "x-kubernetes-list-type": list_type, "maxItems": 10,
            "x-kubernetes-list-map-keys": if list_type == "map" { json!(["k"]) } else { Value::Null },
            "items": {"type": "object", "required": ["k"], "properties": {
                "k": {"type": "string"},
                "v": {"type": "string", "maxLength": 10,
                    "x-kubernetes-validations": immutable.clone()}}}})
    };
    // Items of a map list are matched by key with their old selves.
    let mut map_list = list("map");
    assert_eq!(prop(map_list.take()), Vec::<String>::new());
    let mut atomic = list("atomic");
    atomic
        .as_object_mut()
        .unwrap()
        .remove("x-kubernetes-list-map-keys");
    assert_eq!(
        prop(atomic),
        [at(".properties[a].items.properties[v].x-kubernetes-validations[0].rule: Invalid value: \"self == oldSelf\": oldSelf cannot be used on the uncorrelatable portion of the schema within spec.validation.openAPIV3Schema.properties[a]")]
    );
    // Properties of an atomic map neither; a rule that does not name oldSelf is fine there.
    let atomic_map = json!({"type": "object", "x-kubernetes-map-type": "atomic", "properties": {
        "x": {"type": "string", "maxLength": 10, "x-kubernetes-validations": immutable},
        "y": {"type": "string", "x-kubernetes-validations": [{"rule": "self != 'oldSelf'"}]}}});
    assert_eq!(
        prop(atomic_map),
        [at(".properties[a].properties[x].x-kubernetes-validations[0].rule: Invalid value: \"self == oldSelf\": oldSelf cannot be used on the uncorrelatable portion of the schema within spec.validation.openAPIV3Schema.properties[a]")]
    );
}
