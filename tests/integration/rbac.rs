//! RBAC with real kubectl: roles and bindings, `auth can-i`, 403 messages as upstream's,
//! escalation refused with nothing stored, the bootstrap policy (anonymous health, aggregated
//! view), and the other authorization modes.

use crate::support::{get_text, kubectl_with, output_text as text, Options, TestServer};
use std::path::PathBuf;

/// A server with token users alice, bob and dana (dana in group `auditors`).
async fn server_with_users(extra: &[&str]) -> (TestServer, tempfile::TempDir) {
    server_with_users_as(extra, Options::default()).await
}

async fn server_with_users_as(extra: &[&str], opts: Options) -> (TestServer, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let tokens = dir.path().join("tokens.csv");
    std::fs::write(
        &tokens,
        "alice-token,alice,uid-a\nbob-token,bob,uid-b\ndana-token,dana,uid-d,auditors\n",
    )
    .unwrap();
    let mut args = vec![
        "--token-auth-file".to_string(),
        tokens.display().to_string(),
    ];
    args.extend(extra.iter().map(|s| s.to_string()));
    (TestServer::start_with(opts.args(args)).await, dir)
}

fn as_user(server: &TestServer, user: &str) -> PathBuf {
    server.token_kubeconfig(user, &format!("{user}-token"))
}

#[tokio::test]
async fn roles_bindings_and_can_i_with_kubectl() {
    let (server, _dir) = server_with_users(&[]).await;
    server.kubectl_ok(&["create", "namespace", "team-a"]).await;
    server
        .kubectl_ok(&[
            "create",
            "role",
            "cm-reader",
            "--verb=get,list",
            "--resource=configmaps",
            "-n",
            "team-a",
        ])
        .await;
    server
        .kubectl_ok(&[
            "create",
            "rolebinding",
            "alice-reads",
            "--role=cm-reader",
            "--user=alice",
            "-n",
            "team-a",
        ])
        .await;
    server
        .kubectl_ok(&[
            "create",
            "configmap",
            "settings",
            "--from-literal=a=b",
            "-n",
            "team-a",
        ])
        .await;
    let alice = as_user(&server, "alice");

    let o = kubectl_with(&alice, &["get", "configmaps", "-n", "team-a"]).await;
    assert!(o.status.success(), "{}", text(&o));
    assert!(text(&o).contains("settings"));

    // Outside the grant: upstream's 403 message, and nothing changes.
    let o = kubectl_with(&alice, &["create", "configmap", "x", "-n", "team-a"]).await;
    assert!(!o.status.success());
    assert!(
        text(&o).contains(
            r#"configmaps is forbidden: User "alice" cannot create resource "configmaps" in API group "" in the namespace "team-a""#
        ),
        "{}",
        text(&o)
    );
    let o = kubectl_with(&alice, &["get", "configmaps", "-n", "default"]).await;
    assert!(
        text(&o).contains(r#"User "alice" cannot list resource "configmaps" in API group "" in the namespace "default""#),
        "{}",
        text(&o)
    );
    let o = kubectl_with(&alice, &["get", "namespaces"]).await;
    assert!(
        text(&o).contains(
            r#"User "alice" cannot list resource "namespaces" in API group "" at the cluster scope"#
        ),
        "{}",
        text(&o)
    );
    assert!(
        server
            .kubectl(&["get", "configmap", "x", "-n", "team-a"])
            .await
            .status
            .code()
            != Some(0)
    );

    // auth can-i, as alice and about her.
    let o = kubectl_with(
        &alice,
        &["auth", "can-i", "list", "configmaps", "-n", "team-a"],
    )
    .await;
    assert_eq!(
        (o.status.code(), String::from_utf8_lossy(&o.stdout).trim()),
        (Some(0), "yes")
    );
    let o = kubectl_with(
        &alice,
        &["auth", "can-i", "delete", "configmaps", "-n", "team-a"],
    )
    .await;
    assert_eq!(
        (o.status.code(), String::from_utf8_lossy(&o.stdout).trim()),
        (Some(1), "no")
    );
    let listed = text(&kubectl_with(&alice, &["auth", "can-i", "--list", "-n", "team-a"]).await);
    let row = listed
        .lines()
        .find(|l| l.starts_with("configmaps "))
        .unwrap_or_else(|| panic!("{listed}"));
    assert!(row.contains("[get list]"), "{row}");
    // The bootstrap policy lets every authenticated user discover and review itself.
    assert!(
        listed.contains("selfsubjectaccessreviews.authorization.k8s.io"),
        "{listed}"
    );

    // Impersonation: the admin acts as alice; bob may not.
    let o = server
        .kubectl(&[
            "auth",
            "can-i",
            "list",
            "configmaps",
            "-n",
            "team-a",
            "--as",
            "alice",
        ])
        .await;
    assert_eq!(
        String::from_utf8_lossy(&o.stdout).trim(),
        "yes",
        "{}",
        text(&o)
    );
    let o = server
        .kubectl(&[
            "auth", "can-i", "list", "secrets", "-n", "team-a", "--as", "alice",
        ])
        .await;
    assert_eq!(
        String::from_utf8_lossy(&o.stdout).trim(),
        "no",
        "{}",
        text(&o)
    );
    let o = server
        .kubectl(&["get", "configmaps", "-n", "default", "--as", "alice"])
        .await;
    assert!(
        text(&o).contains(r#"User "alice" cannot list resource "configmaps""#),
        "{}",
        text(&o)
    );
    let whoami = server
        .kubectl_ok(&[
            "auth",
            "whoami",
            "--as",
            "alice",
            "--as-group",
            "devs",
            "-o",
            "json",
        ])
        .await;
    let who: serde_json::Value = serde_json::from_str(&whoami).unwrap();
    assert_eq!(who["status"]["userInfo"]["username"], "alice");
    assert_eq!(
        who["status"]["userInfo"]["groups"],
        serde_json::json!(["devs", "system:authenticated"])
    );
    let bob = as_user(&server, "bob");
    let o = kubectl_with(
        &bob,
        &["get", "configmaps", "-n", "team-a", "--as", "alice"],
    )
    .await;
    assert!(
        text(&o).contains(
            r#"users "alice" is forbidden: User "bob" cannot impersonate resource "users" in API group "" at the cluster scope"#
        ),
        "{}",
        text(&o)
    );

    // A SubjectAccessReview by the admin about bob, in a namespace.
    let sar = r#"{"apiVersion":"authorization.k8s.io/v1","kind":"SubjectAccessReview",
        "spec":{"user":"alice","resourceAttributes":{"namespace":"team-a","verb":"get","resource":"configmaps"}}}"#;
    let (code, body) = post_json(
        &server,
        "/apis/authorization.k8s.io/v1/subjectaccessreviews",
        sar,
    )
    .await;
    assert_eq!(code, 201, "{body}");
    let v: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(v["status"]["allowed"], true);
    assert_eq!(
        v["status"]["reason"],
        r#"RBAC: allowed by RoleBinding "alice-reads/team-a" of Role "cm-reader" to User "alice""#
    );
}

async fn post_json(server: &TestServer, path: &str, body: &str) -> (u16, String) {
    let resp = server
        .admin_http()
        .post(server.url(path))
        .header("content-type", "application/json")
        .body(body.to_string())
        .send()
        .await
        .unwrap();
    (resp.status().as_u16(), resp.text().await.unwrap())
}

#[tokio::test]
async fn view_cannot_edit_groups_and_aggregation() {
    let (server, _dir) = server_with_users(&[]).await;
    server.kubectl_ok(&["create", "namespace", "team-a"]).await;
    server
        .kubectl_ok(&[
            "create",
            "rolebinding",
            "auditors-view",
            "--clusterrole=view",
            "--group=auditors",
            "-n",
            "team-a",
        ])
        .await;
    server
        .kubectl_ok(&["create", "configmap", "c", "-n", "team-a"])
        .await;
    let dana = as_user(&server, "dana");
    let o = kubectl_with(
        &dana,
        &["get", "configmap", "c", "-n", "team-a", "-o", "name"],
    )
    .await;
    assert_eq!(
        String::from_utf8_lossy(&o.stdout).trim(),
        "configmap/c",
        "{}",
        text(&o)
    );
    let o = kubectl_with(&dana, &["delete", "configmap", "c", "-n", "team-a"]).await;
    assert!(
        text(&o).contains(
            r#"configmaps "c" is forbidden: User "dana" cannot delete resource "configmaps" in API group "" in the namespace "team-a""#
        ),
        "{}",
        text(&o)
    );
    server
        .kubectl_ok(&["get", "configmap", "c", "-n", "team-a"])
        .await;
    // view does not include secrets.
    let o = kubectl_with(&dana, &["get", "secrets", "-n", "team-a"]).await;
    assert!(!o.status.success());

    // A ClusterRole labelled to aggregate into view extends what view grants.
    let o = kubectl_with(
        &dana,
        &[
            "auth",
            "can-i",
            "list",
            "leases.coordination.k8s.io",
            "-n",
            "team-a",
        ],
    )
    .await;
    assert_eq!(String::from_utf8_lossy(&o.stdout).trim(), "no");
    let extra = r#"{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRole",
        "metadata":{"name":"lease-viewer","labels":{"rbac.authorization.k8s.io/aggregate-to-view":"true"}},
        "rules":[{"apiGroups":["coordination.k8s.io"],"resources":["leases"],"verbs":["get","list","watch"]}]}"#;
    let (code, body) = post_json(
        &server,
        "/apis/rbac.authorization.k8s.io/v1/clusterroles",
        extra,
    )
    .await;
    assert_eq!(code, 201, "{body}");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        let o = kubectl_with(
            &dana,
            &[
                "auth",
                "can-i",
                "list",
                "leases.coordination.k8s.io",
                "-n",
                "team-a",
            ],
        )
        .await;
        if String::from_utf8_lossy(&o.stdout).trim() == "yes" {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "view never aggregated lease-viewer"
        );
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    let view = server
        .kubectl_ok(&["get", "clusterrole", "view", "-o", "json"])
        .await;
    assert!(view.contains("coordination.k8s.io"), "{view}");
}

#[tokio::test]
async fn escalation_is_refused_and_nothing_is_stored() {
    let (server, _dir) = server_with_users(&[]).await;
    server.kubectl_ok(&["create", "namespace", "team-a"]).await;
    server.kubectl_ok(&["create", "role", "maker", "--verb=get,create", "--resource=roles.rbac.authorization.k8s.io,rolebindings.rbac.authorization.k8s.io,configmaps", "-n", "team-a"],
    )
    .await;
    server
        .kubectl_ok(&[
            "create",
            "rolebinding",
            "alice-makes",
            "--role=maker",
            "--user=alice",
            "-n",
            "team-a",
        ])
        .await;
    let alice = as_user(&server, "alice");
    // Within what alice holds.
    let o = kubectl_with(
        &alice,
        &[
            "create",
            "role",
            "small",
            "--verb=get",
            "--resource=configmaps",
            "-n",
            "team-a",
        ],
    )
    .await;
    assert!(o.status.success(), "{}", text(&o));
    // More than she holds.
    let o = kubectl_with(
        &alice,
        &[
            "create",
            "role",
            "big",
            "--verb=get,delete",
            "--resource=configmaps",
            "-n",
            "team-a",
        ],
    )
    .await;
    assert!(!o.status.success());
    assert!(
        text(&o).contains(
            "roles.rbac.authorization.k8s.io \"big\" is forbidden: user \"alice\" (groups=[\"system:authenticated\"]) is attempting to grant RBAC permissions not currently held:\n{APIGroups:[\"\"], Resources:[\"configmaps\"], Verbs:[\"delete\"]}"
        ),
        "{}",
        text(&o)
    );
    let o = server
        .kubectl(&["get", "role", "big", "-n", "team-a"])
        .await;
    assert!(!o.status.success(), "the refused role was not stored");
    // Binding a role she does not hold (edit) is refused; one she holds is not.
    let o = kubectl_with(
        &alice,
        &[
            "create",
            "rolebinding",
            "b1",
            "--clusterrole=edit",
            "--user=bob",
            "-n",
            "team-a",
        ],
    )
    .await;
    assert!(
        text(&o).contains("is attempting to grant RBAC permissions not currently held"),
        "{}",
        text(&o)
    );
    let o = kubectl_with(
        &alice,
        &[
            "create",
            "rolebinding",
            "b2",
            "--role=small",
            "--user=bob",
            "-n",
            "team-a",
        ],
    )
    .await;
    assert!(o.status.success(), "{}", text(&o));
}

#[tokio::test]
async fn anonymous_reaches_health_and_version_only() {
    let server = TestServer::start().await;
    let anon = server.anonymous_http();
    for path in ["/healthz", "/livez", "/readyz", "/version"] {
        let (code, body) = get_text(&anon, &server.url(path)).await;
        assert_eq!(code, 200, "{path}: {body}");
    }
    // As upstream's system:public-info-viewer: the checks' own paths are not public.
    let (code, _) = get_text(&anon, &server.url("/readyz/etcd")).await;
    assert_eq!(code, 403);
    let (code, body) = get_text(&anon, &server.url("/api")).await;
    assert_eq!(
        (code, body.as_str()),
        (
            403,
            r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"forbidden: User \"system:anonymous\" cannot get path \"/api\"","reason":"Forbidden","details":{},"code":403}"#
        )
    );
    let (code, body) = get_text(&anon, &server.url("/api/v1/namespaces/default/configmaps")).await;
    assert_eq!(
        (code, body.as_str()),
        (
            403,
            r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"configmaps is forbidden: User \"system:anonymous\" cannot list resource \"configmaps\" in API group \"\" in the namespace \"default\"","reason":"Forbidden","details":{"kind":"configmaps"},"code":403}"#
        )
    );
}

#[tokio::test]
async fn always_allow_and_always_deny_modes() {
    let (server, _dir) = server_with_users(&["--authorization-mode=AlwaysAllow"]).await;
    let bob = as_user(&server, "bob");
    let o = kubectl_with(&bob, &["create", "configmap", "x", "-n", "default"]).await;
    assert!(o.status.success(), "{}", text(&o));
    // Without RBAC there is no bootstrap policy to reconcile.
    let (code, body) = get_text(&server.admin_http(), &server.url("/readyz?verbose")).await;
    assert_eq!(code, 200);
    assert!(!body.contains("rbac/bootstrap-roles"), "{body}");
    drop(server);

    // Anonymous users may not read /readyz either: the harness probes as the admin.
    let (server, _dir) = server_with_users_as(
        &["--authorization-mode=AlwaysDeny"],
        Options::default().probe_as_admin(),
    )
    .await;
    // Even discovery is forbidden, so kubectl gives up early: ask over HTTP.
    let resp = server
        .anonymous_http()
        .get(server.url("/api/v1/namespaces/default/configmaps"))
        .bearer_auth("bob-token")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 403);
    let status: serde_json::Value = resp.json().await.unwrap();
    assert_eq!(
        status["message"],
        r#"configmaps is forbidden: User "bob" cannot list resource "configmaps" in API group "" in the namespace "default": Everything is forbidden."#
    );
    // system:masters is allowed whatever the modes.
    server
        .kubectl_ok(&["get", "configmaps", "-n", "default"])
        .await;
}

#[tokio::test]
async fn bootstrap_policy_is_reconciled_without_undoing_changes() {
    let dir = std::sync::Arc::new(tempfile::tempdir().unwrap());
    let server = TestServer::start_with(Options::default().data_dir(dir.clone())).await;
    for role in [
        "cluster-admin",
        "admin",
        "edit",
        "view",
        "system:public-info-viewer",
    ] {
        server.kubectl_ok(&["get", "clusterrole", role]).await;
    }
    let (code, body) = get_text(&server.admin_http(), &server.url("/readyz?verbose")).await;
    assert_eq!(code, 200);
    assert!(
        body.contains("[+]poststarthook/rbac/bootstrap-roles ok"),
        "{body}"
    );
    // The namespaced bootstrap roles: extension API servers read the auth ConfigMap through
    // extension-apiserver-authentication-reader (bound here to the scheduler's user).
    let can_i = |what: &'static str| {
        let server = &server;
        async move {
            let out = server
                .kubectl(&[
                    "auth",
                    "can-i",
                    "get",
                    what,
                    "-n",
                    "kube-system",
                    "--as",
                    "system:kube-scheduler",
                ])
                .await;
            String::from_utf8_lossy(&out.stdout).trim().to_string()
        }
    };
    assert_eq!(
        can_i("configmap/extension-apiserver-authentication").await,
        "yes"
    );
    assert_eq!(can_i("configmap/other").await, "no");
    // Narrowed or deleted namespaced objects come back at the next start.
    server
        .kubectl_ok(&[
            "patch",
            "role",
            "extension-apiserver-authentication-reader",
            "-n",
            "kube-system",
            "--type=json",
            "-p",
            r#"[{"op":"replace","path":"/rules","value":[]}]"#,
        ])
        .await;
    server
        .kubectl_ok(&[
            "delete",
            "rolebinding",
            "-n",
            "kube-public",
            "system:controller:bootstrap-signer",
        ])
        .await;
    // A user narrows one role (kept: the rule it lost is put back, the one it gained stays),
    // and opts another out of reconciliation.
    server.kubectl_ok(&["patch", "clusterrole", "system:public-info-viewer", "--type=json", "-p",
          r#"[{"op":"replace","path":"/rules","value":[{"verbs":["get"],"nonResourceURLs":["/metrics"]}]}]"#],
    )
    .await;
    server.kubectl_ok(&["patch", "clusterrole", "system:monitoring", "--type=merge", "-p",
          r#"{"metadata":{"annotations":{"rbac.authorization.kubernetes.io/autoupdate":"false"}},"rules":[]}"#],
    )
    .await;
    drop(server);
    let server = TestServer::start_with(Options::default().data_dir(dir.clone())).await;
    let viewer = server
        .kubectl_ok(&[
            "get",
            "clusterrole",
            "system:public-info-viewer",
            "-o",
            "json",
        ])
        .await;
    assert!(
        viewer.contains("/metrics") && viewer.contains("/livez"),
        "{viewer}"
    );
    let monitoring = server
        .kubectl_ok(&[
            "get",
            "clusterrole",
            "system:monitoring",
            "-o",
            "jsonpath={.rules}",
        ])
        .await;
    assert!(
        monitoring.trim().is_empty() || monitoring.trim() == "[]",
        "{monitoring}"
    );
    let reader = server
        .kubectl_ok(&[
            "get",
            "role",
            "-n",
            "kube-system",
            "extension-apiserver-authentication-reader",
            "-o",
            "json",
        ])
        .await;
    assert!(
        reader.contains("\"extension-apiserver-authentication\""),
        "{reader}"
    );
    server
        .kubectl_ok(&[
            "get",
            "rolebinding",
            "-n",
            "kube-public",
            "system:controller:bootstrap-signer",
        ])
        .await;
}

#[tokio::test]
async fn put_creates_rbac_objects_but_not_others() {
    let server = TestServer::start().await;
    let admin = server.admin_http();
    let role = serde_json::json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
        "metadata": {"name": "put-made"},
        "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}]});
    let path = "/apis/rbac.authorization.k8s.io/v1/clusterroles/put-made";
    let resp = admin
        .put(server.url(path))
        .json(&role)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 201, "{}", resp.text().await.unwrap());
    let resp = admin
        .put(server.url(path))
        .json(&role)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    // A resourceVersion names an object that must exist.
    let mut gone = role.clone();
    gone["metadata"] = serde_json::json!({"name": "never", "resourceVersion": "12"});
    let resp = admin
        .put(server.url("/apis/rbac.authorization.k8s.io/v1/clusterroles/never"))
        .json(&gone)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 404);
    let cm =
        serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "nope"}});
    let resp = admin
        .put(server.url("/api/v1/namespaces/default/configmaps/nope"))
        .json(&cm)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 404);
}
