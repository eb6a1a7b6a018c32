//! Writes of the admissionregistration resources through the generic store on the embedded
//! storage: create, update (generation, status kept apart) and list of each kind.

use super::tests::texts;
use super::GROUP;
use crate::registry::error::Error;
use crate::registry::tests::{create, ctx, registry, store, timed};
use crate::registry::ListOptions;
use serde_json::{json, Value};

fn rules() -> Value {
    json!([{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"],
        "resources": ["configmaps"]}])
}

/// Every kind with a valid object of it.
fn objects() -> Vec<(&'static str, &'static str, Value)> {
    vec![
        (
            "v1",
            "mutatingwebhookconfigurations",
            json!({"metadata": {"name": "m"},
            "webhooks": [{"name": "m.example.com", "sideEffects": "None",
                "admissionReviewVersions": ["v1"], "rules": rules(),
                "clientConfig": {"url": "https://hooks.example.com/m"}}]}),
        ),
        (
            "v1",
            "validatingwebhookconfigurations",
            json!({"metadata": {"name": "v"},
            "webhooks": [{"name": "v.example.com", "sideEffects": "NoneOnDryRun",
                "admissionReviewVersions": ["v1beta1"],
                "clientConfig": {"url": "https://example.com/validate"}}]}),
        ),
        (
            "v1",
            "validatingadmissionpolicies",
            json!({"metadata": {"name": "p"},
            "spec": {"matchConstraints": {"resourceRules": rules()},
                "validations": [{"expression": "object.metadata.name != 'x'"}]}}),
        ),
        (
            "v1",
            "validatingadmissionpolicybindings",
            json!({"metadata": {"name": "pb"},
            "spec": {"policyName": "p", "validationActions": ["Deny"]}}),
        ),
        (
            "v1beta1",
            "mutatingadmissionpolicies",
            json!({"metadata": {"name": "mp"},
            "spec": {"matchConstraints": {"resourceRules": rules()},
                "reinvocationPolicy": "Never",
                "mutations": [{"patchType": "ApplyConfiguration",
                    "applyConfiguration": {"expression": "Object{metadata: Object.metadata{labels: {'a': 'b'}}}"}}]}}),
        ),
        (
            "v1beta1",
            "mutatingadmissionpolicybindings",
            json!({"metadata": {"name": "mpb"},
            "spec": {"policyName": "mp"}}),
        ),
    ]
}

#[tokio::test]
async fn store_creates_updates_and_lists_every_kind() {
    let (_d, r) = registry().await;
    for (version, resource, obj) in objects() {
        let s = store(&r, GROUP, version, resource);
        let created = timed(create(s, &ctx(""), obj)).await.unwrap();
        assert_eq!(created["metadata"]["generation"], 1, "{resource}");
        // A label leaves the generation; a change of the spec moves it.
        let mut labelled = created.clone();
        labelled["metadata"]["labels"] = json!({"a": "b"});
        let name = created["metadata"]["name"].as_str().unwrap().to_string();
        let t = move |_: Option<&Value>| Ok(labelled.clone());
        let updated = timed(s.update(&ctx(""), &name, "", false, &t))
            .await
            .unwrap();
        assert_eq!(
            updated.object.obj["metadata"]["generation"], 1,
            "{resource}"
        );
        let mut changed = updated.object.obj.clone();
        match resource {
            "mutatingwebhookconfigurations" | "validatingwebhookconfigurations" => {
                changed["webhooks"][0]["timeoutSeconds"] = json!(5)
            }
            _ => changed["spec"]["failurePolicy"] = json!("Ignore"),
        }
        let t = move |_: Option<&Value>| Ok(changed.clone());
        let updated = timed(s.update(&ctx(""), &name, "", false, &t))
            .await
            .unwrap();
        assert_eq!(
            updated.object.obj["metadata"]["generation"], 2,
            "{resource}"
        );
        let list = timed(s.list(&ctx(""), &ListOptions::default()))
            .await
            .unwrap();
        let names: Vec<&Value> = list
            .items
            .iter()
            .map(|i| &i.obj["metadata"]["name"])
            .collect();
        assert_eq!(names, [&json!(name)], "{resource}");
    }
}

#[tokio::test]
async fn store_rejects_invalid_objects_with_upstream_messages() {
    let (_d, r) = registry().await;
    let s = store(&r, GROUP, "v1", "validatingwebhookconfigurations");
    let bad = timed(create(
        s,
        &ctx(""),
        json!({"metadata": {"name": "v"}, "webhooks": [{"name": "v.example.com",
            "sideEffects": "Some", "admissionReviewVersions": ["v1"],
            "clientConfig": {"url": "https://example.com"}}]}),
    ))
    .await;
    let Err(Error::Invalid { kind, errors, .. }) = bad else {
        panic!("{bad:?}")
    };
    assert_eq!(kind, "ValidatingWebhookConfiguration");
    assert_eq!(
        texts(&errors),
        ["webhooks[0].sideEffects: Unsupported value: \"Some\": supported values: \"None\", \"NoneOnDryRun\""]
    );
}

#[tokio::test]
async fn policy_status_goes_through_its_subresource() {
    let (_d, r) = registry().await;
    let s = store(&r, GROUP, "v1", "validatingadmissionpolicies");
    let (_, _, obj) = objects().remove(2);
    let created = timed(create(s, &ctx(""), obj)).await.unwrap();
    assert_eq!(created["status"], json!({}));
    let mut with_status = created.clone();
    with_status["status"] = json!({"observedGeneration": 1, "typeChecking": {}});
    with_status["spec"]["failurePolicy"] = json!("Ignore");
    let t = move |_: Option<&Value>| Ok(with_status.clone());
    let updated = timed(s.update(&ctx(""), "p", "status", false, &t))
        .await
        .unwrap();
    let stored = &updated.object.obj;
    assert_eq!(stored["status"]["observedGeneration"], 1);
    assert_eq!(stored["spec"]["failurePolicy"], "Fail");
    assert_eq!(stored["metadata"]["generation"], 1);
    // The main resource keeps the status it has.
    let mut cleared = stored.clone();
    cleared["status"] = json!({});
    let t = move |_: Option<&Value>| Ok(cleared.clone());
    let updated = timed(s.update(&ctx(""), "p", "", false, &t)).await.unwrap();
    assert_eq!(updated.object.obj["status"]["observedGeneration"], 1);
}
