//! Writes the seed corpora in fuzz/corpus/<target>/ (committed). Small, realistic inputs: what
//! kubectl and client-go send, with the selector bytes each target expects in front (see
//! kapi::fuzzing). Rerun after changing a target's input layout.

use k8s_pb::api::{coordination, core};
use k8s_pb::apimachinery::pkg::apis::meta::v1 as meta;
use k8s_pb::apimachinery::pkg::runtime::{TypeMeta, Unknown};
use prost::Message;
use std::path::{Path, PathBuf};

fn main() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("corpus");
    let mut seeds = Seeds::default();
    selectors(&mut seeds);
    query(&mut seeds);
    bodies(&mut seeds);
    protobuf(&mut seeds);
    patches(&mut seeds);
    applies(&mut seeds);
    for (target, name, bytes) in seeds.0 {
        let dir: PathBuf = root.join(target);
        std::fs::create_dir_all(&dir).expect("corpus dir");
        std::fs::write(dir.join(name), bytes).expect("seed written");
    }
}

#[derive(Default)]
struct Seeds(Vec<(&'static str, String, Vec<u8>)>);

impl Seeds {
    fn add(&mut self, target: &'static str, name: &str, bytes: impl Into<Vec<u8>>) {
        self.0.push((target, name.to_string(), bytes.into()));
    }
    /// A seed behind its selector bytes.
    fn with(&mut self, target: &'static str, name: &str, head: &[u8], body: &[u8]) {
        let mut bytes = head.to_vec();
        bytes.extend_from_slice(body);
        self.add(target, name, bytes);
    }
}

// Resource indexes of kapi::fuzzing's table.
const CONFIGMAPS: u8 = 0;
const SECRETS: u8 = 1;
const LEASES: u8 = 2;
const LEASECANDIDATES: u8 = 3;
const EVENTS: u8 = 4;
const EVENTS_V1: u8 = 5;
const SERVICEACCOUNTS: u8 = 6;
const NAMESPACES: u8 = 7;
const SSAR: u8 = 8;
const SSRR: u8 = 9;
const SSR: u8 = 10;
const RESOURCES: u8 = 11;

fn selectors(s: &mut Seeds) {
    for (i, sel) in [
        "app in (a,b),!x",
        "app=a,tier!=web",
        "environment notin (prod, qa), tier",
        "app.kubernetes.io/name==x,n>5,n<20",
        "metadata.name=cm,metadata.namespace!=kube-system",
        "involvedObject.kind=Pod,type==Warning",
        r"metadata.name=a\,b\=c",
        "!a,b,c in (),d notin (x)",
        "",
    ]
    .iter()
    .enumerate()
    {
        s.add("selectors", &format!("seed-{i}"), *sel);
    }
}

fn query(s: &mut Seeds) {
    for (i, q) in [
        "resourceVersion=0",
        "resourceVersion=1&resourceVersionMatch=NotOlderThan",
        "resourceVersion=5&resourceVersionMatch=Exact&limit=1",
        "limit=2&continue=eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6Miwic3RhcnQiOiJjbVx1MDAwMCJ9",
        "sendInitialEvents=true&allowWatchBookmarks=true&resourceVersionMatch=NotOlderThan&resourceVersion=",
        "sendInitialEvents=false&allowWatchBookmarks=1&resourceVersion=0&timeoutSeconds=1",
        "labelSelector=app%20in%20(a%2Cb)%2C!x&fieldSelector=metadata.name%3Dcm",
        "fieldSelector=involvedObject.kind%3DPod%2Ctype%3DNormal&limit=500",
        "watch=1&resourceVersion=3&allowWatchBookmarks=true&timeoutSeconds=30&includeObject=Metadata",
        "dryRun=All&fieldValidation=Strict&fieldManager=kubectl-client-side-apply",
        "resourceVersion=abc&resourceVersionMatch=Newest&limit=-1&sendInitialEvents=yes",
        // Crashed once: the watch deadline overflowed the clock.
        "watch=1&timeoutSeconds=9223372036854775807",
    ]
    .iter()
    .enumerate()
    {
        s.add("query", &format!("seed-{i}"), *q);
    }
}

/// JSON seeds of every kind (the ones kapi::fuzzing stores, plus the reviews).
fn objects() -> Vec<(u8, &'static str, &'static str)> {
    vec![
        (
            CONFIGMAPS,
            "configmap",
            r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm","namespace":"default","labels":{"app":"a"},"annotations":{"note":"x"}},"data":{"k":"v"},"binaryData":{"b":"AAE="},"immutable":false}"#,
        ),
        (
            SECRETS,
            "secret",
            r#"{"apiVersion":"v1","kind":"Secret","metadata":{"name":"secret"},"type":"kubernetes.io/tls","data":{"tls.crt":"Y2VydA==","tls.key":"a2V5"}}"#,
        ),
        (
            LEASES,
            "lease",
            r#"{"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":{"name":"lease","resourceVersion":"2"},"spec":{"holderIdentity":"kapi-1","leaseDurationSeconds":15,"acquireTime":"2024-01-01T00:00:00.000000Z","renewTime":"2024-01-01T00:00:10.123456Z","leaseTransitions":2,"strategy":"OldestEmulationVersion","preferredHolder":"b"}}"#,
        ),
        (
            LEASECANDIDATES,
            "leasecandidate",
            r#"{"apiVersion":"coordination.k8s.io/v1beta1","kind":"LeaseCandidate","metadata":{"name":"lc"},"spec":{"leaseName":"lease","binaryVersion":"1.37.0","emulationVersion":"1.36.0","strategy":"OldestEmulationVersion","pingTime":"2024-01-01T00:00:00.000000Z","renewTime":"2024-01-01T00:00:10.000000Z"}}"#,
        ),
        (
            EVENTS,
            "event",
            r#"{"apiVersion":"v1","kind":"Event","metadata":{"name":"ev","namespace":"default"},"involvedObject":{"apiVersion":"v1","kind":"Pod","namespace":"default","name":"p","uid":"1"},"reason":"Pulled","message":"pulled","type":"Normal","source":{"component":"kubelet","host":"n1"},"count":3,"firstTimestamp":"2024-01-01T00:00:00Z","lastTimestamp":"2024-01-01T00:01:00Z","reportingComponent":"kubelet","reportingInstance":"n1"}"#,
        ),
        (
            EVENTS_V1,
            "event-v1",
            r#"{"apiVersion":"events.k8s.io/v1","kind":"Event","metadata":{"name":"ev2"},"eventTime":"2024-01-01T00:00:00.000000Z","series":{"count":2,"lastObservedTime":"2024-01-01T00:00:05.000000Z"},"reportingController":"kapi.io/c","reportingInstance":"i","action":"Sync","reason":"Done","regarding":{"kind":"Pod","namespace":"default","name":"p"},"note":"n","type":"Warning"}"#,
        ),
        (
            SERVICEACCOUNTS,
            "serviceaccount",
            r#"{"apiVersion":"v1","kind":"ServiceAccount","metadata":{"name":"sa","labels":{"a":"b"}},"secrets":[{"name":"tok"}],"imagePullSecrets":[{"name":"pull"}],"automountServiceAccountToken":true}"#,
        ),
        (
            NAMESPACES,
            "namespace",
            r#"{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"fuzz","labels":{"team":"x"}},"spec":{"finalizers":["kubernetes"]}}"#,
        ),
        (
            SSAR,
            "ssar",
            r#"{"apiVersion":"authorization.k8s.io/v1","kind":"SelfSubjectAccessReview","spec":{"resourceAttributes":{"namespace":"default","verb":"get","group":"","resource":"configmaps","name":"cm"}}}"#,
        ),
        (
            SSRR,
            "ssrr",
            r#"{"apiVersion":"authorization.k8s.io/v1","kind":"SelfSubjectRulesReview","spec":{"namespace":"default"}}"#,
        ),
        (
            SSR,
            "ssr",
            r#"{"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview","metadata":{"creationTimestamp":null},"status":{"userInfo":{}}}"#,
        ),
    ]
}

/// JSON → YAML the simple way: JSON is YAML, but block style is what people send.
fn yaml(json: &str) -> String {
    fn emit(v: &serde_json::Value, indent: usize, out: &mut String) {
        let pad = " ".repeat(indent);
        match v {
            serde_json::Value::Object(m) => {
                for (k, v) in m {
                    match v {
                        serde_json::Value::Object(c) if !c.is_empty() => {
                            out.push_str(&format!("{pad}{k}:\n"));
                            emit(v, indent + 2, out);
                        }
                        serde_json::Value::Array(a) if !a.is_empty() => {
                            out.push_str(&format!("{pad}{k}:\n"));
                            emit(v, indent, out);
                        }
                        _ => out.push_str(&format!("{pad}{k}: {v}\n")),
                    }
                }
            }
            serde_json::Value::Array(a) => {
                for item in a {
                    out.push_str(&format!("{pad}- {item}\n"));
                }
            }
            other => out.push_str(&format!("{pad}{other}\n")),
        }
    }
    let v: serde_json::Value = serde_json::from_str(json).expect("seed JSON");
    let mut out = String::new();
    emit(&v, 0, &mut out);
    out
}

fn bodies(s: &mut Seeds) {
    // Content types: 0 JSON, 1 YAML, 2 protobuf, 3 none; byte 1 = resource (+11: PUT).
    for (r, name, json) in objects() {
        // Creates under a new name (the stored object has the seed's name), updates of it.
        let created = renamed(json);
        s.with(
            "body",
            &format!("{name}-create.json"),
            &[0, r],
            created.as_bytes(),
        );
        s.with(
            "body",
            &format!("{name}-create.yaml"),
            &[1, r],
            yaml(&created).as_bytes(),
        );
        if r < SSAR {
            s.with(
                "body",
                &format!("{name}-update.json"),
                &[3, r + RESOURCES],
                json.as_bytes(),
            );
        }
    }
    let list = r#"{"apiVersion":"v1","kind":"List","items":[{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"}}],"metadata":{}}"#;
    s.with("body", "list.json", &[0, CONFIGMAPS], list.as_bytes());
    let multi = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\n  labels: {a: b}\ndata:\n  k: |\n    multi\n    line\n  n: \"1\"\n";
    s.with(
        "body",
        "configmap-anchors.yaml",
        &[1, CONFIGMAPS],
        multi.as_bytes(),
    );
    for (r, name, bytes) in protobuf_objects() {
        s.with("body", &format!("{name}.pb"), &[2, r], &bytes);
    }
}

/// The object under `<name>-new`.
fn renamed(json: &str) -> String {
    let mut v: serde_json::Value = serde_json::from_str(json).expect("seed JSON");
    if let Some(name) = v.pointer_mut("/metadata/name") {
        *name = format!("{}-new", name.as_str().unwrap_or("")).into();
    }
    v.to_string()
}

fn object_meta(name: &str) -> Option<meta::ObjectMeta> {
    Some(meta::ObjectMeta {
        name: Some(name.into()),
        namespace: Some("default".into()),
        labels: [("app".to_string(), "a".to_string())].into(),
        ..Default::default()
    })
}

fn envelope(api_version: &str, kind: &str, raw: Vec<u8>) -> Vec<u8> {
    let mut out = b"k8s\0".to_vec();
    Unknown {
        type_meta: Some(TypeMeta {
            api_version: Some(api_version.into()),
            kind: Some(kind.into()),
        }),
        raw: Some(raw),
        content_encoding: Some(String::new()),
        content_type: Some(String::new()),
    }
    .encode(&mut out)
    .expect("encodes into a Vec");
    out
}

fn time(seconds: i64) -> Option<meta::MicroTime> {
    Some(meta::MicroTime {
        seconds: Some(seconds),
        nanos: Some(123_000),
    })
}

/// Real objects as client-go's protobuf serializer writes them.
fn protobuf_objects() -> Vec<(u8, &'static str, Vec<u8>)> {
    let cm = core::v1::ConfigMap {
        metadata: object_meta("cm-new"),
        data: [("k".to_string(), "v".to_string())].into(),
        binary_data: [("b".to_string(), vec![0u8, 1, 2])].into(),
        immutable: Some(false),
    };
    let secret = core::v1::Secret {
        metadata: object_meta("secret-new"),
        data: [("k".to_string(), b"v".to_vec())].into(),
        string_data: [("s".to_string(), "t".to_string())].into(),
        r#type: Some("Opaque".into()),
        immutable: None,
    };
    let lease = coordination::v1::Lease {
        metadata: object_meta("lease-new"),
        spec: Some(coordination::v1::LeaseSpec {
            holder_identity: Some("kapi-1".into()),
            lease_duration_seconds: Some(15),
            acquire_time: time(1_700_000_000),
            renew_time: time(1_700_000_010),
            lease_transitions: Some(1),
            ..Default::default()
        }),
    };
    let ns = core::v1::Namespace {
        metadata: Some(meta::ObjectMeta {
            name: Some("fuzz-new".into()),
            ..Default::default()
        }),
        spec: Some(core::v1::NamespaceSpec {
            finalizers: vec!["kubernetes".into()],
        }),
        status: None,
    };
    let sa = core::v1::ServiceAccount {
        metadata: object_meta("sa-new"),
        secrets: vec![core::v1::ObjectReference {
            name: Some("tok".into()),
            ..Default::default()
        }],
        image_pull_secrets: vec![core::v1::LocalObjectReference {
            name: Some("pull".into()),
        }],
        automount_service_account_token: Some(true),
    };
    let ev = core::v1::Event {
        metadata: object_meta("ev-new"),
        involved_object: Some(core::v1::ObjectReference {
            kind: Some("Pod".into()),
            namespace: Some("default".into()),
            name: Some("p".into()),
            ..Default::default()
        }),
        reason: Some("Pulled".into()),
        message: Some("pulled".into()),
        source: Some(core::v1::EventSource {
            component: Some("kubelet".into()),
            host: Some("n1".into()),
        }),
        first_timestamp: Some(meta::Time {
            seconds: Some(1_700_000_000),
            nanos: Some(0),
        }),
        count: Some(2),
        r#type: Some("Normal".into()),
        ..Default::default()
    };
    let ssar = k8s_pb::api::authorization::v1::SelfSubjectAccessReview {
        metadata: None,
        spec: Some(
            k8s_pb::api::authorization::v1::SelfSubjectAccessReviewSpec {
                resource_attributes: Some(k8s_pb::api::authorization::v1::ResourceAttributes {
                    namespace: Some("default".into()),
                    verb: Some("get".into()),
                    resource: Some("configmaps".into()),
                    ..Default::default()
                }),
                non_resource_attributes: None,
            },
        ),
        status: None,
    };
    let del = meta::DeleteOptions {
        grace_period_seconds: Some(0),
        propagation_policy: Some("Background".into()),
        preconditions: Some(meta::Preconditions {
            uid: Some("u".into()),
            resource_version: Some("3".into()),
        }),
        ..Default::default()
    };
    vec![
        (
            CONFIGMAPS,
            "configmap",
            envelope("v1", "ConfigMap", cm.encode_to_vec()),
        ),
        (
            SECRETS,
            "secret",
            envelope("v1", "Secret", secret.encode_to_vec()),
        ),
        (
            LEASES,
            "lease",
            envelope("coordination.k8s.io/v1", "Lease", lease.encode_to_vec()),
        ),
        (
            NAMESPACES,
            "namespace",
            envelope("v1", "Namespace", ns.encode_to_vec()),
        ),
        (
            SERVICEACCOUNTS,
            "serviceaccount",
            envelope("v1", "ServiceAccount", sa.encode_to_vec()),
        ),
        (EVENTS, "event", envelope("v1", "Event", ev.encode_to_vec())),
        (
            SSAR,
            "ssar",
            envelope(
                "authorization.k8s.io/v1",
                "SelfSubjectAccessReview",
                ssar.encode_to_vec(),
            ),
        ),
        // The URL's kind when the envelope names none.
        (CONFIGMAPS, "configmap-no-typemeta", {
            let mut out = b"k8s\0".to_vec();
            Unknown {
                raw: Some(cm.encode_to_vec()),
                ..Default::default()
            }
            .encode(&mut out)
            .expect("encodes into a Vec");
            out
        }),
        (
            CONFIGMAPS,
            "deleteoptions",
            envelope("meta.k8s.io/v1", "DeleteOptions", del.encode_to_vec()),
        ),
    ]
}

fn protobuf(s: &mut Seeds) {
    for (r, name, bytes) in protobuf_objects() {
        s.with("protobuf", name, &[r], &bytes);
    }
}

fn patches(s: &mut Seeds) {
    // Byte 0: 0 JSON patch, 1 merge, 2 strategic (+3: status subresource); byte 1 = resource.
    let json = [
        (
            CONFIGMAPS,
            "configmap",
            r#"[{"op":"add","path":"/data/new","value":"x"},{"op":"test","path":"/data/k","value":"v"},{"op":"remove","path":"/metadata/labels/app"}]"#,
        ),
        (
            LEASES,
            "lease",
            r#"[{"op":"replace","path":"/spec/renewTime","value":"2024-01-01T00:00:20.000000Z"},{"op":"copy","from":"/spec/holderIdentity","path":"/metadata/annotations"}]"#,
        ),
        (
            SERVICEACCOUNTS,
            "serviceaccount",
            r#"[{"op":"add","path":"/secrets/-","value":{"name":"more"}},{"op":"move","from":"/secrets/0","path":"/secrets/1"}]"#,
        ),
    ];
    for (r, name, p) in json {
        s.with("patch", &format!("json-{name}"), &[0, r], p.as_bytes());
    }
    let merge = [
        (
            CONFIGMAPS,
            "configmap",
            r#"{"data":{"k":null,"n":"1"},"metadata":{"labels":{"x":"y"}}}"#,
        ),
        (
            SECRETS,
            "secret",
            r#"{"stringData":{"a":"b"},"type":"Opaque"}"#,
        ),
        (
            NAMESPACES,
            "namespace",
            r#"{"metadata":{"annotations":{"a":"b"}}}"#,
        ),
        (
            EVENTS,
            "event",
            r#"{"count":4,"lastTimestamp":"2024-01-01T00:02:00Z"}"#,
        ),
    ];
    for (r, name, p) in merge {
        s.with("patch", &format!("merge-{name}"), &[1, r], p.as_bytes());
    }
    let strategic = [
        (
            CONFIGMAPS,
            "configmap",
            r#"{"metadata":{"$deleteFromPrimitiveList/finalizers":["x"],"finalizers":["a"]},"data":{"$patch":"replace","k":"w"}}"#,
        ),
        (
            SERVICEACCOUNTS,
            "serviceaccount",
            r#"{"secrets":[{"name":"tok2"},{"$patch":"delete","name":"s"}],"$setElementOrder/secrets":[{"name":"tok2"}]}"#,
        ),
        (
            NAMESPACES,
            "namespace-status",
            r#"{"status":{"conditions":[{"type":"NamespaceDeletionDiscoveryFailure","status":"False"}]}}"#,
        ),
        (
            LEASECANDIDATES,
            "leasecandidate",
            r#"{"spec":{"renewTime":"2024-01-01T00:00:30.000000Z","$retainKeys":["renewTime"]}}"#,
        ),
        (
            EVENTS_V1,
            "event-v1",
            r#"{"series":{"count":3},"metadata":{"ownerReferences":[{"apiVersion":"v1","kind":"Pod","name":"p","uid":"1"}]}}"#,
        ),
    ];
    for (r, name, p) in strategic {
        let kind = if name.ends_with("-status") { 5 } else { 2 };
        s.with(
            "patch",
            &format!("strategic-{name}"),
            &[kind, r],
            p.as_bytes(),
        );
    }
}

fn applies(s: &mut Seeds) {
    // Byte 0: manager (0 seed, 1 fuzz, 2 kubectl) + 3*force + 6*create; byte 1 = resource.
    let cases: [(u8, u8, &str, &str); 7] = [
        (0, CONFIGMAPS, "configmap-owner", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\n  labels:\n    app: a\ndata:\n  k: v2\n"),
        (1, CONFIGMAPS, "configmap-conflict", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\ndata:\n  k: other\n"),
        (4, CONFIGMAPS, "configmap-force", r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm"},"data":{"k":"forced"}}"#),
        (2, SERVICEACCOUNTS, "serviceaccount-kubectl", "apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: sa\n  annotations:\n    kubectl.kubernetes.io/last-applied-configuration: '{\"apiVersion\":\"v1\",\"kind\":\"ServiceAccount\"}'\nsecrets:\n- name: tok\n- name: s\n"),
        (7, LEASES, "lease-create", "apiVersion: coordination.k8s.io/v1\nkind: Lease\nmetadata:\n  name: new\nspec:\n  holderIdentity: b\n  leaseDurationSeconds: 10\n"),
        (1, NAMESPACES, "namespace-managedfields", "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: fuzz\n  managedFields:\n  - manager: other\n    operation: Apply\n    apiVersion: v1\n    fieldsType: FieldsV1\n    fieldsV1: {\"f:metadata\": {\"f:labels\": {\"f:team\": {}}}}\n"),
        (0, EVENTS, "event-owner", "apiVersion: v1\nkind: Event\nmetadata:\n  name: ev\ninvolvedObject:\n  kind: Pod\n  namespace: default\n  name: p\nreason: Started\ncount: 2\n"),
    ];
    for (mode, r, name, body) in cases {
        s.with("apply", name, &[mode, r], body.as_bytes());
    }
}
