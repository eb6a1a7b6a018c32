//! Tests of the approval annotation, updates (immutable fields, checks relaxed for what the old
//! object already broke), status rules, selectable fields and the NonStructuralSchema condition.

use serde_json::{json, Value};

use super::tests::*;
use super::*;

#[test]
fn approval_annotation_for_protected_groups() {
    let k8s = |annotations: Value| {
        let v = with(crontab(), "/spec/group", json!("stable.k8s.io"));
        let v = with(v, "/metadata/name", json!("crontabs.stable.k8s.io"));
        with(v, "/metadata/annotations", annotations)
    };
    assert_eq!(
        create(k8s(json!({}))),
        ["metadata.annotations[api-approved.kubernetes.io]: Required value: protected groups must have approval annotation \"api-approved.kubernetes.io\", see https://github.com/kubernetes/enhancements/pull/1111"]
    );
    assert_eq!(
        create(k8s(json!({"api-approved.kubernetes.io": "yes"}))),
        ["metadata.annotations[api-approved.kubernetes.io]: Invalid value: \"yes\": protected groups must have approval annotation \"api-approved.kubernetes.io\" with either a URL or a reason starting with \"unapproved\", see https://github.com/kubernetes/enhancements/pull/1111"]
    );
    for ok in [
        "https://github.com/kubernetes/enhancements/pull/1111",
        "unapproved, testing only",
    ] {
        assert_eq!(
            create(k8s(json!({"api-approved.kubernetes.io": ok}))),
            Vec::<String>::new()
        );
    }
    // Unchanged on update: no complaint, whatever the state.
    assert_eq!(update(k8s(json!({})), k8s(json!({}))), Vec::<String>::new());
    assert_eq!(
        update(
            k8s(json!({"api-approved.kubernetes.io": "yes"})),
            k8s(json!({}))
        )
        .len(),
        1
    );
}

#[test]
fn group_and_plural_are_immutable_scope_and_kind_once_established() {
    let old = crontab();
    let v = with(crontab(), "/spec/group", json!("other.example.com"));
    let v = with(v, "/spec/names/plural", json!("crons"));
    let v = with(v, "/spec/scope", json!("Cluster"));
    let v = with(v, "/spec/names/kind", json!("Cron"));
    assert_eq!(
        update(v.clone(), old.clone()),
        [
            "spec.group: Invalid value: \"other.example.com\": field is immutable",
            "spec.names.plural: Invalid value: \"crons\": field is immutable",
        ]
    );
    let established = with(
        old,
        "/status/conditions",
        json!([{"type": "Established", "status": "True"}]),
    );
    assert_eq!(
        update(v, established),
        [
            "spec.scope: Invalid value: \"Cluster\": field is immutable",
            "spec.names.kind: Invalid value: \"Cron\": field is immutable",
            "spec.group: Invalid value: \"other.example.com\": field is immutable",
            "spec.names.plural: Invalid value: \"crons\": field is immutable",
        ]
    );
}

#[test]
fn update_checks_object_meta() {
    let new = without(crontab(), "/metadata/resourceVersion");
    let new = with(new, "/metadata/uid", json!("b"));
    let old = with(crontab(), "/metadata/uid", json!("a"));
    assert_eq!(
        update(new, old),
        [
            "metadata.resourceVersion: Invalid value: \"\": must be specified for an update",
            "metadata.uid: Invalid value: \"b\": field is immutable",
        ]
    );
}

#[test]
fn update_relaxes_what_the_old_object_already_broke() {
    // A set of non-atomic objects: refused on create, kept on update.
    let path = "/spec/versions/0/schema/openAPIV3Schema/properties/spec/properties/tags";
    let set = json!({"type": "array", "x-kubernetes-list-type": "set",
                     "items": {"type": "object", "properties": {"k": {"type": "string"}}}});
    let v = with(crontab(), path, set);
    assert_eq!(
        create(v.clone()),
        ["spec.validation.openAPIV3Schema.properties[spec].properties[tags].items.x-kubernetes-map-type: Invalid value: null: must be atomic as item of a list with x-kubernetes-list-type=set"]
    );
    assert_eq!(update(v.clone(), v), Vec::<String>::new());
    // Unknown conversion review versions, likewise.
    let conv = with(
        crontab(),
        "/spec/conversion",
        json!({"strategy": "Webhook", "webhook": {
            "conversionReviewVersions": ["v9"], "clientConfig": {"url": "https://example.com"}
        }}),
    );
    assert_eq!(create(conv.clone()).len(), 1);
    assert_eq!(update(conv.clone(), conv), Vec::<String>::new());
}

#[test]
fn status_rules() {
    let v = with(
        crontab(),
        "/status/acceptedNames",
        json!({"plural": "Crontabs", "kind": "CronTab"}),
    );
    let expected = [format!(
        "status.acceptedNames.plural: Invalid value: \"Crontabs\": {DNS1035}"
    )];
    assert_eq!(
        validate_crd_status(&crd(v.clone()))
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>(),
        expected
    );
    assert_eq!(
        validate_crd_status_update(&crd(v), &crd(crontab()))
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>(),
        expected
    );
}

// TestSelectableFields.
#[test]
fn selectable_fields() {
    let v = with(
        crontab(),
        "/spec/versions/0/selectableFields",
        json!([
            {"jsonPath": ".spec.image"},
            {"jsonPath": ".spec.missing"},
            {"jsonPath": ".spec"},
            {"jsonPath": ".spec['image']"},
            {"jsonPath": ".spec.image"},
            {"jsonPath": ""}
        ]),
    );
    assert_eq!(
        create(v),
        [
            "spec.selectableFields[1].jsonPath: Invalid value: \".spec.missing\": is an invalid path: does not refer to a valid field",
            "spec.selectableFields[2].jsonPath: Invalid value: \".spec\": must point to a field of type string, boolean or integer. Enum string fields and strings with formats are allowed.",
            "spec.selectableFields[3].jsonPath: Invalid value: \".spec['image']\": is an invalid path: array notation is not allowed",
            "spec.selectableFields[4].jsonPath: Duplicate value: \".spec.image\"",
            "spec.selectableFields[5].jsonPath: Required value",
        ]
    );
    let many: Vec<Value> = (0..9)
        .map(|i| json!({"jsonPath": format!(".spec.f{i}")}))
        .collect();
    let mut v = crontab();
    for i in 0..9 {
        v = with(
            v,
            &format!("/spec/versions/0/schema/openAPIV3Schema/properties/spec/properties/f{i}"),
            json!({"type": "string"}),
        );
    }
    let v = with(v, "/spec/versions/0/selectableFields", json!(many));
    assert_eq!(
        create(v.clone()),
        ["spec.selectableFields: Too many: 9: must have at most 8 items"]
    );
    // Unchanged on update, an old list over the limit stays.
    assert_eq!(update(v.clone(), v), Vec::<String>::new());
}

#[test]
fn the_errors_of_a_shared_schema_name_spec_validation() {
    let path = "/spec/versions/0/schema/openAPIV3Schema/properties/spec/properties/image";
    let v = with(crontab(), path, json!({"description": "no type"}));
    assert_eq!(
        create(v),
        ["spec.validation.openAPIV3Schema.properties[spec].properties[image].type: Required value: must not be empty for specified object fields"]
    );
}

#[test]
fn non_structural_condition_messages() {
    assert_eq!(non_structural_condition(&crd(crontab())), None);
    let v = without(crontab(), "/spec/versions/0/schema/openAPIV3Schema/type");
    let v = with(
        v,
        "/spec/versions/0/schema/openAPIV3Schema/properties/spec/properties/image/type",
        Value::Null,
    );
    let c = non_structural_condition(&crd(v));
    assert_eq!(
        c,
        Some(NonStructuralCondition {
            status: "True",
            reason: "Violations",
            message: "[spec.versions[0].schema.openAPIV3Schema.properties[spec].properties[image].type: Required value: must not be empty for specified object fields, spec.versions[0].schema.openAPIV3Schema.type: Required value: must not be empty at the root]".into(),
        })
    );
    let v = with(
        crontab(),
        "/spec/versions/0/schema/openAPIV3Schema/x-kubernetes-preserve-unknown-fields",
        json!(false),
    );
    assert_eq!(
        non_structural_condition(&crd(v)),
        Some(NonStructuralCondition {
            status: "Unknown",
            reason: "StructuralError",
            message: "failed to check validation schema for version v1: internal error: 'x-kubernetes-preserve-unknown-fields' must be true or undefined".into(),
        })
    );
    let v = with(crontab(), "/spec/preserveUnknownFields", json!(true));
    assert_eq!(
        non_structural_condition(&crd(v)).map(|c| c.message),
        Some("spec.preserveUnknownFields: Invalid value: true: must be false".into())
    );
}

#[test]
fn odd_generate_names_do_not_panic() {
    let v = with(
        without(crontab(), "/metadata/name"),
        "/metadata/generateName",
        json!("é-"),
    );
    assert_eq!(create(v).len(), 3);
}

#[test]
fn is_structural_tells_the_controller() {
    let c = crd(crontab());
    let schema = |c: &CustomResourceDefinition| {
        c.spec.versions[0]
            .schema
            .as_ref()
            .and_then(|s| s.open_api_v3_schema.clone())
            .unwrap_or_default()
    };
    assert!(is_structural(&schema(&c)));
    let c = crd(without(
        crontab(),
        "/spec/versions/0/schema/openAPIV3Schema/type",
    ));
    assert!(!is_structural(&schema(&c)));
}
