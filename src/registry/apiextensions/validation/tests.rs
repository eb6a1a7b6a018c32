//! Tests of the CRD-level rules: metadata, names, versions, conversion, columns, subresources,
//! stored versions, the approval annotation and updates. Expected texts come from upstream's
//! validation.go (release-1.35) unless a comment names the validation_test.go case.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use serde_json::{json, Value};

use super::*;

/// A CRD from JSON, panicking (in a test) on malformed input.
pub(super) fn crd(v: Value) -> CustomResourceDefinition {
    match serde_json::from_value(v) {
        Ok(c) => c,
        Err(e) => panic!("bad test CRD: {e}"),
    }
}

/// The standard example: crontabs.stable.example.com with one structural schema.
pub(super) fn crontab() -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "crontabs.stable.example.com", "resourceVersion": "1"},
        "spec": {
            "group": "stable.example.com",
            "scope": "Namespaced",
            "names": {"plural": "crontabs", "singular": "crontab", "kind": "CronTab", "shortNames": ["ct"]},
            "versions": [{
                "name": "v1",
                "served": true,
                "storage": true,
                "schema": {"openAPIV3Schema": {
                    "type": "object",
                    "properties": {"spec": {"type": "object", "properties": {
                        "cronSpec": {"type": "string"},
                        "image": {"type": "string"},
                        "replicas": {"type": "integer"}
                    }}}
                }}
            }]
        }
    })
}

/// Sets `value` at the JSON pointer `ptr` (creating objects on the way).
pub(super) fn with(mut v: Value, ptr: &str, value: Value) -> Value {
    let mut cur = &mut v;
    for part in ptr.trim_start_matches('/').split('/') {
        cur = match cur {
            Value::Array(a) => {
                let i: usize = part.parse().unwrap_or(0);
                if i == a.len() {
                    a.push(Value::Null);
                }
                &mut a[i]
            }
            _ => {
                if !cur.is_object() {
                    *cur = json!({});
                }
                cur.as_object_mut()
                    .map(|m| m.entry(part.to_string()).or_insert(Value::Null))
                    .unwrap_or_else(|| unreachable!())
            }
        };
    }
    *cur = value;
    v
}

/// Removes the member at `ptr`.
pub(super) fn without(mut v: Value, ptr: &str) -> Value {
    let (parent, last) = ptr.rsplit_once('/').unwrap_or(("", ptr));
    if let Some(Value::Object(m)) = v.pointer_mut(parent) {
        m.remove(last);
    }
    v
}

/// The errors of creating the CRD, as kube prints them.
pub(super) fn create(v: Value) -> Vec<String> {
    validate_crd(&crd(v))
        .iter()
        .map(ToString::to_string)
        .collect()
}

pub(super) fn update(new: Value, old: Value) -> Vec<String> {
    validate_crd_update(&crd(new), &crd(old))
        .iter()
        .map(ToString::to_string)
        .collect()
}

pub(super) const DNS1035: &str = "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')";

fn version_json(name: &str, storage: bool) -> String {
    format!(
        r#"{{"Name":"{name}","Served":true,"Storage":{storage},"Deprecated":false,"DeprecationWarning":null,"Schema":null,"Subresources":null,"AdditionalPrinterColumns":null,"SelectableFields":null}}"#
    )
}

#[test]
fn a_valid_crd_has_no_errors() {
    assert_eq!(create(crontab()), Vec::<String>::new());
}

#[test]
fn a_cert_manager_like_crd_has_no_errors() {
    let schema = |extra: Value| {
        json!({"openAPIV3Schema": {
            "type": "object",
            "description": "A Certificate resource should be created to ensure an up to date and signed X.509 certificate is stored in the Kubernetes Secret resource named in `spec.secretName`.",
            "required": ["spec"],
            "properties": {
                "apiVersion": {"type": "string"},
                "kind": {"type": "string"},
                "metadata": {"type": "object"},
                "spec": {
                    "type": "object",
                    "required": ["issuerRef", "secretName"],
                    "properties": {
                        "secretName": {"type": "string"},
                        "duration": {"type": "string"},
                        "dnsNames": {"type": "array", "items": {"type": "string"}},
                        "issuerRef": {"type": "object", "required": ["name"], "properties": {
                            "name": {"type": "string"}, "kind": {"type": "string"}, "group": {"type": "string"}
                        }},
                        "privateKey": {"type": "object", "properties": {
                            "algorithm": {"type": "string", "enum": ["RSA", "ECDSA", "Ed25519"]},
                            "size": {"type": "integer"},
                            "rotationPolicy": {"type": "string", "default": "Always"}
                        }},
                        "port": {"x-kubernetes-int-or-string": true, "anyOf": [{"type": "integer"}, {"type": "string"}]},
                        "secretTemplate": {"type": "object", "properties": {
                            "annotations": {"type": "object", "additionalProperties": {"type": "string"}}
                        }},
                        "extra": extra
                    }
                },
                "status": {"type": "object", "properties": {
                    "conditions": {
                        "type": "array",
                        "x-kubernetes-list-type": "map",
                        "x-kubernetes-list-map-keys": ["type"],
                        "items": {"type": "object", "required": ["status", "type"], "properties": {
                            "type": {"type": "string"},
                            "status": {"type": "string", "enum": ["True", "False", "Unknown"]},
                            "lastTransitionTime": {"type": "string", "format": "date-time"}
                        }}
                    },
                    "notAfter": {"type": "string", "format": "date-time"}
                }}
            }
        }})
    };
    let columns = json!([
        {"name": "Ready", "type": "string", "jsonPath": ".status.conditions[?(@.type==\"Ready\")].status"},
        {"name": "Secret", "type": "string", "jsonPath": ".spec.secretName"},
        {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp", "priority": 1}
    ]);
    let v = json!({
        "metadata": {"name": "certificates.cert-manager.io", "labels": {"app": "cert-manager"}},
        "spec": {
            "group": "cert-manager.io",
            "scope": "Namespaced",
            "names": {"plural": "certificates", "singular": "certificate", "kind": "Certificate",
                      "listKind": "CertificateList", "shortNames": ["cert", "certs"], "categories": ["cert-manager"]},
            "versions": [
                {"name": "v1", "served": true, "storage": true, "schema": schema(json!({"type": "string"})),
                 "subresources": {"status": {}}, "additionalPrinterColumns": columns},
                {"name": "v1beta1", "served": false, "storage": false, "deprecated": true,
                 "deprecationWarning": "cert-manager.io/v1beta1 Certificate is deprecated",
                 "schema": schema(json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true})),
                 "subresources": {"status": {}}, "additionalPrinterColumns": columns}
            ]
        }
    });
    assert_eq!(create(v), Vec::<String>::new());
}

#[test]
fn v1_defaults_fill_names_conversion_and_stored_versions() {
    let mut c = crd(without(crontab(), "/spec/names/singular"));
    set_defaults(&mut c);
    assert_eq!(c.spec.names.singular.as_deref(), Some("crontab"));
    assert_eq!(c.spec.names.list_kind.as_deref(), Some("CronTabList"));
    assert_eq!(
        c.spec.conversion.as_ref().map(|c| c.strategy.as_str()),
        Some("None")
    );
    let stored = c.status.as_ref().and_then(|s| s.stored_versions.clone());
    assert_eq!(stored, Some(vec!["v1".to_string()]));
}

// validation_test.go "mismatched name".
#[test]
fn name_must_be_plural_dot_group() {
    let v = with(
        crontab(),
        "/metadata/name",
        json!("crontab.stable.example.com"),
    );
    assert_eq!(
        create(v),
        ["metadata.name: Invalid value: \"crontab.stable.example.com\": must be spec.names.plural+\".\"+spec.group"]
    );
    let v = with(
        crontab(),
        "/metadata/name",
        json!("Crontabs.stable.example.com"),
    );
    let errs = create(v);
    assert_eq!(errs.len(), 2);
    assert!(errs[0].starts_with("metadata.name: Invalid value: \"Crontabs.stable.example.com\": a lowercase RFC 1123 subdomain"));
}

#[test]
fn generate_name_gets_the_name_function_too() {
    let v = with(
        without(crontab(), "/metadata/name"),
        "/metadata/generateName",
        json!("crontabs-"),
    );
    assert_eq!(
        create(v),
        [
            "metadata.generateName: Invalid value: \"crontabs-\": must be spec.names.plural+\".\"+spec.group",
            "metadata.name: Required value: name or generateName is required",
        ]
    );
}

#[test]
fn group_needs_a_dot_and_dns_syntax() {
    let v = with(crontab(), "/spec/group", json!("example"));
    let v = with(v, "/metadata/name", json!("crontabs.example"));
    assert_eq!(
        create(v),
        ["spec.group: Invalid value: \"example\": should be a domain with at least one dot"]
    );

    let v = with(crontab(), "/spec/group", json!("Example.com"));
    let v = with(v, "/metadata/name", json!("crontabs.Example.com"));
    let errs = create(v);
    assert!(errs.contains(&format!(
        "spec.group: Invalid value: \"Example.com\": {}",
        crate::api::selectors::DNS1123_SUBDOMAIN_MSG
    )));

    let v = with(
        without(crontab(), "/spec/group"),
        "/metadata/name",
        json!("crontabs."),
    );
    let errs = create(v);
    assert!(
        errs.contains(&"spec.group: Required value".to_string()),
        "{errs:?}"
    );
}

// validation_test.go "bad names 01" / "bad names 02".
#[test]
fn names_are_dns_1035_labels() {
    let v = with(
        crontab(),
        "/spec/names",
        json!({
            "plural": "Crontabs", "singular": "cron_tab", "kind": "Cron_Tab", "listKind": "Cron_TabList",
            "shortNames": ["ct", "C T"], "categories": ["all", "Bad"]
        }),
    );
    let v = with(v, "/metadata/name", json!("Crontabs.stable.example.com"));
    let errs = create(v);
    for expected in [
        format!("spec.names.plural: Invalid value: \"Crontabs\": {DNS1035}"),
        format!("spec.names.singular: Invalid value: \"cron_tab\": {DNS1035}"),
        format!("spec.names.kind: Invalid value: \"Cron_Tab\": may have mixed case, but should otherwise match: {DNS1035}"),
        format!("spec.names.listKind: Invalid value: \"Cron_TabList\": may have mixed case, but should otherwise match: {DNS1035}"),
        format!("spec.names.shortNames[1]: Invalid value: \"C T\": {DNS1035}"),
        format!("spec.names.categories[1]: Invalid value: \"Bad\": {DNS1035}"),
    ] {
        assert!(errs.contains(&expected), "missing {expected}\nin {errs:#?}");
    }
}

#[test]
fn kind_and_list_kind_differ() {
    let v = with(crontab(), "/spec/names/listKind", json!("CronTab"));
    assert_eq!(create(v), ["spec.names.listKind: Invalid value: \"CronTab\": kind and listKind may not be the same"]);
}

// validation_test.go "missing values".
#[test]
fn missing_names_and_scope_are_required() {
    let v = with(crontab(), "/spec/names", json!({"plural": "crontabs"}));
    let v = without(v, "/spec/scope");
    assert_eq!(
        create(v),
        [
            "spec.scope: Required value",
            "spec.names.singular: Required value",
            "spec.names.kind: Required value",
            "spec.names.listKind: Required value",
        ]
    );
    let v = with(crontab(), "/spec/scope", json!("Global"));
    assert_eq!(create(v), ["spec.scope: Unsupported value: \"Global\": supported values: \"Cluster\", \"Namespaced\""]);
}

// validation_test.go "no_storage_version".
#[test]
fn exactly_one_storage_version() {
    let v = with(crontab(), "/spec/versions/0/storage", json!(false));
    assert_eq!(
        create(v),
        [
            format!(
                "spec.versions: Invalid value: [{}]: must have exactly one version marked as storage version",
                version_json("v1", false)
            ),
            "status.storedVersions: Invalid value: null: must have at least one stored version".to_string(),
        ]
    );
    // "multiple_storage_version": the shared schema moved to spec.validation, so the
    // versions print without it.
    let mut second = crontab()["spec"]["versions"][0].clone();
    second["name"] = json!("v2");
    let v = with(crontab(), "/spec/versions/1", second);
    assert_eq!(
        create(v),
        [
            format!(
                "spec.versions: Invalid value: [{},{}]: must have exactly one version marked as storage version",
                version_json("v1", true),
                version_json("v2", true)
            ),
            "status.storedVersions: Invalid value: [\"v1\"]: must have the storage version v2".to_string(),
        ]
    );
}

#[test]
fn version_names_are_unique_labels() {
    let mut second = crontab()["spec"]["versions"][0].clone();
    second["storage"] = json!(false);
    let v = with(crontab(), "/spec/versions/1", second);
    assert_eq!(
        create(v),
        [format!(
            "spec.versions: Invalid value: [{},{}]: must contain unique version names",
            version_json("v1", true),
            version_json("v1", false)
        )]
    );
    let v = with(crontab(), "/spec/versions/0/name", json!("V1"));
    assert_eq!(
        create(v),
        [
            format!("spec.versions[0].name: Invalid value: \"V1\": {DNS1035}"),
            format!("spec.version: Invalid value: \"V1\": {DNS1035}"),
        ]
    );
}

#[test]
fn served_false_everywhere_is_accepted_as_upstream_does() {
    let v = with(crontab(), "/spec/versions/0/served", json!(false));
    assert_eq!(create(v), Vec::<String>::new());
}

// validation_test.go "schema is required".
#[test]
fn every_version_needs_a_schema() {
    let v = without(crontab(), "/spec/versions/0/schema");
    assert_eq!(
        create(v),
        ["spec.versions[0].schema.openAPIV3Schema: Required value"]
    );
}

// validation_test.go "preserveUnknownFields: true".
#[test]
fn preserve_unknown_fields_may_not_become_true() {
    let v = with(crontab(), "/spec/preserveUnknownFields", json!(true));
    assert_eq!(
        create(v.clone()),
        ["spec.preserveUnknownFields: Invalid value: true: cannot set to true, set x-kubernetes-preserve-unknown-fields to true in spec.versions[*].schema instead"]
    );
    // An old CRD that has it keeps it.
    assert_eq!(update(v.clone(), v), Vec::<String>::new());
}

#[test]
fn defaults_need_preserve_unknown_fields_false() {
    let v = with(
        crontab(),
        "/spec/versions/0/schema/openAPIV3Schema/properties/spec/properties/image/default",
        json!("nginx"),
    );
    assert_eq!(create(v.clone()), Vec::<String>::new());
    let v = with(v, "/spec/preserveUnknownFields", json!(true));
    let errs = create(v);
    assert_eq!(errs[0], "spec.preserveUnknownFields: Invalid value: true: must be false in order to use defaults in the schema");
}

#[test]
fn printer_columns_of_a_single_version_are_checked_at_the_top_level() {
    let v = with(
        crontab(),
        "/spec/versions/0/additionalPrinterColumns",
        json!([
            {"name": "", "type": "time", "format": "hex", "jsonPath": "spec.image"},
            {"name": "Image", "type": "", "jsonPath": ""}
        ]),
    );
    assert_eq!(
        create(v),
        [
            "spec.additionalPrinterColumns[0].name: Required value",
            "spec.additionalPrinterColumns[0].type: Invalid value: \"time\": must be one of boolean,date,integer,number,string",
            "spec.additionalPrinterColumns[0].format: Invalid value: \"hex\": must be one of byte,date,date-time,double,float,int32,int64,password",
            "spec.additionalPrinterColumns[0].JSONPath: Invalid value: \"spec.image\": must be a simple json path starting with .",
            "spec.additionalPrinterColumns[1].type: Required value: must be one of boolean,date,integer,number,string",
            "spec.additionalPrinterColumns[1].JSONPath: Required value",
        ]
    );
}

#[test]
fn per_version_fields_stay_per_version_when_they_differ() {
    let mut second = crontab()["spec"]["versions"][0].clone();
    second["name"] = json!("v2");
    second["storage"] = json!(false);
    second["additionalPrinterColumns"] =
        json!([{"name": "X", "type": "time", "jsonPath": ".spec.x"}]);
    let v = with(crontab(), "/spec/versions/1", second);
    assert_eq!(
        create(v),
        ["spec.versions[1].additionalPrinterColumns[0].type: Invalid value: \"time\": must be one of boolean,date,integer,number,string"]
    );
}

// validation_test.go "labelSelectorPath outside of .spec and .status".
#[test]
fn scale_paths() {
    let v = with(
        crontab(),
        "/spec/versions/0/subresources",
        json!({"scale": {
            "specReplicasPath": ".status.replicas",
            "statusReplicasPath": "",
            "labelSelectorPath": ".metadata.labels"
        }}),
    );
    assert_eq!(
        create(v),
        [
            "spec.subresources.scale.specReplicasPath: Invalid value: \".status.replicas\": should be a json path under .spec",
            "spec.subresources.scale.statusReplicasPath: Required value",
            "spec.subresources.scale.labelSelectorPath: Invalid value: \".metadata.labels\": should be a json path under either .spec or .status",
        ]
    );
}

// TestValidateCustomResourceDefinitionStoredVersions.
#[test]
fn stored_versions() {
    let v = with(
        crontab(),
        "/status/storedVersions",
        json!(["v1alpha", "v1beta1"]),
    );
    assert_eq!(
        create(v),
        [
            "status.storedVersions: Invalid value: [\"v1alpha\",\"v1beta1\"]: must have the storage version v1",
            "status.storedVersions[0]: Invalid value: \"v1alpha\": missing from spec.versions; v1alpha was previously a storage version, and must remain in spec.versions until a storage migration ensures no data remains persisted in v1alpha and removes v1alpha from status.storedVersions",
            "status.storedVersions[1]: Invalid value: \"v1beta1\": missing from spec.versions; v1beta1 was previously a storage version, and must remain in spec.versions until a storage migration ensures no data remains persisted in v1beta1 and removes v1beta1 from status.storedVersions",
        ]
    );
}

// Test_validateDeprecationWarning.
#[test]
fn deprecation_warnings() {
    let v = with(
        crontab(),
        "/spec/versions/0/deprecationWarning",
        json!("gone <soon>"),
    );
    assert_eq!(
        create(v.clone()),
        ["spec.versions[0].deprecationWarning: Invalid value: \"gone \\u003csoon\\u003e\": can only be set for deprecated versions"]
    );
    let v = with(v, "/spec/versions/0/deprecated", json!(true));
    assert_eq!(create(v.clone()), Vec::<String>::new());
    let v = with(v, "/spec/versions/0/deprecationWarning", json!("a\tb"));
    assert_eq!(
        create(v),
        ["spec.versions[0].deprecationWarning: Invalid value: \"a\\tb\": must only contain printable UTF-8 characters; non-printable character found at index 1"]
    );
}
