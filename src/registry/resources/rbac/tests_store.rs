//! Writes of the RBAC resources through the generic store on the embedded storage: names
//! that are no DNS subdomains, rule validation, the binding defaults and the immutable roleRef.

use super::tests::texts;
use super::GROUP;
use crate::registry::error::Error;
use crate::registry::tests::{create, ctx, make_ns, registry, store, timed};
use serde_json::{json, Value};

#[tokio::test]
async fn store_accepts_rbac_names_and_rejects_bad_rules() {
    let (_d, r) = registry().await;
    let crs = store(&r, GROUP, "v1", "clusterroles");
    let created = timed(create(
        crs,
        &ctx(""),
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
            "metadata": {"name": "system:aggregate-to-view"},
            "rules": [{"verbs": ["get"], "nonResourceURLs": ["/healthz"]}]}),
    ))
    .await
    .unwrap();
    assert_eq!(created["metadata"]["name"], "system:aggregate-to-view");

    timed(make_ns(&r, "team")).await;
    let roles = store(&r, GROUP, "v1", "roles");
    let bad = timed(create(
        roles,
        &ctx("team"),
        json!({"metadata": {"name": "r"},
            "rules": [{"verbs": ["get"], "nonResourceURLs": ["/healthz"]}]}),
    ))
    .await;
    let Err(Error::Invalid { kind, errors, .. }) = bad else {
        panic!("{bad:?}")
    };
    assert_eq!(kind, "Role");
    assert_eq!(
        texts(&errors),
        ["rules[0].nonResourceURLs: Invalid value: []string{\"/healthz\"}: namespaced rules cannot apply to non-resource URLs"]
    );
}

#[tokio::test]
async fn store_defaults_bindings_and_keeps_the_role_ref() {
    let (_d, r) = registry().await;
    timed(make_ns(&r, "team")).await;
    let rbs = store(&r, GROUP, "v1", "rolebindings");
    let created = timed(create(
        rbs,
        &ctx("team"),
        json!({"metadata": {"name": "b"},
            "roleRef": {"kind": "Role", "name": "reader"},
            "subjects": [{"kind": "User", "name": "alice"}]}),
    ))
    .await
    .unwrap();
    assert_eq!(created["roleRef"]["apiGroup"], GROUP);
    assert_eq!(created["subjects"][0]["apiGroup"], GROUP);

    // Subjects may change; the roleRef may not.
    let mut more = created.clone();
    more["subjects"] = json!([{"kind": "Group", "name": "devs"}]);
    let t = move |_: Option<&Value>| Ok(more.clone());
    let updated = timed(rbs.update(&ctx("team"), "b", "", false, &t))
        .await
        .unwrap();
    assert_eq!(updated.object.obj["subjects"][0]["apiGroup"], GROUP);
    let mut other_role = created.clone();
    other_role["roleRef"]["kind"] = json!("ClusterRole");
    other_role["metadata"]["resourceVersion"] =
        updated.object.obj["metadata"]["resourceVersion"].clone();
    let t = move |_: Option<&Value>| Ok(other_role.clone());
    let refused = timed(rbs.update(&ctx("team"), "b", "", false, &t)).await;
    let Err(Error::Invalid { errors, .. }) = refused else {
        panic!("{refused:?}")
    };
    assert_eq!(
        texts(&errors),
        ["roleRef: Invalid value: rbac.RoleRef{APIGroup:\"rbac.authorization.k8s.io\", Kind:\"ClusterRole\", Name:\"reader\"}: cannot change roleRef"]
    );
}
