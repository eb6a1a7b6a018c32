//! Table-driven tests of the patch types. The strategic cases follow upstream's
//! strategicpatch/patch_test.go ("mergingList" there = ServiceAccount.secrets or
//! ownerReferences here, "mergingIntList" = metadata.finalizers, "nonMergingList" =
//! imagePullSecrets), plus the patches kubectl's client-side apply sends.

use super::*;
use serde_json::json;

fn gvk(group: &str, version: &str, kind: &str) -> GroupVersionKind {
    GroupVersionKind::new(group, version, kind)
}

fn sa() -> GroupVersionKind {
    gvk("", "v1", "ServiceAccount")
}

/// The Status code a patch error is answered with.
fn code(e: &PatchError) -> u16 {
    crate::api::Status::from(e).code
}

fn smp(original: Value, patch: Value) -> Result<Value, PatchError> {
    apply_patch(
        PatchType::StrategicMerge,
        &original,
        patch.to_string().as_bytes(),
        &sa(),
    )
}

#[test]
fn content_types() {
    let cases = [
        ("application/json-patch+json", Some(PatchType::Json)),
        ("application/merge-patch+json", Some(PatchType::Merge)),
        (
            "application/strategic-merge-patch+json",
            Some(PatchType::StrategicMerge),
        ),
        ("application/apply-patch+yaml", Some(PatchType::Apply)),
        (
            "application/merge-patch+json; charset=utf-8",
            Some(PatchType::Merge),
        ),
        (
            "Application/JSON-Patch+JSON;charset=UTF-8",
            Some(PatchType::Json),
        ),
        ("application/json", None),
        ("application/apply-patch+cbor", None),
        ("", None),
    ];
    for (ct, want) in cases {
        assert_eq!(PatchType::from_content_type(ct), want, "{ct}");
    }
}

#[test]
fn json_patch() {
    let cm = json!({"kind": "ConfigMap", "data": {"a": "1"}, "metadata": {"name": "x"}});
    let g = gvk("", "v1", "ConfigMap");
    let cases: Vec<(Value, Result<Value, u16>)> = vec![
        (
            json!([{"op": "add", "path": "/data/b", "value": "2"}]),
            Ok(
                json!({"kind": "ConfigMap", "data": {"a": "1", "b": "2"}, "metadata": {"name": "x"}}),
            ),
        ),
        (
            json!([{"op": "test", "path": "/data/a", "value": "1"}, {"op": "remove", "path": "/data/a"}]),
            Ok(json!({"kind": "ConfigMap", "data": {}, "metadata": {"name": "x"}})),
        ),
        (
            json!([{"op": "test", "path": "/data/a", "value": "2"}]),
            Err(422),
        ),
        (json!([{"op": "remove", "path": "/data/zzz"}]), Err(422)),
        (json!([{"op": "replace", "path": "", "value": 3}]), Err(422)),
        (json!([{"op": "explode", "path": "/data"}]), Err(400)),
        (json!({"op": "add"}), Err(400)),
    ];
    for (patch, want) in cases {
        let got = apply_patch(PatchType::Json, &cm, patch.to_string().as_bytes(), &g);
        match (got, want) {
            (Ok(v), Ok(w)) => assert_eq!(v, w, "{patch}"),
            (Err(e), Err(want)) => assert_eq!(code(&e), want, "{patch}: {e}"),
            (got, want) => panic!("{patch}: got {got:?}, want {want:?}"),
        }
    }
    let malformed = apply_patch(PatchType::Json, &cm, b"[{", &g).unwrap_err();
    assert_eq!(crate::api::Status::from(&malformed).reason, "BadRequest");
    let too_many: Vec<Value> = (0..10_001)
        .map(|_| json!({"op": "test", "path": "/kind", "value": "ConfigMap"}))
        .collect();
    let err = apply_patch(
        PatchType::Json,
        &cm,
        Value::Array(too_many).to_string().as_bytes(),
        &g,
    )
    .unwrap_err();
    let status = crate::api::Status::from(&err);
    assert_eq!(
        (status.code, status.reason.as_str()),
        (413, "RequestEntityTooLarge")
    );
    assert_eq!(
        status.message,
        "The allowed maximum operations in a JSON patch is 10000, got 10001"
    );
}

#[test]
fn merge_patch() {
    let g = gvk("", "v1", "ServiceAccount");
    let cases = [
        // RFC 7386 appendix A examples.
        (json!({"a": "b"}), json!({"a": "c"}), json!({"a": "c"})),
        (
            json!({"a": "b"}),
            json!({"b": "c"}),
            json!({"a": "b", "b": "c"}),
        ),
        (json!({"a": "b"}), json!({"a": null}), json!({})),
        (
            json!({"a": "b", "b": "c"}),
            json!({"a": null}),
            json!({"b": "c"}),
        ),
        (
            json!({"a": {"b": "c"}}),
            json!({"a": {"b": "d", "c": null}}),
            json!({"a": {"b": "d"}}),
        ),
        (
            json!({"a": [{"b": "c"}]}),
            json!({"a": [1]}),
            json!({"a": [1]}),
        ),
        // merge patch never merges lists, even merge-keyed ones.
        (
            json!({"secrets": [{"name": "a"}]}),
            json!({"secrets": [{"name": "b"}]}),
            json!({"secrets": [{"name": "b"}]}),
        ),
    ];
    for (orig, patch, want) in cases {
        let got = apply_patch(PatchType::Merge, &orig, patch.to_string().as_bytes(), &g).unwrap();
        assert_eq!(got, want, "{orig} + {patch}");
    }
    let err = apply_patch(PatchType::Merge, &json!({}), b"{nope", &g).unwrap_err();
    assert_eq!(code(&err), 400);
    let err = apply_patch(PatchType::Merge, &json!({}), b"[1]", &g).unwrap_err();
    assert_eq!(
        code(&err),
        422,
        "a patch that replaces the object with a list is invalid"
    );
}

#[test]
fn strategic_merge_patch() {
    let cases: Vec<(&str, Value, Value, Value)> = vec![
        (
            "nested maps merge, null deletes",
            json!({"metadata": {"name": "a", "labels": {"x": "1", "y": "2"}}}),
            json!({"metadata": {"labels": {"x": null, "z": "3"}}}),
            json!({"metadata": {"name": "a", "labels": {"y": "2", "z": "3"}}}),
        ),
        (
            "null for an absent key is dropped (IgnoreUnmatchedNulls)",
            json!({"a": 1}),
            json!({"b": null}),
            json!({"a": 1}),
        ),
        (
            // Without $setElementOrder, mergeSortedSlice puts items unknown to the live list
            // first.
            "merging list: add a new item, keep the others",
            json!({"secrets": [{"name": "1"}, {"name": "2"}]}),
            json!({"secrets": [{"name": "3"}]}),
            json!({"secrets": [{"name": "3"}, {"name": "1"}, {"name": "2"}]}),
        ),
        (
            "merging list: items with the same key merge",
            json!({"secrets": [{"name": "1", "namespace": "a"}, {"name": "2"}]}),
            json!({"secrets": [{"name": "1", "kind": "Secret"}]}),
            json!({"secrets": [{"name": "1", "namespace": "a", "kind": "Secret"}, {"name": "2"}]}),
        ),
        (
            "merging list: $patch delete removes by merge key",
            json!({"secrets": [{"name": "1"}, {"name": "2"}, {"name": "3"}]}),
            json!({"secrets": [{"name": "2", "$patch": "delete"}]}),
            json!({"secrets": [{"name": "1"}, {"name": "3"}]}),
        ),
        (
            "merging list: $patch replace replaces the list",
            json!({"secrets": [{"name": "1"}, {"name": "2"}]}),
            json!({"secrets": [{"name": "3", "value": "x"}, {"$patch": "replace"}]}),
            json!({"secrets": [{"name": "3", "value": "x"}]}),
        ),
        (
            "non-merging list is replaced",
            json!({"imagePullSecrets": [{"name": "1"}, {"name": "2"}]}),
            json!({"imagePullSecrets": [{"name": "3"}]}),
            json!({"imagePullSecrets": [{"name": "3"}]}),
        ),
        (
            "merging scalar list (finalizers) is a union",
            json!({"metadata": {"finalizers": ["a", "b"]}}),
            json!({"metadata": {"finalizers": ["c", "a"]}}),
            json!({"metadata": {"finalizers": ["c", "a", "b"]}}),
        ),
        (
            "$deleteFromPrimitiveList removes scalars",
            json!({"metadata": {"finalizers": ["a", "b", "c"]}}),
            json!({"metadata": {"$deleteFromPrimitiveList/finalizers": ["b"]}}),
            json!({"metadata": {"finalizers": ["a", "c"]}}),
        ),
        (
            "$setElementOrder orders a merging list (patch order wins)",
            json!({"secrets": [{"name": "1"}, {"name": "2"}, {"name": "3"}]}),
            json!({
                "$setElementOrder/secrets": [{"name": "3"}, {"name": "2"}, {"name": "1"}],
                "secrets": [{"name": "2", "kind": "Secret"}]
            }),
            json!({"secrets": [{"name": "3"}, {"name": "2", "kind": "Secret"}, {"name": "1"}]}),
        ),
        (
            "$setElementOrder with deletion (kubectl apply removing an item)",
            json!({"secrets": [{"name": "1"}, {"name": "2"}, {"name": "3"}]}),
            json!({
                "$setElementOrder/secrets": [{"name": "1"}, {"name": "3"}],
                "secrets": [{"$patch": "delete", "name": "2"}]
            }),
            json!({"secrets": [{"name": "1"}, {"name": "3"}]}),
        ),
        (
            // What kubectl apply sent when a ServiceAccount manifest went from s1,s2,s3 to
            // s3,s1,s4.
            "kubectl apply reordering, adding and deleting merge-keyed items",
            json!({"secrets": [{"name": "s1"}, {"name": "s2"}, {"name": "s3"}]}),
            json!({
                "$setElementOrder/secrets": [{"name": "s3"}, {"name": "s1"}, {"name": "s4"}],
                "secrets": [{"name": "s4"}, {"$patch": "delete", "name": "s2"}]
            }),
            json!({"secrets": [{"name": "s3"}, {"name": "s1"}, {"name": "s4"}]}),
        ),
        (
            // mergeSortedSlice: "server" precedes "b" in the live list, so it goes first.
            "$setElementOrder keeps server-only items in live order",
            json!({"metadata": {"finalizers": ["a", "server", "b"]}}),
            json!({"metadata": {"$setElementOrder/finalizers": ["b", "a", "new"], "finalizers": ["new"]}}),
            json!({"metadata": {"finalizers": ["server", "b", "a", "new"]}}),
        ),
        (
            "$setElementOrder for a list absent from the object",
            json!({"metadata": {"name": "x"}}),
            json!({"metadata": {"$setElementOrder/finalizers": ["b", "c", "a"], "finalizers": ["b", "a"]}}),
            json!({"metadata": {"name": "x", "finalizers": ["b", "a"]}}),
        ),
        (
            "$patch replace on a map",
            json!({"metadata": {"labels": {"a": "1", "b": "2"}}}),
            json!({"metadata": {"labels": {"$patch": "replace", "c": "3"}}}),
            json!({"metadata": {"labels": {"c": "3"}}}),
        ),
        (
            "$patch delete on a map",
            json!({"metadata": {"name": "n", "labels": {"a": "1"}}}),
            json!({"metadata": {"labels": {"$patch": "delete"}}}),
            json!({"metadata": {"name": "n", "labels": {}}}),
        ),
        (
            "$retainKeys clears keys not listed",
            json!({"spec": {"a": 1, "b": 2, "c": 3}}),
            json!({"spec": {"$retainKeys": ["a", "d"], "d": 4}}),
            json!({"spec": {"a": 1, "d": 4}}),
        ),
        (
            "ownerReferences merge on uid",
            json!({"metadata": {"ownerReferences": [{"uid": "u1", "name": "a"}, {"uid": "u2", "name": "b"}]}}),
            json!({"metadata": {"ownerReferences": [{"uid": "u2", "name": "c"}]}}),
            json!({"metadata": {"ownerReferences": [{"uid": "u1", "name": "a"}, {"uid": "u2", "name": "c"}]}}),
        ),
        (
            "directives in a new subtree are resolved, not stored",
            json!({"kind": "ServiceAccount"}),
            json!({"metadata": {"$setElementOrder/finalizers": ["a"], "finalizers": ["a"], "labels": {"x": null}}}),
            json!({"kind": "ServiceAccount", "metadata": {"finalizers": ["a"], "labels": {}}}),
        ),
        (
            "kubectl client-side apply of a changed configmap value",
            json!({"data": {"a": "1", "b": "2"}, "metadata": {"annotations": {
                "kubectl.kubernetes.io/last-applied-configuration": "{\"data\":{\"a\":\"1\"}}"}, "name": "c"}}),
            json!({"data": {"a": "9"}, "metadata": {"annotations": {
                "kubectl.kubernetes.io/last-applied-configuration": "{\"data\":{\"a\":\"9\"}}"}}}),
            json!({"data": {"a": "9", "b": "2"}, "metadata": {"annotations": {
                "kubectl.kubernetes.io/last-applied-configuration": "{\"data\":{\"a\":\"9\"}}"}, "name": "c"}}),
        ),
    ];
    for (name, original, patch, want) in cases {
        let got = smp(original, patch).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(got, want, "{name}");
    }
}

#[test]
fn strategic_merge_patch_errors() {
    let cases: Vec<(&str, Value, Value, u16)> = vec![
        (
            "bad $patch on a map",
            json!({}),
            json!({"metadata": {"$patch": "explode"}}),
            400,
        ),
        (
            "$patch merge in a list",
            json!({}),
            json!({"secrets": [{"$patch": "merge"}]}),
            400,
        ),
        (
            "delete without merge key",
            json!({"secrets": [{"name": "a"}]}),
            json!({"secrets": [{"$patch": "delete"}]}),
            400,
        ),
        (
            "merging item without key",
            json!({"secrets": [{"name": "a"}]}),
            json!({"secrets": [{"kind": "x"}]}),
            400,
        ),
        (
            "retainKeys not a list",
            json!({}),
            json!({"spec": {"$retainKeys": "a"}}),
            400,
        ),
        (
            "retainKeys missing a patched key",
            json!({}),
            json!({"spec": {"$retainKeys": ["a"], "b": 1}}),
            400,
        ),
        (
            "setElementOrder not a list",
            json!({}),
            json!({"$setElementOrder/secrets": 3}),
            400,
        ),
        (
            "setElementOrder contradicting the patch order",
            json!({}),
            json!({"$setElementOrder/secrets": [{"name": "a"}, {"name": "b"}],
                   "secrets": [{"name": "b"}, {"name": "a"}]}),
            400,
        ),
        (
            "list of lists",
            json!({"metadata": {"finalizers": [["a"]]}}),
            json!({"metadata": {"finalizers": [["b"]]}}),
            422,
        ),
        ("patch is a list", json!({}), json!([1]), 400),
    ];
    for (name, original, patch, want) in cases {
        let err = smp(original, patch).expect_err(name);
        assert_eq!(code(&err), want, "{name}: {err}");
    }
    let err = apply_patch(PatchType::StrategicMerge, &json!({}), b"{", &sa()).unwrap_err();
    assert_eq!(code(&err), 400);
    let err = apply_patch(PatchType::Apply, &json!({}), b"{}", &sa()).unwrap_err();
    assert_eq!(code(&err), 415);
}
