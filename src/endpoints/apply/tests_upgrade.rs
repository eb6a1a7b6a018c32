//! `kubectl apply --server-side` over objects an earlier client-side apply wrote (kube's
//! lastAppliedManager).

use super::last_applied::LAST_APPLIED;
use super::*;

const CSA: &str = "kubectl-client-side-apply";

/// A ConfigMap as `kubectl apply` (client-side) creates it: its data in the last-applied
/// annotation and owned by kubectl-client-side-apply.
fn client_side_applied(k: &str) -> Value {
    let last = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "x", "namespace": "default"}, "data": {"k": k}});
    let mut obj = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "x", "namespace": "default",
            "annotations": {LAST_APPLIED: format!("{last}\n")}},
        "data": {"k": k}});
    update_managed_fields(None, &mut obj, CSA, "Update", "");
    obj
}

fn applied(k: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "x", "namespace": "default"}, "data": {"k": k}})
}

fn owner_of_k(obj: &Value) -> Vec<String> {
    obj["metadata"]["managedFields"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["fieldsV1"].at("/f:data/f:k").is_some())
        .map(|e| e["manager"].as_str().unwrap().to_string())
        .collect()
}

/// The field client-side apply recorded and still holds changes hands without a conflict.
#[test]
fn kubectl_server_side_takes_over_what_client_side_apply_recorded() {
    let gvk = GroupVersionKind::new("", "v1", "ConfigMap");
    let live = client_side_applied("v1");
    let out = server_side_apply(Some(&live), &applied("v2"), "kubectl", false, &gvk).unwrap();
    assert_eq!(out["data"]["k"], "v2");
    assert_eq!(owner_of_k(&out), ["kubectl"]);
    // What did not conflict stays the client-side apply's (kubectl itself folds that entry
    // into its own afterwards).
    let csa = out["metadata"]["managedFields"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["manager"] == CSA)
        .unwrap();
    assert!(csa["fieldsV1"]
        .at("/f:metadata/f:annotations")
        .is_some_and(|a| a.get(format!("f:{LAST_APPLIED}").as_str()).is_some()));
}

/// No forgiveness for a field whose live value is no longer the recorded one, nor for any
/// other field manager than kubectl's.
#[test]
fn changed_fields_and_other_managers_still_conflict() {
    let gvk = GroupVersionKind::new("", "v1", "ConfigMap");
    let live = client_side_applied("v1");
    let mut edited = live.clone();
    edited["data"]["k"] = json!("v9");
    update_managed_fields(Some(&live), &mut edited, "kubectl-edit", "Update", "");
    let e = server_side_apply(Some(&edited), &applied("v2"), "kubectl", false, &gvk).unwrap_err();
    assert_eq!(
        e.conflict_message().unwrap(),
        "Apply failed with 1 conflict: conflict with \"kubectl-edit\" using v1: .data.k"
    );

    let e = server_side_apply(Some(&live), &applied("v2"), "helm", false, &gvk).unwrap_err();
    assert_eq!(
        e.conflict_message().unwrap(),
        format!("Apply failed with 1 conflict: conflict with \"{CSA}\" using v1: .data.k")
    );

    let mut other_version = live.clone();
    other_version["metadata"]["annotations"][LAST_APPLIED] =
        json!(r#"{"apiVersion":"v2","kind":"ConfigMap","data":{"k":"v1"}}"#);
    let e = server_side_apply(Some(&other_version), &applied("v2"), "kubectl", false, &gvk);
    assert!(e.is_err(), "{e:?}");
}

fn last_applied_of(obj: &Value) -> Option<&str> {
    obj.at("/metadata/annotations")?.get(LAST_APPLIED)?.as_str()
}

/// kube's lastAppliedUpdater: `kubectl apply --server-side` rewrites an existing last-applied
/// annotation to what it applied (so a later client-side apply diffs against that); it adds
/// none to an object without one, and other field managers leave it alone.
#[test]
fn kubectl_server_side_keeps_the_last_applied_annotation_up_to_date() {
    let gvk = GroupVersionKind::new("", "v1", "ConfigMap");
    let live = client_side_applied("v1");
    let out = server_side_apply(Some(&live), &applied("v2"), "kubectl", false, &gvk).unwrap();
    assert_eq!(
        last_applied_of(&out),
        Some("{\"apiVersion\":\"v1\",\"data\":{\"k\":\"v2\"},\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"x\",\"namespace\":\"default\"}}\n")
    );

    let out = server_side_apply(Some(&live), &applied("v2"), "helm", true, &gvk).unwrap();
    assert_eq!(last_applied_of(&out), last_applied_of(&live));

    let fresh = server_side_apply(None, &applied("v1"), "kubectl", false, &gvk).unwrap();
    let out = server_side_apply(Some(&fresh), &applied("v2"), "kubectl", false, &gvk).unwrap();
    assert_eq!(last_applied_of(&out), None, "{out}");
}
