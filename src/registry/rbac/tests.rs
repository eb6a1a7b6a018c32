use super::escalation::{check_binding, check_role, Access};
use super::*;
use crate::registry::Context;
use http::Method;
use serde_json::{json, Value};

use crate::api::test_user as user;

fn req(method: Method, path: &str) -> RequestInfo {
    RequestInfo::parse(&method, path, None)
}

fn role(kind: &str, ns: &str, name: &str, rules: Value) -> Value {
    json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": kind,
           "metadata": {"name": name, "namespace": ns}, "rules": rules})
}

fn binding(
    kind: &str,
    ns: &str,
    name: &str,
    role_kind: &str,
    role: &str,
    subjects: Value,
) -> Value {
    json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": kind,
           "metadata": {"name": name, "namespace": ns},
           "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": role_kind, "name": role},
           "subjects": subjects})
}

fn reader() -> Value {
    json!([{"verbs": ["get", "list"], "apiGroups": [""], "resources": ["configmaps"]}])
}

/// An authorizer over `objects`, as if followed from storage.
fn rbac(objects: &[(Kind, Value)]) -> Arc<Rbac> {
    let rbac = Rbac::new();
    for (kind, obj) in objects {
        rbac.write().put(*kind, obj);
    }
    rbac
}

#[test]
fn subjects_of_every_kind_are_granted_in_their_scope() {
    let r = rbac(&[
        (
            Kind::ClusterRole,
            role("ClusterRole", "", "reader", reader()),
        ),
        (
            Kind::RoleBinding,
            binding(
                "RoleBinding",
                "team-a",
                "readers",
                "ClusterRole",
                "reader",
                json!([
                    {"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": "bob"},
                    {"kind": "Group", "apiGroup": "rbac.authorization.k8s.io", "name": "auditors"},
                    {"kind": "ServiceAccount", "name": "builder"},
                    {"kind": "ServiceAccount", "name": "deployer", "namespace": "ci"},
                ]),
            ),
        ),
    ]);
    let get_a = req(Method::GET, "/api/v1/namespaces/team-a/configmaps/x");
    let get_b = req(Method::GET, "/api/v1/namespaces/team-b/configmaps/x");
    let bob = user("bob", &["system:authenticated"]);
    let decision = r.authorize(&bob, &get_a);
    assert_eq!(
        decision,
        Decision::Allow(Arc::from(
            r#"RBAC: allowed by RoleBinding "readers/team-a" of ClusterRole "reader" to User "bob""#
        ))
    );
    assert!(
        !r.authorize(&bob, &get_b).allowed(),
        "a RoleBinding grants in its namespace only"
    );
    assert!(!r
        .authorize(
            &bob,
            &req(Method::DELETE, "/api/v1/namespaces/team-a/configmaps/x")
        )
        .allowed());
    assert!(r.authorize(&user("carol", &["auditors"]), &get_a).allowed());
    // A ServiceAccount subject without a namespace is the binding's namespace's.
    let builder = user(
        "system:serviceaccount:team-a:builder",
        &["system:serviceaccounts"],
    );
    assert!(r.authorize(&builder, &get_a).allowed());
    assert!(!r
        .authorize(&user("system:serviceaccount:team-b:builder", &[]), &get_a)
        .allowed());
    let deployer = user("system:serviceaccount:ci:deployer", &[]);
    assert_eq!(
        r.authorize(&deployer, &get_a).reason(),
        r#"RBAC: allowed by RoleBinding "readers/team-a" of ClusterRole "reader" to ServiceAccount "deployer/ci""#
    );
    // A user named like a group is not in it.
    assert!(!r.authorize(&user("auditors", &[]), &get_a).allowed());
}

#[test]
fn cluster_bindings_roles_and_non_resource_urls() {
    let r = rbac(&[
        (
            Kind::ClusterRole,
            role(
                "ClusterRole",
                "",
                "health",
                json!([{"verbs": ["get"], "nonResourceURLs": ["/healthz", "/readyz*"]}]),
            ),
        ),
        (
            Kind::ClusterRoleBinding,
            binding(
                "ClusterRoleBinding",
                "",
                "health",
                "ClusterRole",
                "health",
                json!([
                {"kind": "Group", "apiGroup": "rbac.authorization.k8s.io", "name": "system:unauthenticated"}]),
            ),
        ),
        (Kind::Role, role("Role", "team-a", "cm", reader())),
        (
            Kind::RoleBinding,
            binding(
                "RoleBinding",
                "team-a",
                "cm",
                "Role",
                "cm",
                json!([
                {"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": "bob"}]),
            ),
        ),
    ]);
    let anon = UserInfo::anonymous();
    assert!(r.authorize(&anon, &req(Method::GET, "/healthz")).allowed());
    assert!(r
        .authorize(&anon, &req(Method::GET, "/readyz/etcd"))
        .allowed());
    assert!(!r.authorize(&anon, &req(Method::GET, "/version")).allowed());
    assert!(!r
        .authorize(
            &anon,
            &req(Method::GET, "/api/v1/namespaces/team-a/configmaps")
        )
        .allowed());
    let bob = user("bob", &[]);
    assert!(r
        .authorize(
            &bob,
            &req(Method::GET, "/api/v1/namespaces/team-a/configmaps")
        )
        .allowed());
    // Cluster-wide lists need a cluster-wide grant.
    assert!(!r
        .authorize(&bob, &req(Method::GET, "/api/v1/configmaps"))
        .allowed());
    let rules = r.rules_for(&bob, "team-a");
    assert_eq!(rules.resource.len(), 1);
    assert!(rules.non_resource.is_empty());
    assert!(rules.evaluation_error.is_empty());
}

#[test]
fn a_missing_role_grants_nothing_and_says_so() {
    let r = rbac(&[(
        Kind::ClusterRoleBinding,
        binding(
            "ClusterRoleBinding",
            "",
            "b",
            "ClusterRole",
            "gone",
            json!([
            {"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": "bob"}]),
        ),
    )]);
    let bob = user("bob", &[]);
    assert_eq!(
        r.authorize(&bob, &req(Method::GET, "/api")),
        Decision::NoOpinion(
            r#"RBAC: clusterrole.rbac.authorization.k8s.io "gone" not found"#.into()
        )
    );
    // Once the role exists the binding takes effect; once the binding goes, nothing is left.
    r.write().put(
        Kind::ClusterRole,
        &role(
            "ClusterRole",
            "",
            "gone",
            json!([{"verbs": ["get"], "nonResourceURLs": ["/api"]}]),
        ),
    );
    assert!(r.authorize(&bob, &req(Method::GET, "/api")).allowed());
    r.write().delete(Kind::ClusterRoleBinding, "", "b");
    assert_eq!(
        r.authorize(&bob, &req(Method::GET, "/api")),
        Decision::NoOpinion(String::new())
    );
}

#[test]
fn changing_a_bindings_subjects_moves_its_grants() {
    let r = rbac(&[(
        Kind::ClusterRole,
        role("ClusterRole", "", "reader", reader()),
    )]);
    let get = req(Method::GET, "/api/v1/namespaces/a/configmaps/x");
    let b = |who: &str| {
        binding(
            "RoleBinding",
            "a",
            "b",
            "ClusterRole",
            "reader",
            json!([
            {"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": who},
            {"kind": "Group", "apiGroup": "rbac.authorization.k8s.io", "name": "g"}]),
        )
    };
    r.write().put(Kind::RoleBinding, &b("bob"));
    assert!(r.authorize(&user("bob", &["g"]), &get).allowed());
    r.write().put(Kind::RoleBinding, &b("carol"));
    assert!(!r.authorize(&user("bob", &[]), &get).allowed());
    assert!(r.authorize(&user("carol", &[]), &get).allowed());
    // Named and in the group: the binding's rules come once.
    assert_eq!(r.rules(&user("carol", &["g"]), "a").0.len(), 1);
}

#[tokio::test]
async fn follows_the_stored_objects() {
    let (_dir, registry) = crate::registry::tests::registry().await;
    crate::registry::tests::make_ns(&registry, "default").await;
    let registry = Arc::new(registry);
    let rbac = registry.rbac().clone();
    let tasks: Vec<_> = Kind::ALL
        .into_iter()
        .map(|kind| {
            let registry = registry.clone();
            tokio::spawn(async move { registry.rbac().follow(&registry, kind).await })
        })
        .collect();
    tokio::time::timeout(std::time::Duration::from_secs(10), rbac.wait_synced())
        .await
        .expect("every kind is listed");
    let ctx = Context::default();
    let create = |kind: Kind, obj: Value| {
        let registry = registry.clone();
        async move {
            let store = rbac_store(&registry, kind).unwrap();
            let ctx = Context {
                namespace: obj["metadata"]["namespace"].as_str().unwrap_or("").into(),
                ..Context::default()
            };
            let (obj, _) = store.decode_request(&ctx, obj).unwrap();
            store.create(&ctx, obj).await.unwrap();
        }
    };
    let mut cr = role("ClusterRole", "", "reader", reader());
    cr["metadata"].as_object_mut().unwrap().remove("namespace");
    create(Kind::ClusterRole, cr).await;
    create(
        Kind::RoleBinding,
        binding(
            "RoleBinding",
            "default",
            "r",
            "ClusterRole",
            "reader",
            json!([
            {"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": "bob"}]),
        ),
    )
    .await;
    let bob = user("bob", &[]);
    let get = req(Method::GET, "/api/v1/namespaces/default/configmaps/x");
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(10);
    while !rbac.authorize(&bob, &get).allowed() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the binding takes effect"
        );
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    let store = rbac_store(&registry, Kind::RoleBinding).unwrap();
    let ns = Context {
        namespace: "default".into(),
        ..ctx
    };
    store
        .delete(&ns, "r", &crate::registry::DeleteOptions::default())
        .await
        .unwrap();
    while rbac.authorize(&bob, &get).allowed() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the deleted binding stops granting"
        );
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    for t in tasks {
        t.abort();
    }
}

fn access(r: &Arc<Rbac>, who: UserInfo) -> Access {
    Access {
        user: Arc::new(who),
        authorizer: r.clone(),
        rbac: r.clone(),
    }
}

#[test]
fn roles_and_bindings_cannot_grant_more_than_their_writer_holds() {
    let r = rbac(&[
        (
            Kind::ClusterRole,
            role("ClusterRole", "", "reader", reader()),
        ),
        (
            Kind::ClusterRole,
            role(
                "ClusterRole",
                "",
                "writer",
                json!([{"verbs": ["*"], "apiGroups": [""], "resources": ["configmaps"]}]),
            ),
        ),
        (
            Kind::RoleBinding,
            binding(
                "RoleBinding",
                "a",
                "bob-reads",
                "ClusterRole",
                "reader",
                json!([
                {"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": "bob"}]),
            ),
        ),
    ]);
    let bob = access(&r, user("bob", &["system:authenticated"]));
    // Within what bob holds: allowed.
    let ok = role(
        "Role",
        "a",
        "r",
        json!([{"verbs": ["get"], "apiGroups": [""], "resources": ["configmaps"]}]),
    );
    check_role(&bob, "roles", "a", &ok, None).unwrap();
    // More: refused with upstream's message.
    let more = role(
        "Role",
        "a",
        "r",
        json!([{"verbs": ["get", "delete"], "apiGroups": [""], "resources": ["configmaps", "secrets"]}]),
    );
    let Err(Error::Forbidden {
        group,
        resource,
        name,
        message,
        ..
    }) = check_role(&bob, "roles", "a", &more, None)
    else {
        panic!("an escalation is refused")
    };
    assert_eq!(
        (group.as_str(), resource.as_str(), name.as_str()),
        ("rbac.authorization.k8s.io", "roles", "r")
    );
    assert_eq!(
        message,
        "user \"bob\" (groups=[\"system:authenticated\"]) is attempting to grant RBAC permissions not currently held:\n\
         {APIGroups:[\"\"], Resources:[\"configmaps\"], Verbs:[\"delete\"]}\n\
         {APIGroups:[\"\"], Resources:[\"secrets\"], Verbs:[\"get\" \"delete\"]}"
    );
    // Binding the reader role in a: bob holds it there; the writer role he does not.
    let bind = |role: &str| {
        binding(
            "RoleBinding",
            "a",
            "x",
            "ClusterRole",
            role,
            json!([
            {"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": "carol"}]),
        )
    };
    check_binding(&bob, "rolebindings", "a", &bind("reader"), None).unwrap();
    assert!(matches!(
        check_binding(&bob, "rolebindings", "a", &bind("writer"), None),
        Err(Error::Forbidden { .. })
    ));
    // A binding to a role that does not exist cannot be checked.
    let Err(Error::Forbidden { message, .. }) =
        check_binding(&bob, "rolebindings", "a", &bind("nope"), None)
    else {
        panic!("a missing role is refused")
    };
    assert_eq!(
        message,
        r#"clusterrole.rbac.authorization.k8s.io "nope" not found"#
    );
    // system:masters may do anything.
    let admin = access(&r, user("admin", &["system:masters"]));
    check_role(&admin, "roles", "a", &more, None).unwrap();
    check_binding(&admin, "rolebindings", "a", &bind("writer"), None).unwrap();
}

#[test]
fn escalate_and_bind_verbs_allow_what_is_not_held() {
    let r = rbac(&[
        (
            Kind::ClusterRole,
            role(
                "ClusterRole",
                "",
                "role-admin",
                json!([
                {"verbs": ["escalate", "bind", "create"], "apiGroups": ["rbac.authorization.k8s.io"], "resources": ["clusterroles", "roles"]}]),
            ),
        ),
        (
            Kind::ClusterRoleBinding,
            binding(
                "ClusterRoleBinding",
                "",
                "ra",
                "ClusterRole",
                "role-admin",
                json!([
                {"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": "dana"}]),
            ),
        ),
        (
            Kind::ClusterRole,
            role(
                "ClusterRole",
                "",
                "everything",
                json!([{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}]),
            ),
        ),
    ]);
    let dana = access(&r, user("dana", &[]));
    let big = role(
        "ClusterRole",
        "",
        "big",
        json!([{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}]),
    );
    check_role(&dana, "clusterroles", "", &big, None).unwrap();
    let b = binding(
        "ClusterRoleBinding",
        "",
        "x",
        "ClusterRole",
        "everything",
        json!([
        {"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": "eve"}]),
    );
    check_binding(&dana, "clusterrolebindings", "", &b, None).unwrap();
    // Without escalate, an aggregationRule needs every permission there is.
    let ed = access(&r, user("ed", &[]));
    let mut agg = role("ClusterRole", "", "agg", json!([]));
    agg["aggregationRule"] = json!({"clusterRoleSelectors": [{"matchLabels": {"a": "b"}}]});
    let Err(Error::Forbidden { message, .. }) = check_role(&ed, "clusterroles", "", &agg, None)
    else {
        panic!("an aggregationRule needs cluster-admin")
    };
    assert_eq!(
        message,
        "must have cluster-admin privileges to use the aggregationRule"
    );
}
