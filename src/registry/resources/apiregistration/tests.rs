//! Tests of APIServices: upstream's validation messages and field paths
//! (kube-aggregator's pkg/apis/apiregistration/validation), the v1 default port, the two
//! strategies, the table, the protobuf decoder, discovery, and writes through the generic store.

use super::apiservices::{from_protobuf, ApiServices};
use super::GROUP;
use crate::registry::error::{Error, FieldError};
use crate::registry::resources::{built_in, protobuf_decoder};
use crate::registry::strategy::{Input, Strategy};
use crate::registry::tests::{create, ctx, registry, store, timed};
use k8s_pb::kube_aggregator::pkg::apis::apiregistration::v1 as pb;
use prost::Message;
use serde_json::{json, Value};

fn texts(errs: &[FieldError]) -> Vec<String> {
    errs.iter().map(ToString::to_string).collect()
}

fn canonical(obj: Value) -> Value {
    ApiServices.canonicalize(Input::Value(obj)).unwrap().0
}

/// A valid remote APIService, with `spec` merged over its spec.
fn remote(spec: Value) -> Value {
    let mut obj = json!({
        "apiVersion": "apiregistration.k8s.io/v1",
        "kind": "APIService",
        "metadata": {"name": "v1alpha1.example.com"},
        "spec": {
            "group": "example.com",
            "version": "v1alpha1",
            "groupPriorityMinimum": 1000,
            "versionPriority": 15,
            "service": {"namespace": "ns", "name": "api"},
            "insecureSkipTLSVerify": true,
        }
    });
    let merged = obj["spec"].as_object_mut().unwrap();
    for (k, v) in spec.as_object().unwrap() {
        if v.is_null() {
            merged.remove(k);
        } else {
            merged.insert(k.clone(), v.clone());
        }
    }
    obj
}

fn errors(obj: Value) -> Vec<String> {
    texts(&ApiServices.validate(&canonical(obj)))
}

#[test]
fn a_valid_apiservice_gets_port_443() {
    let obj = canonical(remote(json!({})));
    assert_eq!(obj["spec"]["service"]["port"], 443);
    assert_eq!(texts(&ApiServices.validate(&obj)), Vec::<String>::new());
    let local = canonical(remote(
        json!({"service": null, "insecureSkipTLSVerify": null}),
    ));
    assert!(local["spec"].get("service").is_none());
    assert_eq!(texts(&ApiServices.validate(&local)), Vec::<String>::new());
}

#[test]
fn the_name_must_be_version_dot_group() {
    let mut obj = remote(json!({}));
    obj["metadata"]["name"] = json!("foo.example.com");
    assert_eq!(
        errors(obj.clone()),
        ["metadata.name: Invalid value: \"foo.example.com\": must be `spec.version+\".\"+spec.group`: \"v1alpha1.example.com\""]
    );
    obj["metadata"]["name"] = json!("v1/x");
    assert_eq!(
        errors(obj),
        ["metadata.name: Invalid value: \"v1/x\": may not contain '/'"]
    );
}

#[test]
fn group_and_version_rules() {
    let mut obj = remote(json!({"group": "", "version": "v2"}));
    obj["metadata"]["name"] = json!("v2.");
    assert_eq!(
        errors(obj),
        ["spec.group: Required value: only v1 may have an empty group and it better be legacy kube"]
    );
    let mut legacy = remote(json!({"group": "", "version": "v1"}));
    legacy["metadata"]["name"] = json!("v1.");
    assert_eq!(errors(legacy), Vec::<String>::new());
    let mut obj = remote(json!({"group": "Example.com", "version": "V1"}));
    obj["metadata"]["name"] = json!("V1.Example.com");
    let errs = errors(obj);
    assert!(
        errs.iter().any(|e| e.starts_with(
            "spec.group: Invalid value: \"Example.com\": a lowercase RFC 1123 subdomain"
        )),
        "{errs:?}"
    );
    assert!(
        errs.iter()
            .any(|e| e.starts_with("spec.version: Invalid value: \"V1\": a DNS-1035 label")),
        "{errs:?}"
    );
}

#[test]
fn priorities_are_bounded() {
    assert_eq!(
        errors(remote(
            json!({"groupPriorityMinimum": 0, "versionPriority": 1001})
        )),
        [
            "spec.groupPriorityMinimum: Invalid value: 0: must be positive and less than 20000",
            "spec.versionPriority: Invalid value: 1001: must be positive and less than 1000",
        ]
    );
    assert_eq!(
        errors(remote(json!({"groupPriorityMinimum": 20001}))),
        ["spec.groupPriorityMinimum: Invalid value: 20001: must be positive and less than 20000"]
    );
    // Absent priorities are zero, as Go's non-pointer ints.
    assert_eq!(
        errors(remote(
            json!({"groupPriorityMinimum": null, "versionPriority": null})
        ))
        .len(),
        2
    );
}

#[test]
fn local_apiservices_have_no_tls_settings() {
    assert_eq!(
        errors(remote(json!({"service": null, "caBundle": "YWJj"}))),
        [
            "spec.caBundle: Invalid value: \"3 bytes\": local APIServices may not have a caBundle",
            "spec.insecureSkipTLSVerify: Invalid value: true: local APIServices may not have insecureSkipTLSVerify",
        ]
    );
}

#[test]
fn remote_apiservices_name_a_service() {
    assert_eq!(
        errors(remote(json!({"service": {"port": 0}}))),
        [
            "spec.service.namespace: Required value",
            "spec.service.name: Required value",
            "spec.service.port: Invalid value: 0: port is not valid: must be between 1 and 65535, inclusive",
        ]
    );
    assert_eq!(
        errors(remote(json!({"caBundle": "YWJj"}))),
        ["spec.insecureSkipTLSVerify: Invalid value: true: may not be true if caBundle is present"]
    );
    assert_eq!(
        errors(remote(
            json!({"caBundle": "YWJj", "insecureSkipTLSVerify": false})
        )),
        Vec::<String>::new()
    );
}

#[test]
fn create_sets_the_status_and_local_ones_are_available() {
    let mut obj = canonical(remote(json!({})));
    obj["status"] = json!({"conditions": [{"type": "Available", "status": "True"}]});
    ApiServices.prepare_for_create(&mut obj);
    assert_eq!(obj["status"], json!({}));
    let mut local = canonical(remote(
        json!({"service": null, "insecureSkipTLSVerify": null}),
    ));
    ApiServices.prepare_for_create(&mut local);
    let c = &local["status"]["conditions"][0];
    assert_eq!(
        (&c["type"], &c["status"], &c["reason"], &c["message"]),
        (
            &json!("Available"),
            &json!("True"),
            &json!("Local"),
            &json!("Local APIServices are always available")
        )
    );
    assert!(c["lastTransitionTime"].is_string());
}

#[test]
fn status_conditions_must_be_true_false_or_unknown() {
    let old = canonical(remote(json!({})));
    let mut new = old.clone();
    new["status"] = json!({"conditions": [{"type": "Available", "status": "Maybe"}]});
    assert_eq!(
        texts(&ApiServices.validate_subresource_update("status", &new, &old)),
        ["status.conditions[0].status: Unsupported value: \"Maybe\": supported values: \"True\", \"False\", \"Unknown\""]
    );
}

#[test]
fn the_table_shows_the_service_and_availability() {
    let cols: Vec<String> = ApiServices
        .columns()
        .iter()
        .map(|c| c.name.to_string())
        .collect();
    assert_eq!(cols, ["Name", "Service", "Available", "Age"]);
    let mut obj = canonical(remote(json!({})));
    let cells = ApiServices.cells(&obj);
    assert_eq!(
        (&cells[0], &cells[1], &cells[2]),
        (
            &json!("v1alpha1.example.com"),
            &json!("ns/api"),
            &json!("Unknown")
        )
    );
    obj["status"] = json!({"conditions": [{"type": "Available", "status": "False",
        "reason": "MissingEndpoints"}]});
    assert_eq!(ApiServices.cells(&obj)[2], "False (MissingEndpoints)");
    obj["status"]["conditions"][0]["reason"] = json!("");
    assert_eq!(ApiServices.cells(&obj)[2], "False");
    let mut local = canonical(remote(
        json!({"service": null, "insecureSkipTLSVerify": null}),
    ));
    ApiServices.prepare_for_create(&mut local);
    assert_eq!(
        ApiServices.cells(&local)[1..3],
        [json!("Local"), json!("True")]
    );
}

#[test]
fn protobuf_decodes_as_json_would() {
    let a = pb::APIService {
        metadata: Some(k8s_pb::apimachinery::pkg::apis::meta::v1::ObjectMeta {
            name: Some("v1beta1.metrics.k8s.io".into()),
            ..Default::default()
        }),
        spec: Some(pb::APIServiceSpec {
            service: Some(pb::ServiceReference {
                namespace: Some("kube-system".into()),
                name: Some("metrics-server".into()),
                port: Some(443),
            }),
            group: Some("metrics.k8s.io".into()),
            version: Some("v1beta1".into()),
            insecure_skip_tls_verify: Some(true),
            ca_bundle: None,
            group_priority_minimum: Some(100),
            version_priority: Some(100),
        }),
        status: None,
    };
    let decoded = Value::Object(from_protobuf(&a.encode_to_vec()).unwrap());
    assert_eq!(
        decoded,
        json!({"metadata": {"name": "v1beta1.metrics.k8s.io"}, "spec": {
            "service": {"namespace": "kube-system", "name": "metrics-server", "port": 443},
            "group": "metrics.k8s.io", "version": "v1beta1", "insecureSkipTLSVerify": true,
            "groupPriorityMinimum": 100, "versionPriority": 100}})
    );
    assert!(from_protobuf(b"\xff\xff").is_err());
}

#[test]
fn discovery_lists_the_group_first_after_core() {
    let all = built_in();
    let first_group = all
        .iter()
        .map(|b| b.info())
        .find(|i| !i.group.is_empty())
        .unwrap();
    assert_eq!(
        (&*first_group.group, &*first_group.resource),
        (GROUP, "apiservices")
    );
    assert!(!first_group.namespaced);
    assert_eq!(
        first_group.categories.iter().collect::<Vec<_>>(),
        ["api-extensions"]
    );
    assert!(first_group.short_names.is_empty());
    assert_eq!(first_group.subresources.len(), 1);
    assert_eq!(first_group.subresources[0].0, "status");
    let gvk = crate::api::GroupVersionKind::new(GROUP, "v1", "APIService");
    assert!(protobuf_decoder(&gvk).is_some());
}

#[tokio::test]
async fn store_keeps_status_and_spec_apart() {
    let (_d, r) = registry().await;
    let s = store(&r, GROUP, "v1", "apiservices");
    let created = timed(create(s, &ctx(""), remote(json!({})))).await.unwrap();
    assert_eq!(created["status"], json!({}));
    assert_eq!(created["spec"]["service"]["port"], 443);
    // The status subresource writes the status and nothing of the spec or labels.
    let mut with_status = created.clone();
    with_status["status"] = json!({"conditions": [{"type": "Available", "status": "False",
        "reason": "FailedDiscoveryCheck", "lastTransitionTime": "2026-01-01T00:00:00Z"}]});
    with_status["spec"]["versionPriority"] = json!(99);
    with_status["metadata"]["labels"] = json!({"a": "b"});
    let t = move |_: Option<&Value>| Ok(with_status.clone());
    let updated = timed(s.update(&ctx(""), "v1alpha1.example.com", "status", false, &t))
        .await
        .unwrap();
    let stored = updated.object.obj.clone();
    assert_eq!(stored["status"]["conditions"][0]["status"], "False");
    assert_eq!(stored["spec"]["versionPriority"], 15);
    assert!(stored["metadata"].get("labels").is_none());
    // The main resource keeps the status it has.
    let mut cleared = stored.clone();
    cleared["status"] = json!({});
    cleared["spec"]["versionPriority"] = json!(20);
    let t = move |_: Option<&Value>| Ok(cleared.clone());
    let updated = timed(s.update(&ctx(""), "v1alpha1.example.com", "", false, &t))
        .await
        .unwrap();
    assert_eq!(
        updated.object.obj["status"]["conditions"][0]["status"],
        "False"
    );
    assert_eq!(updated.object.obj["spec"]["versionPriority"], 20);
    // A bad name is refused with upstream's message.
    let mut bad = remote(json!({}));
    bad["metadata"]["name"] = json!("example");
    let Err(Error::Invalid { errors, .. }) = timed(create(s, &ctx(""), bad)).await else {
        panic!("created")
    };
    assert_eq!(
        texts(&errors),
        ["metadata.name: Invalid value: \"example\": must be `spec.version+\".\"+spec.group`: \"v1alpha1.example.com\""]
    );
}
