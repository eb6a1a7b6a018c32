//! Tests of the webhook configurations: upstream's validation messages and field paths
//! (pkg/apis/admissionregistration/validation), the v1 defaults, the tables, the protobuf
//! decoders, and discovery of the whole group. Policies and bindings are in
//! `tests_policies.rs`, writes through the generic store in `tests_store.rs`.

use super::webhooks::WebhookConfigurations;
use super::{GROUP, RESOURCES};
use crate::registry::error::FieldError;
use crate::registry::resources::{built_in, protobuf_decoder, BuiltIn};
use crate::registry::strategy::{Input, Strategy};
use k8s_pb::api::admissionregistration::v1 as pb;
use prost::Message;
use serde_json::{json, Value};

pub(super) fn texts(errs: &[FieldError]) -> Vec<String> {
    errs.iter().map(ToString::to_string).collect()
}

/// What the store validates: the canonical, defaulted form of `obj`.
pub(super) fn canonical(s: &dyn Strategy, obj: Value) -> Value {
    s.canonicalize(Input::Value(obj)).unwrap().0
}

/// A valid webhook, with `extra` merged in.
pub(super) fn hook(extra: Value) -> Value {
    let mut h = json!({
        "name": "a.example.com",
        "clientConfig": {"url": "https://example.com/hook"},
        "sideEffects": "None",
        "admissionReviewVersions": ["v1"],
    });
    h.as_object_mut()
        .unwrap()
        .extend(extra.as_object().unwrap().clone());
    h
}

fn config(hooks: Value) -> Value {
    json!({"metadata": {"name": "c"}, "webhooks": hooks})
}

pub(super) fn errors(s: &WebhookConfigurations, hooks: Value) -> Vec<String> {
    texts(&s.validate(&canonical(s, config(hooks))))
}

#[test]
fn webhooks_get_the_v1_defaults() {
    let s = &WebhookConfigurations::MUTATING;
    let out = canonical(
        s,
        config(json!([hook(json!({
            "clientConfig": {"service": {"namespace": "ns", "name": "svc"}},
            "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"],
                "resources": ["pods"]}],
        }))])),
    );
    let h = &out["webhooks"][0];
    assert_eq!(h["failurePolicy"], "Fail");
    assert_eq!(h["matchPolicy"], "Equivalent");
    assert_eq!(h["namespaceSelector"], json!({}));
    assert_eq!(h["objectSelector"], json!({}));
    assert_eq!(h["timeoutSeconds"], 10);
    assert_eq!(h["reinvocationPolicy"], "Never");
    assert_eq!(h["rules"][0]["scope"], "*");
    assert_eq!(h["clientConfig"]["service"]["port"], 443);
    assert_eq!(h["sideEffects"], "None");
    // The defaulted service is valid.
    assert!(s.validate(&out).is_empty(), "{:?}", s.validate(&out));
    // Validating webhooks have no reinvocationPolicy; v1 defaults no sideEffects.
    let v = canonical(
        &WebhookConfigurations::VALIDATING,
        config(json!([{"name": "a.example.com"}])),
    );
    assert!(v["webhooks"][0].get("reinvocationPolicy").is_none());
    assert!(v["webhooks"][0].get("sideEffects").is_none());
}

#[test]
fn webhook_fields_match_upstream() {
    let s = &WebhookConfigurations::VALIDATING;
    assert_eq!(
        errors(s, json!([{"name": "a.example.com"}])),
        [
            "webhooks[0].sideEffects: Required value: must specify one of None, NoneOnDryRun",
            "webhooks[0].clientConfig: Required value: exactly one of url or service is required",
            "webhooks[0].admissionReviewVersions: Required value: must specify one of v1, v1beta1",
        ]
    );
    assert_eq!(
        errors(
            s,
            json!([hook(json!({"name": "short.name", "sideEffects": "Some",
                "failurePolicy": "Maybe", "matchPolicy": "Close", "timeoutSeconds": 31,
                "admissionReviewVersions": ["v2", "v2", "V3"]}))])
        ),
        [
            "webhooks[0].name: Invalid value: \"short.name\": should be a domain with at least three segments separated by dots",
            "webhooks[0].failurePolicy: Unsupported value: \"Maybe\": supported values: \"Fail\", \"Ignore\"",
            "webhooks[0].matchPolicy: Unsupported value: \"Close\": supported values: \"Equivalent\", \"Exact\"",
            "webhooks[0].sideEffects: Unsupported value: \"Some\": supported values: \"None\", \"NoneOnDryRun\"",
            "webhooks[0].timeoutSeconds: Invalid value: 31: the timeout value must be between 1 and 30 seconds",
            "webhooks[0].admissionReviewVersions[1]: Invalid value: \"v2\": duplicate version",
            "webhooks[0].admissionReviewVersions[2]: Invalid value: \"V3\": a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')",
            "webhooks[0].admissionReviewVersions: Invalid value: []string{\"v2\", \"v2\", \"V3\"}: must include at least one of v1, v1beta1",
        ]
    );
    // The first webhook has no name, so the second is the first named a.example.com.
    let errs = errors(
        &WebhookConfigurations::MUTATING,
        json!([
            hook(json!({"reinvocationPolicy": "Always", "name": ""})),
            hook(json!({"clientConfig": {"url": "http://u:p@example.com/x?a=b#f"}})),
            hook(json!({"clientConfig": {"url": "https://example.com",
                "service": {"namespace": "ns", "name": "s"}}})),
            hook(json!({"clientConfig": {"service": {"port": 0, "path": "x//"}}})),
        ]),
    );
    assert_eq!(
        errs,
        [
            "webhooks[0].name: Required value",
            "webhooks[0].reinvocationPolicy: Unsupported value: \"Always\": supported values: \"IfNeeded\", \"Never\"",
            "webhooks[1].clientConfig.url: Invalid value: \"http\": 'https' is the only allowed URL scheme; desired format: https://host[/path]",
            "webhooks[1].clientConfig.url: Invalid value: \"u:p\": user information is not permitted in the URL",
            "webhooks[1].clientConfig.url: Invalid value: \"f\": fragments are not permitted in the URL",
            "webhooks[1].clientConfig.url: Invalid value: \"a=b\": query parameters are not permitted in the URL",
            "webhooks[2].clientConfig: Required value: exactly one of url or service is required",
            "webhooks[2].name: Duplicate value: \"a.example.com\"",
            "webhooks[3].clientConfig.service.name: Required value",
            "webhooks[3].clientConfig.service.namespace: Required value",
            "webhooks[3].clientConfig.service.port: Invalid value: 0: port is not valid: must be between 1 and 65535, inclusive",
            "webhooks[3].clientConfig.service.path: Invalid value: \"x//\": must start with a '/'",
            "webhooks[3].clientConfig.service.path: Invalid value: \"x//\": segment[0] may not be empty",
            "webhooks[3].clientConfig.service.path: Invalid value: \"x//\": segment[1] may not be empty",
            "webhooks[3].name: Duplicate value: \"a.example.com\"",
        ]
    );
}

#[test]
fn rules_match_upstream() {
    let s = &WebhookConfigurations::VALIDATING;
    let rule = |r: Value| hook(json!({"rules": [r]}));
    let errs = errors(
        s,
        json!([
            rule(json!({})),
            rule(
                json!({"operations": ["*", "CREATE", "PATCH"], "apiGroups": ["*", "apps"],
                "apiVersions": ["*", "v1", ""], "resources": ["*/*", "pods"], "scope": "Global"})
            ),
            rule(
                json!({"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"],
                "resources": ["pods/*", "pods/status", "*/scale", "deployments/scale", "", "*", "x"]})
            ),
        ]),
    );
    assert_eq!(
        errs,
        [
            "webhooks[0].rules[0].operations: Required value",
            "webhooks[0].rules[0].apiGroups: Required value",
            "webhooks[0].rules[0].apiVersions: Required value",
            "webhooks[0].rules[0].resources: Required value",
            "webhooks[1].rules[0].operations: Invalid value: []admissionregistration.OperationType{\"*\", \"CREATE\", \"PATCH\"}: if '*' is present, must not specify other operations",
            "webhooks[1].rules[0].operations[2]: Unsupported value: \"PATCH\": supported values: \"*\", \"CONNECT\", \"CREATE\", \"DELETE\", \"UPDATE\"",
            "webhooks[1].rules[0].apiGroups: Invalid value: []string{\"*\", \"apps\"}: if '*' is present, must not specify other API groups",
            "webhooks[1].rules[0].apiVersions: Invalid value: []string{\"*\", \"v1\", \"\"}: if '*' is present, must not specify other API versions",
            "webhooks[1].rules[0].apiVersions[2]: Required value",
            "webhooks[1].rules[0].resources: Invalid value: []string{\"*/*\", \"pods\"}: if '*/*' is present, must not specify other resources",
            "webhooks[1].rules[0].scope: Unsupported value: \"Global\": supported values: \"*\", \"Cluster\", \"Namespaced\"",
            "webhooks[1].name: Duplicate value: \"a.example.com\"",
            "webhooks[2].rules[0].resources[1]: Invalid value: \"pods/status\": if 'pods/*' is present, must not specify pods/status",
            "webhooks[2].rules[0].resources[3]: Invalid value: \"deployments/scale\": if '*/scale' is present, must not specify deployments/scale",
            "webhooks[2].rules[0].resources[4]: Required value",
            "webhooks[2].rules[0].resources: Invalid value: []string{\"pods/*\", \"pods/status\", \"*/scale\", \"deployments/scale\", \"\", \"*\", \"x\"}: if '*' is present, must not specify other resources without subresources",
            "webhooks[2].name: Duplicate value: \"a.example.com\"",
        ]
    );
}

#[test]
fn selectors_and_match_conditions_match_upstream() {
    let s = &WebhookConfigurations::VALIDATING;
    let errs = errors(
        s,
        json!([hook(json!({
            "namespaceSelector": {"matchExpressions": [{"key": "k", "operator": "In"}]},
            "objectSelector": {"matchLabels": {"a": "b c"}},
            "matchConditions": [
                {"name": "ok", "expression": "true"},
                {"name": "ok", "expression": "object.foo ==="},
                {"name": "bad name!", "expression": "  "},
            ],
        }))]),
    );
    assert_eq!(errs[0], "webhooks[0].namespaceSelector.matchExpressions[0].values: Required value: must be specified when `operator` is 'In' or 'NotIn'");
    assert!(
        errs[1].starts_with("webhooks[0].objectSelector.matchLabels: Invalid value: \"b c\""),
        "{errs:?}"
    );
    assert!(
        errs[2].starts_with("webhooks[0].matchConditions[1].expression: Invalid value: \"object.foo ===\": compilation failed: ERROR: <input>:"),
        "{errs:?}"
    );
    assert_eq!(
        errs[3],
        "webhooks[0].matchConditions[1].name: Duplicate value: \"ok\""
    );
    assert_eq!(
        errs[4],
        "webhooks[0].matchConditions[2].expression: Required value"
    );
    assert!(
        errs[5].starts_with("webhooks[0].matchConditions[2].name: Invalid value: \"bad name!\": name part must consist of alphanumeric characters"),
        "{errs:?}"
    );
    assert_eq!(errs.len(), 6, "{errs:?}");
}

#[test]
fn updates_keep_what_the_stored_object_already_breaks() {
    let s = &WebhookConfigurations::VALIDATING;
    // Stored before the rules were strict: side effects, a review version of its own, a
    // duplicate name, an invalid label value and a match condition that no longer compiles.
    let old = canonical(
        s,
        config(json!([
            hook(
                json!({"sideEffects": "Unknown", "admissionReviewVersions": ["v0"],
                "objectSelector": {"matchExpressions": [{"key": "k", "operator": "In", "values": ["a b"]}]},
                "matchConditions": [{"name": "m", "expression": "a ==="}]})
            ),
            hook(json!({})),
        ])),
    );
    assert_eq!(s.validate(&old).len(), 5, "{:?}", texts(&s.validate(&old)));
    let mut new = old.clone();
    new["metadata"]["labels"] = json!({"x": "y"});
    assert!(
        s.validate_update(&new, &old).is_empty(),
        "{:?}",
        texts(&s.validate_update(&new, &old))
    );
    // A changed match condition is checked again.
    new["webhooks"][0]["matchConditions"][0]["expression"] = json!("b ===");
    let errs = texts(&s.validate_update(&new, &old));
    assert_eq!(errs.len(), 1, "{errs:?}");
    assert!(errs[0].starts_with("webhooks[0].matchConditions[0].expression: Invalid value"));
}

#[test]
fn side_effects_unset_and_empty_differ() {
    let s = &WebhookConfigurations::VALIDATING;
    let mut h = hook(json!({}));
    h.as_object_mut().unwrap().remove("sideEffects");
    let empty = hook(json!({"sideEffects": ""}));
    let body = serde_json::to_vec(&config(json!([h, empty]))).unwrap();
    let (obj, _) = s.canonicalize(Input::Json(&body)).unwrap();
    assert_eq!(
        texts(&s.validate(&obj))[..2],
        [
            "webhooks[0].sideEffects: Required value: must specify one of None, NoneOnDryRun",
            "webhooks[1].sideEffects: Unsupported value: \"\": supported values: \"None\", \"NoneOnDryRun\"",
        ]
    );
}

#[test]
fn webhook_tables_match_the_printers() {
    for s in [
        &WebhookConfigurations::MUTATING,
        &WebhookConfigurations::VALIDATING,
    ] {
        let cols: Vec<(String, String)> = s
            .columns()
            .iter()
            .map(|c| (c.name.to_string(), c.type_.to_string()))
            .collect();
        assert_eq!(
            cols,
            [
                ("Name", "string"),
                ("Webhooks", "integer"),
                ("Age", "string")
            ]
            .map(|(n, t)| (n.to_string(), t.to_string()))
        );
        let obj = json!({"metadata": {"name": "c"}, "webhooks": [{}, {}]});
        let cells = s.cells(&obj);
        assert_eq!(cells[..2], [json!("c"), json!(2)]);
        assert_eq!(cells[2], "<unknown>");
    }
}

#[test]
fn protobuf_webhooks_decode_as_kube_serializes_them() {
    let c = pb::MutatingWebhookConfiguration {
        metadata: Some(k8s_pb::apimachinery::pkg::apis::meta::v1::ObjectMeta {
            name: Some("c".into()),
            ..Default::default()
        }),
        webhooks: vec![pb::MutatingWebhook {
            name: Some("a.example.com".into()),
            client_config: Some(pb::WebhookClientConfig {
                service: Some(pb::ServiceReference {
                    namespace: Some("ns".into()),
                    name: Some("svc".into()),
                    port: Some(8443),
                    ..Default::default()
                }),
                ca_bundle: Some(b"ca".to_vec()),
                ..Default::default()
            }),
            rules: vec![pb::RuleWithOperations {
                operations: vec!["CREATE".into()],
                rule: Some(pb::Rule {
                    api_groups: vec!["".into()],
                    api_versions: vec!["v1".into()],
                    resources: vec!["pods".into()],
                    scope: Some("Namespaced".into()),
                }),
            }],
            side_effects: Some("None".into()),
            timeout_seconds: Some(5),
            admission_review_versions: vec!["v1".into()],
            reinvocation_policy: Some("IfNeeded".into()),
            match_conditions: vec![pb::MatchCondition {
                name: Some("m".into()),
                expression: Some("true".into()),
            }],
            ..Default::default()
        }],
    };
    let gvk = crate::api::GroupVersionKind::new(GROUP, "v1", "MutatingWebhookConfiguration");
    let decode = protobuf_decoder(&gvk).unwrap();
    let map = decode(&c.encode_to_vec()).unwrap();
    assert_eq!(
        Value::Object(map)["webhooks"][0],
        json!({"name": "a.example.com",
            "clientConfig": {"service": {"namespace": "ns", "name": "svc", "port": 8443},
                "caBundle": "Y2E="},
            "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"],
                "resources": ["pods"], "scope": "Namespaced"}],
            "sideEffects": "None", "timeoutSeconds": 5, "admissionReviewVersions": ["v1"],
            "reinvocationPolicy": "IfNeeded",
            "matchConditions": [{"name": "m", "expression": "true"}]})
    );
    assert!(decode(b"\xff\xff").is_err());
}

#[test]
fn discovery_serves_the_group_in_order() {
    let all = built_in();
    let ours: Vec<(String, String, String)> = all
        .iter()
        .filter_map(|b| match b {
            BuiltIn::Stored(s, root) if s.info().group == GROUP => Some((
                s.info().version.to_string(),
                s.info().resource.to_string(),
                root.to_string(),
            )),
            _ => None,
        })
        .collect();
    let want: Vec<(String, String, String)> = RESOURCES
        .iter()
        .map(|(v, r)| (v.to_string(), r.to_string(), r.to_string()))
        .collect();
    assert_eq!(ours, want);
    for b in &all {
        let i = b.info();
        if i.group != GROUP {
            continue;
        }
        assert!(!i.namespaced, "{}", i.resource);
        assert_eq!(i.categories.iter().collect::<Vec<_>>(), ["api-extensions"]);
        let status = i.subresources.iter().map(|(s, _)| *s).collect::<Vec<_>>();
        let want: &[&str] = if i.resource == "validatingadmissionpolicies" {
            &["status"]
        } else {
            &[]
        };
        assert_eq!(status, want, "{}", i.resource);
        let gvk = crate::api::GroupVersionKind::new(GROUP, &i.version, &i.kind);
        assert!(protobuf_decoder(&gvk).is_some(), "{}", i.kind);
    }
}
