use super::*;
use crate::registry::webhook::testing::{self_signed, serve, Answer};
use bytes::Bytes;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// A CRD converting by a webhook at 127.0.0.1:`port` trusting `ca`, with these review versions.
fn crd(port: u16, ca: &str, review_versions: &[&str]) -> CustomResourceDefinition {
    serde_json::from_value(json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "crontabs.stable.example.com"},
        "spec": {
            "group": "stable.example.com",
            "names": {"plural": "crontabs", "kind": "CronTab"},
            "scope": "Namespaced",
            "versions": [
                {"name": "v1", "served": true, "storage": true},
                {"name": "v2", "served": true, "storage": false},
            ],
            "conversion": {
                "strategy": "Webhook",
                "webhook": {
                    "conversionReviewVersions": review_versions,
                    "clientConfig": {
                        "url": format!("https://127.0.0.1:{port}/convert"),
                        "caBundle": base64::Engine::encode(
                            &base64::engine::general_purpose::STANDARD,
                            ca,
                        ),
                    },
                },
            },
        },
    }))
    .unwrap()
}

fn v1_object() -> Value {
    json!({
        "apiVersion": "stable.example.com/v1",
        "kind": "CronTab",
        "metadata": {"name": "a", "namespace": "ns", "uid": "u-1", "generation": 3,
                     "labels": {"app": "x"}},
        "spec": {"cronSpec": "* * * * *"},
    })
}

/// A webhook converting by `tweak`ing each object (after setting the desired apiVersion),
/// answering the review's `response` as `respond` makes it; counts its calls.
async fn webhook(
    review_versions: &[&str],
    tweak: fn(&mut Value),
    respond: fn(Value) -> Value,
) -> (Converter, Arc<AtomicUsize>) {
    let calls = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&calls);
    let (cert, key) = self_signed();
    let handler = move |body: Bytes| -> Answer {
        counted.fetch_add(1, Ordering::SeqCst);
        let review: Value = serde_json::from_slice(&body).unwrap();
        let request = &review["request"];
        let desired = request["desiredAPIVersion"].clone();
        let objects: Vec<Value> = request["objects"]
            .as_array()
            .unwrap()
            .iter()
            .map(|o| {
                let mut o = o.clone();
                o["apiVersion"] = desired.clone();
                tweak(&mut o);
                o
            })
            .collect();
        let answer = respond(json!({
            "apiVersion": review["apiVersion"],
            "kind": "ConversionReview",
            "response": {
                "uid": request["uid"],
                "convertedObjects": objects,
                "result": {"status": "Success"},
            },
        }));
        (200, "application/json", answer.to_string().into_bytes())
    };
    let port = serve((&cert, &key), Duration::ZERO, handler).await;
    (Converter::of(&crd(port, &cert, review_versions)), calls)
}

fn rename_spec(o: &mut Value) {
    let spec = o["spec"].as_object_mut().unwrap();
    if let Some(v) = spec.remove("cronSpec") {
        spec.insert("schedule".into(), v);
    }
}

fn as_is(v: Value) -> Value {
    v
}

#[tokio::test(flavor = "multi_thread")]
async fn the_webhook_converts_and_only_labels_and_annotations_of_metadata_change() {
    fn tweak(o: &mut Value) {
        rename_spec(o);
        o["metadata"]["generation"] = json!(99);
        o["metadata"]["labels"] = json!({"app": "y"});
        o["metadata"]["annotations"] = json!({"converted": "true"});
    }
    let (converter, calls) = webhook(&["v1"], tweak, as_is).await;
    let out = converter
        .convert(v1_object(), "stable.example.com/v2")
        .unwrap();
    assert_eq!(out["apiVersion"], "stable.example.com/v2");
    assert_eq!(out["spec"], json!({"schedule": "* * * * *"}));
    assert_eq!(
        out["metadata"]["generation"], 3,
        "restored from the original"
    );
    assert_eq!(out["metadata"]["labels"], json!({"app": "y"}));
    assert_eq!(out["metadata"]["annotations"], json!({"converted": "true"}));
    // An object at the desired version is not sent.
    let same = converter
        .convert(v1_object(), "stable.example.com/v1")
        .unwrap();
    assert_eq!(same, v1_object());
    assert_eq!(calls.load(Ordering::SeqCst), 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn v1beta1_reviews_are_spoken_when_listed_first() {
    fn respond(mut v: Value) -> Value {
        assert_eq!(v["apiVersion"], "apiextensions.k8s.io/v1beta1");
        v["response"]["uid"] = json!("not checked for v1beta1");
        v
    }
    let (converter, _) = webhook(&["v1beta1", "v1"], rename_spec, respond).await;
    let out = converter
        .convert(v1_object(), "stable.example.com/v2")
        .unwrap();
    assert_eq!(out["spec"]["schedule"], "* * * * *");
}

#[tokio::test(flavor = "multi_thread")]
async fn answers_upstream_refuses_are_errors_naming_the_webhook() {
    fn failure(mut v: Value) -> Value {
        v["response"]["result"] =
            json!({"status": "Failure", "message": "custom webhook conversion error"});
        v
    }
    fn failure_without_message(mut v: Value) -> Value {
        v["response"]["result"] = json!({"status": "Failure"});
        v
    }
    fn empty(mut v: Value) -> Value {
        v["response"]["convertedObjects"] = json!([]);
        v
    }
    fn wrong_uid(mut v: Value) -> Value {
        v["response"]["uid"] = json!("other");
        v
    }
    fn no_response(mut v: Value) -> Value {
        v.as_object_mut().unwrap().remove("response");
        v
    }
    fn wrong_review_kind(mut v: Value) -> Value {
        v["kind"] = json!("AdmissionReview");
        v
    }
    fn wrong_version(o: &mut Value) {
        o["apiVersion"] = json!("stable.example.com/v1");
    }
    fn wrong_kind(o: &mut Value) {
        o["kind"] = json!("Other");
    }
    fn renamed(o: &mut Value) {
        o["metadata"]["name"] = json!("b");
    }
    fn bad_label(o: &mut Value) {
        o["metadata"]["labels"] = json!({"app": "not valid!"});
    }
    fn label_not_string(o: &mut Value) {
        o["metadata"]["labels"] = json!({"n": 1});
    }
    fn no_kind(o: &mut Value) {
        o.as_object_mut().unwrap().remove("kind");
    }
    fn no_metadata(o: &mut Value) {
        o.as_object_mut().unwrap().remove("metadata");
    }
    let prefix = "conversion webhook for stable.example.com/v1, Kind=CronTab";
    let cases: [Case; 13] = [
        (as_is_object, failure, format!("{prefix} failed: custom webhook conversion error")),
        (
            as_is_object,
            failure_without_message,
            format!("{prefix} failed: response.result.status was 'Failure', not 'Success'"),
        ),
        (as_is_object, empty, format!("{prefix} returned 0 objects, expected 1")),
        (as_is_object, wrong_uid, format!("{prefix} failed: expected response.uid=")),
        (as_is_object, no_response, format!("{prefix} failed: no response provided")),
        (
            as_is_object,
            wrong_review_kind,
            format!("{prefix} failed: expected webhook response of apiextensions.k8s.io/v1, Kind=ConversionReview, got apiextensions.k8s.io/v1, Kind=AdmissionReview"),
        ),
        (
            wrong_version,
            as_is,
            format!("{prefix} returned invalid object at index 0: invalid groupVersion (expected stable.example.com/v2, received stable.example.com/v1)"),
        ),
        (
            wrong_kind,
            as_is,
            format!("{prefix} returned invalid object at index 0: invalid kind (expected CronTab, received Other)"),
        ),
        (
            renamed,
            as_is,
            format!("{prefix} returned invalid object: must have the same name: a != b"),
        ),
        (
            bad_label,
            as_is,
            format!("{prefix} returned invalid metadata: metadata.labels: Invalid value: \"not valid!\""),
        ),
        (
            label_not_string,
            as_is,
            format!("{prefix} returned invalid metadata: metadata.labels[n] must be a string, but is int64 in converted object"),
        ),
        (
            no_kind,
            as_is,
            format!("{prefix} returned invalid object at index 0: Object 'Kind' is missing in '{{"),
        ),
        (
            no_metadata,
            as_is,
            // As upstream: identity is checked before metadata is restored.
            format!("{prefix} returned invalid object: must have the same name: a != "),
        ),
    ];
    for (tweak, respond, want) in cases {
        let (converter, _) = webhook(&["v1"], tweak, respond).await;
        let err = converter
            .convert(v1_object(), "stable.example.com/v2")
            .unwrap_err();
        assert!(err.starts_with(&want), "{err}\n  wanted: {want}");
    }
}

fn as_is_object(_: &mut Value) {}

/// How the webhook converts, how it answers, and the error wanted.
type Case = (fn(&mut Value), fn(Value) -> Value, String);

#[tokio::test(flavor = "multi_thread")]
async fn garbage_and_refused_calls_fail_naming_the_webhook() {
    let (cert, key) = self_signed();
    let port = serve((&cert, &key), Duration::ZERO, |_| {
        (200, "application/json", b"not json".to_vec())
    })
    .await;
    let err = Converter::of(&crd(port, &cert, &["v1"]))
        .convert(v1_object(), "stable.example.com/v2")
        .unwrap_err();
    assert!(
        err.starts_with(
            "conversion webhook for stable.example.com/v1, Kind=CronTab failed: expected ident"
        ),
        "{err}"
    );
    let down = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = down.local_addr().unwrap().port();
    drop(down);
    let err = Converter::of(&crd(port, &cert, &["v1"]))
        .convert(v1_object(), "stable.example.com/v2")
        .unwrap_err();
    assert_eq!(
        err,
        format!("conversion webhook for stable.example.com/v1, Kind=CronTab failed: Post \"https://127.0.0.1:{port}/convert\": dial tcp 127.0.0.1:{port}: connect: connection refused")
    );
}

#[test]
fn strategy_none_and_unusable_webhooks() {
    let mut none = crd(1, "", &["v1"]);
    none.spec.conversion = None;
    let out = Converter::of(&none)
        .convert(v1_object(), "stable.example.com/v2")
        .unwrap();
    assert_eq!(out["apiVersion"], "stable.example.com/v2");
    assert_eq!(out["spec"], v1_object()["spec"]);
    let bad_ca = crd(1, "not a certificate", &["v1"]);
    let err = Converter::of(&bad_ca)
        .convert(v1_object(), "stable.example.com/v2")
        .unwrap_err();
    assert_eq!(
        err,
        "conversion webhook for stable.example.com/v1, Kind=CronTab failed: unable to load root certificates: unable to parse bytes as PEM block"
    );
    // An object of only apiVersion and kind never reaches a webhook.
    let empty = json!({"apiVersion": "stable.example.com/v1", "kind": "CronTab"});
    let out = Converter::of(&bad_ca)
        .convert(empty, "stable.example.com/v2")
        .unwrap();
    assert_eq!(out["apiVersion"], "stable.example.com/v2");
}
