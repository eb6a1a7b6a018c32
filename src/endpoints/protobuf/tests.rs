//! Protobuf bodies built with k8s-pb (as client-go would send them) decode to the JSON kube
//! produces; each result also round-trips through the k8s-openapi type of its kind, which
//! catches misspelt field names (they would be dropped).

use super::*;
use k8s_pb::api::{authentication, authorization, coordination, core, events};
use k8s_pb::apimachinery::pkg::apis::meta::v1 as meta;
use k8s_pb::apimachinery::pkg::runtime::{TypeMeta, Unknown};
use serde_json::json;

fn envelope(api_version: &str, kind: &str, raw: Vec<u8>) -> Vec<u8> {
    let unknown = Unknown {
        type_meta: Some(TypeMeta {
            api_version: Some(api_version.into()),
            kind: Some(kind.into()),
        }),
        raw: Some(raw),
        content_encoding: Some(String::new()),
        content_type: Some(String::new()),
    };
    let mut out = MAGIC.to_vec();
    out.extend(unknown.encode_to_vec());
    out
}

fn om(name: &str, namespace: &str) -> Option<meta::ObjectMeta> {
    Some(meta::ObjectMeta {
        name: Some(name.into()),
        namespace: Some(namespace.into()),
        generate_name: Some(String::new()),
        resource_version: Some(String::new()),
        generation: Some(0),
        creation_timestamp: Some(meta::Time::default()),
        labels: [("app".to_string(), "x".to_string())].into(),
        ..Default::default()
    })
}

fn roundtrips<K: serde::de::DeserializeOwned + serde::Serialize>(v: &Value) {
    let typed: K = serde_json::from_value(v.clone()).expect("decodes as the k8s-openapi type");
    let back = serde_json::to_value(typed).unwrap();
    assert_eq!(&back, v, "k8s-openapi dropped or changed a field");
}

fn gvk(group: &str, version: &str, kind: &str) -> GroupVersionKind {
    GroupVersionKind::new(group, version, kind)
}

#[test]
fn configmap_and_secret() {
    let cm = core::v1::ConfigMap {
        metadata: om("cm", "default"),
        data: [("a".to_string(), "1".to_string())].into(),
        binary_data: [("b".to_string(), vec![0u8, 255])].into(),
        immutable: None,
    };
    let got = decode(
        &envelope("v1", "ConfigMap", cm.encode_to_vec()),
        &gvk("", "v1", "ConfigMap"),
    )
    .unwrap();
    let want = json!({
        "kind": "ConfigMap", "apiVersion": "v1",
        "metadata": {"name": "cm", "namespace": "default", "labels": {"app": "x"}},
        "data": {"a": "1"}, "binaryData": {"b": "AP8="}
    });
    assert_eq!(got, want);
    roundtrips::<k8s_openapi::api::core::v1::ConfigMap>(&got);

    let secret = core::v1::Secret {
        metadata: om("s", "ns1"),
        data: [("k".to_string(), b"hello".to_vec())].into(),
        r#type: Some("Opaque".into()),
        immutable: Some(false),
        ..Default::default()
    };
    let got = decode(
        &envelope("v1", "Secret", secret.encode_to_vec()),
        &gvk("", "v1", "Secret"),
    )
    .unwrap();
    assert_eq!(got["data"], json!({"k": "aGVsbG8="}));
    assert_eq!(got["immutable"], json!(false), "*bool false is kept");
    assert_eq!(got["type"], json!("Opaque"));
    roundtrips::<k8s_openapi::api::core::v1::Secret>(&got);
}

#[test]
fn leases_times_and_pointers() {
    let lease = coordination::v1::Lease {
        metadata: om("l", "kube-system"),
        spec: Some(coordination::v1::LeaseSpec {
            holder_identity: Some("me".into()),
            lease_duration_seconds: Some(15),
            renew_time: Some(meta::MicroTime {
                seconds: Some(1_700_000_000),
                nanos: Some(123_456_000),
            }),
            lease_transitions: Some(0),
            ..Default::default()
        }),
    };
    let got = decode(
        &envelope("coordination.k8s.io/v1", "Lease", lease.encode_to_vec()),
        &gvk("coordination.k8s.io", "v1", "Lease"),
    )
    .unwrap();
    assert_eq!(
        got["spec"],
        json!({"holderIdentity": "me", "leaseDurationSeconds": 15,
               "renewTime": "2023-11-14T22:13:20.123456Z", "leaseTransitions": 0})
    );
    assert_eq!(got["apiVersion"], "coordination.k8s.io/v1");
    roundtrips::<k8s_openapi::api::coordination::v1::Lease>(&got);

    let cand = coordination::v1beta1::LeaseCandidate {
        metadata: om("c", "kube-system"),
        spec: Some(coordination::v1beta1::LeaseCandidateSpec {
            lease_name: Some("l".into()),
            binary_version: Some("1.37.0".into()),
            strategy: Some("OldestEmulationVersion".into()),
            ping_time: Some(meta::MicroTime {
                seconds: Some(0),
                nanos: Some(0),
            }),
            ..Default::default()
        }),
    };
    let got = decode(
        &envelope(
            "coordination.k8s.io/v1beta1",
            "LeaseCandidate",
            cand.encode_to_vec(),
        ),
        &gvk("coordination.k8s.io", "v1beta1", "LeaseCandidate"),
    )
    .unwrap();
    assert_eq!(got["spec"]["pingTime"], "1970-01-01T00:00:00.000000Z");
    assert_eq!(got["spec"]["leaseName"], "l");
    roundtrips::<k8s_openapi::api::coordination::v1beta1::LeaseCandidate>(&got);
}

#[test]
fn reviews_as_kubectl_sends_them() {
    // kubectl auth whoami: an empty SelfSubjectReview.
    let ssr = authentication::v1::SelfSubjectReview {
        metadata: Some(Default::default()),
        status: None,
    };
    let got = decode(
        &envelope(
            "authentication.k8s.io/v1",
            "SelfSubjectReview",
            ssr.encode_to_vec(),
        ),
        &gvk("authentication.k8s.io", "v1", "SelfSubjectReview"),
    )
    .unwrap();
    assert_eq!(
        got,
        json!({"kind": "SelfSubjectReview", "apiVersion": "authentication.k8s.io/v1", "metadata": {}})
    );
    // kubectl auth can-i create configmaps -n ns
    let ssar = authorization::v1::SelfSubjectAccessReview {
        metadata: Some(Default::default()),
        spec: Some(authorization::v1::SelfSubjectAccessReviewSpec {
            resource_attributes: Some(authorization::v1::ResourceAttributes {
                namespace: Some("ns".into()),
                verb: Some("create".into()),
                group: Some(String::new()),
                resource: Some("configmaps".into()),
                ..Default::default()
            }),
            non_resource_attributes: None,
        }),
        status: Some(Default::default()),
    };
    let got = decode(
        &envelope(
            "authorization.k8s.io/v1",
            "SelfSubjectAccessReview",
            ssar.encode_to_vec(),
        ),
        &gvk("authorization.k8s.io", "v1", "SelfSubjectAccessReview"),
    )
    .unwrap();
    assert_eq!(
        got["spec"],
        json!({"resourceAttributes": {"namespace": "ns", "verb": "create", "resource": "configmaps"}})
    );
    assert_eq!(got["status"], json!({"allowed": false}));
    roundtrips::<k8s_openapi::api::authorization::v1::SelfSubjectAccessReview>(&got);
}

#[test]
fn events_namespaces_serviceaccounts() {
    let ev = events::v1::Event {
        metadata: om("e", "default"),
        event_time: Some(meta::MicroTime {
            seconds: Some(1_700_000_000),
            nanos: Some(0),
        }),
        reporting_controller: Some("ctl".into()),
        reporting_instance: Some("i".into()),
        action: Some("Act".into()),
        reason: Some("Why".into()),
        regarding: Some(core::v1::ObjectReference {
            kind: Some("Lease".into()),
            name: Some("l".into()),
            ..Default::default()
        }),
        note: Some("n".into()),
        r#type: Some("Normal".into()),
        ..Default::default()
    };
    let got = decode(
        &envelope("events.k8s.io/v1", "Event", ev.encode_to_vec()),
        &gvk("events.k8s.io", "v1", "Event"),
    )
    .unwrap();
    assert_eq!(got["regarding"], json!({"kind": "Lease", "name": "l"}));
    assert_eq!(got["eventTime"], "2023-11-14T22:13:20.000000Z");
    roundtrips::<k8s_openapi::api::events::v1::Event>(&got);

    let ev = core::v1::Event {
        metadata: om("e", "default"),
        involved_object: Some(core::v1::ObjectReference {
            kind: Some("Pod".into()),
            ..Default::default()
        }),
        count: Some(3),
        first_timestamp: Some(meta::Time {
            seconds: Some(1_700_000_000),
            nanos: None,
        }),
        source: Some(core::v1::EventSource {
            component: Some("c".into()),
            host: None,
        }),
        ..Default::default()
    };
    let got = decode(
        &envelope("v1", "Event", ev.encode_to_vec()),
        &gvk("", "v1", "Event"),
    )
    .unwrap();
    assert_eq!(got["firstTimestamp"], "2023-11-14T22:13:20Z");
    assert_eq!(got["count"], 3);
    roundtrips::<k8s_openapi::api::core::v1::Event>(&got);

    let ns = core::v1::Namespace {
        metadata: om("ns1", ""),
        spec: Some(core::v1::NamespaceSpec {
            finalizers: vec!["kubernetes".into()],
        }),
        status: Some(core::v1::NamespaceStatus {
            phase: Some("Active".into()),
            conditions: vec![],
        }),
    };
    let got = decode(
        &envelope("v1", "Namespace", ns.encode_to_vec()),
        &gvk("", "v1", "Namespace"),
    )
    .unwrap();
    assert_eq!(got["spec"], json!({"finalizers": ["kubernetes"]}));
    assert!(
        got["metadata"].get("namespace").is_none(),
        "empty namespace is omitted"
    );
    roundtrips::<k8s_openapi::api::core::v1::Namespace>(&got);

    let sa = core::v1::ServiceAccount {
        metadata: om("sa", "default"),
        secrets: vec![core::v1::ObjectReference {
            name: Some("tok".into()),
            ..Default::default()
        }],
        image_pull_secrets: vec![core::v1::LocalObjectReference {
            name: Some("reg".into()),
        }],
        automount_service_account_token: Some(false),
    };
    let got = decode(
        &envelope("v1", "ServiceAccount", sa.encode_to_vec()),
        &gvk("", "v1", "ServiceAccount"),
    )
    .unwrap();
    assert_eq!(got["imagePullSecrets"], json!([{"name": "reg"}]));
    roundtrips::<k8s_openapi::api::core::v1::ServiceAccount>(&got);
}

#[test]
fn delete_options_and_hint() {
    let opts = meta::DeleteOptions {
        propagation_policy: Some("Foreground".into()),
        grace_period_seconds: Some(0),
        preconditions: Some(meta::Preconditions {
            uid: Some("u".into()),
            resource_version: None,
        }),
        ..Default::default()
    };
    // An envelope without typeMeta falls back to the hint.
    let unknown = Unknown {
        raw: Some(opts.encode_to_vec()),
        ..Default::default()
    };
    let mut body = MAGIC.to_vec();
    body.extend(unknown.encode_to_vec());
    let got = decode(&body, &gvk("meta.k8s.io", "v1", "DeleteOptions")).unwrap();
    assert_eq!(
        got,
        json!({"kind": "DeleteOptions", "apiVersion": "meta.k8s.io/v1", "gracePeriodSeconds": 0,
               "preconditions": {"uid": "u"}, "propagationPolicy": "Foreground"})
    );
}

#[test]
fn malformed_bodies() {
    let hint = gvk("", "v1", "ConfigMap");
    let cm = core::v1::ConfigMap {
        metadata: om("cm", "default"),
        ..Default::default()
    }
    .encode_to_vec();
    let mut truncated = envelope("v1", "ConfigMap", cm.clone());
    truncated.truncate(truncated.len() - 3);
    let mut bad_raw = envelope("v1", "ConfigMap", vec![0x0a, 0xff, 0xff]);
    bad_raw.truncate(bad_raw.len());
    type Check = fn(&ProtobufError) -> bool;
    let cases: Vec<(&str, Vec<u8>, Check)> = vec![
        ("json body", br#"{"kind":"ConfigMap"}"#.to_vec(), |e| {
            *e == ProtobufError::MissingMagic
        }),
        ("empty body", Vec::new(), |e| {
            *e == ProtobufError::MissingMagic
        }),
        ("truncated envelope", truncated, |e| {
            matches!(e, ProtobufError::Malformed { .. })
        }),
        (
            "garbage raw",
            bad_raw,
            |e| matches!(e, ProtobufError::Malformed { what, .. } if what == "ConfigMap"),
        ),
        (
            "unserved kind",
            envelope("apps/v1", "Deployment", cm),
            |e| matches!(e, ProtobufError::UnknownKind { kind, .. } if kind == "Deployment"),
        ),
    ];
    for (name, body, check) in cases {
        let err = decode(&body, &hint).expect_err(name);
        assert!(check(&err), "{name}: {err}");
    }
    assert_eq!(
        ProtobufError::MissingMagic.to_string(),
        "provided data does not appear to be a protobuf message, expected prefix [107 56 115 0]"
    );
}
