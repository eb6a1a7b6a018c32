//! Service accounts: the `default` account of every namespace, `kubectl create token`, bound
//! tokens as credentials (RBAC through ServiceAccount subjects), revocation by deleting the
//! account or the bound secret, TokenReview, issuer discovery checked with a JWT library, the
//! Python client with a token, and two replicas on etcd accepting each other's tokens.

use crate::support::etcd::start_etcd;
use crate::support::{get_text, kubectl_with, output_text as text, within, TestServer};
use std::time::Duration;

/// Polls `f` every 50 ms until it is true (at most 20 s).
async fn eventually<F, Fut>(what: &str, mut f: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    within(Duration::from_secs(20), what, async {
        while !f().await {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await;
}

async fn status_with_token(server: &TestServer, path: &str, token: &str) -> (u16, String) {
    let resp = server
        .anonymous_http()
        .get(server.url(path))
        .bearer_auth(token)
        .send()
        .await
        .unwrap();
    (resp.status().as_u16(), resp.text().await.unwrap())
}

#[tokio::test]
async fn tokens_authenticate_their_service_account_until_it_is_gone() {
    let server = TestServer::start().await;
    server.kubectl_ok(&["create", "namespace", "team-a"]).await;
    // Every namespace gets a default service account.
    eventually("the default service account of team-a", || async {
        server
            .kubectl(&["get", "serviceaccount", "default", "-n", "team-a"])
            .await
            .status
            .success()
    })
    .await;
    server
        .kubectl_ok(&["create", "serviceaccount", "builder", "-n", "team-a"])
        .await;
    server
        .kubectl_ok(&[
            "create",
            "rolebinding",
            "builder-view",
            "--clusterrole=view",
            "--serviceaccount=team-a:builder",
            "-n",
            "team-a",
        ])
        .await;
    server
        .kubectl_ok(&["create", "configmap", "c", "-n", "team-a"])
        .await;
    let token = server
        .kubectl_ok(&[
            "create",
            "token",
            "builder",
            "-n",
            "team-a",
            "--duration",
            "1h",
        ])
        .await;
    let kubeconfig = server.token_kubeconfig("builder", &token);
    let o = kubectl_with(
        &kubeconfig,
        &["get", "configmaps", "-n", "team-a", "-o", "name"],
    )
    .await;
    assert_eq!(
        String::from_utf8_lossy(&o.stdout).trim(),
        "configmap/c",
        "{}",
        text(&o)
    );
    let o = kubectl_with(&kubeconfig, &["auth", "whoami", "-o", "json"]).await;
    let who: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(
        who["status"]["userInfo"]["username"],
        "system:serviceaccount:team-a:builder"
    );
    assert_eq!(
        who["status"]["userInfo"]["groups"],
        serde_json::json!([
            "system:serviceaccounts",
            "system:serviceaccounts:team-a",
            "system:authenticated"
        ])
    );
    // view does not let it write.
    let o = kubectl_with(&kubeconfig, &["delete", "configmap", "c", "-n", "team-a"]).await;
    assert!(
        text(&o).contains(
            r#"User "system:serviceaccount:team-a:builder" cannot delete resource "configmaps""#
        ),
        "{}",
        text(&o)
    );

    // Tampered, foreign-audience and garbage tokens: 401, never anonymous.
    let mut tampered = token.clone();
    let last = tampered.pop().unwrap();
    tampered.push(if last == 'A' { 'B' } else { 'A' });
    let vault = server
        .kubectl_ok(&[
            "create",
            "token",
            "builder",
            "-n",
            "team-a",
            "--audience",
            "vault",
        ])
        .await;
    for bad in [
        tampered.as_str(),
        vault.as_str(),
        "eyJhbGciOiJFUzI1NiJ9.e30.xx",
        "not-a-jwt",
    ] {
        let (code, _) =
            status_with_token(&server, "/api/v1/namespaces/team-a/configmaps", bad).await;
        assert_eq!(code, 401, "{bad}");
    }

    // TokenReview: the admin asks who the token is.
    let review = serde_json::json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview",
                                    "spec": {"token": token}});
    let resp = server
        .admin_http()
        .post(server.url("/apis/authentication.k8s.io/v1/tokenreviews"))
        .json(&review)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 201);
    let got: serde_json::Value = resp.json().await.unwrap();
    assert_eq!(got["status"]["authenticated"], true);
    assert_eq!(
        got["status"]["user"]["username"],
        "system:serviceaccount:team-a:builder"
    );
    let review = serde_json::json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview",
                                    "spec": {"token": vault, "audiences": ["vault"]}});
    let got: serde_json::Value = server
        .admin_http()
        .post(server.url("/apis/authentication.k8s.io/v1/tokenreviews"))
        .json(&review)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(got["status"]["audiences"], serde_json::json!(["vault"]));

    // A token bound to a secret dies with the secret; every token dies with the account.
    server
        .kubectl_ok(&["create", "secret", "generic", "s", "-n", "team-a"])
        .await;
    let bound = server
        .kubectl_ok(&[
            "create",
            "token",
            "builder",
            "-n",
            "team-a",
            "--bound-object-kind",
            "Secret",
            "--bound-object-name",
            "s",
        ])
        .await;
    let path = "/api/v1/namespaces/team-a/configmaps";
    assert_eq!(status_with_token(&server, path, &bound).await.0, 200);
    server
        .kubectl_ok(&["delete", "secret", "s", "-n", "team-a"])
        .await;
    eventually("the bound token to stop working", || async {
        status_with_token(&server, path, &bound).await.0 == 401
    })
    .await;
    assert_eq!(status_with_token(&server, path, &token).await.0, 200);
    server
        .kubectl_ok(&["delete", "serviceaccount", "builder", "-n", "team-a"])
        .await;
    eventually("the token of a deleted account to stop working", || async {
        status_with_token(&server, path, &token).await.0 == 401
    })
    .await;
    // A new account of the same name is another account.
    server
        .kubectl_ok(&["create", "serviceaccount", "builder", "-n", "team-a"])
        .await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(status_with_token(&server, path, &token).await.0, 401);

    // Bad requests.
    let o = server
        .kubectl(&[
            "create",
            "token",
            "builder",
            "-n",
            "team-a",
            "--duration",
            "5m",
        ])
        .await;
    assert!(
        text(&o).contains("spec.expirationSeconds: Invalid value: 300: may not specify a duration less than 10 minutes"),
        "{}",
        text(&o)
    );
    let o = server
        .kubectl(&["create", "token", "nobody", "-n", "team-a"])
        .await;
    assert!(
        text(&o).contains(r#"serviceaccounts "nobody" not found"#),
        "{}",
        text(&o)
    );
}

#[tokio::test]
async fn issuer_discovery_verifies_tokens_with_a_jwt_library() {
    let server = TestServer::start().await;
    let token = server
        .kubectl_ok(&["create", "token", "default", "-n", "default"])
        .await;
    // Service accounts may read the discovery documents; anonymous users may not.
    let (code, config) =
        status_with_token(&server, "/.well-known/openid-configuration", &token).await;
    assert_eq!(code, 200, "{config}");
    let config: serde_json::Value = serde_json::from_str(&config).unwrap();
    assert_eq!(config["issuer"], server.url.as_str());
    assert_eq!(config["jwks_uri"], format!("{}/openid/v1/jwks", server.url));
    assert_eq!(
        config["id_token_signing_alg_values_supported"],
        serde_json::json!(["ES256"])
    );
    let (code, jwks) = status_with_token(&server, "/openid/v1/jwks", &token).await;
    assert_eq!(code, 200);
    assert_eq!(
        get_text(&server.anonymous_http(), &server.url("/openid/v1/jwks"))
            .await
            .0,
        403
    );

    let jwks: jsonwebtoken::jwk::JwkSet = serde_json::from_str(&jwks).unwrap();
    let header = jsonwebtoken::decode_header(&token).unwrap();
    let jwk = jwks
        .find(header.kid.as_deref().unwrap())
        .expect("the token's key is published");
    let key = jsonwebtoken::DecodingKey::from_jwk(jwk).unwrap();
    let mut validation = jsonwebtoken::Validation::new(header.alg);
    validation.set_issuer(&[server.url.as_str()]);
    validation.set_audience(&[server.url.as_str()]);
    let data = jsonwebtoken::decode::<serde_json::Value>(&token, &key, &validation).unwrap();
    let claims = data.claims;
    assert_eq!(claims["sub"], "system:serviceaccount:default:default");
    assert_eq!(claims["kubernetes.io"]["namespace"], "default");
    assert_eq!(claims["kubernetes.io"]["serviceaccount"]["name"], "default");
    assert!(claims["kubernetes.io"]["serviceaccount"]["uid"]
        .as_str()
        .is_some_and(|u| !u.is_empty()));
    let (iat, exp) = (
        claims["iat"].as_i64().unwrap(),
        claims["exp"].as_i64().unwrap(),
    );
    assert_eq!(exp - iat, 3600);
    assert_eq!(claims["nbf"], claims["iat"]);
}

#[tokio::test]
async fn python_client_lists_with_a_service_account_token() {
    let server = TestServer::start().await;
    server
        .kubectl_ok(&[
            "create",
            "rolebinding",
            "default-view",
            "--clusterrole=view",
            "--serviceaccount=default:default",
            "-n",
            "default",
        ])
        .await;
    server
        .kubectl_ok(&["create", "configmap", "py", "-n", "default"])
        .await;
    let token = server
        .kubectl_ok(&["create", "token", "default", "-n", "default"])
        .await;
    let kubeconfig = server.token_kubeconfig("default-sa", &token);
    let script = r#"
import sys
from kubernetes import client, config
config.load_kube_config(config_file=sys.argv[1])
names = [c.metadata.name for c in client.CoreV1Api().list_namespaced_config_map("default").items]
print(",".join(sorted(names)))
try:
    client.CoreV1Api().delete_namespaced_config_map("py", "default")
    print("deleted")
except client.rest.ApiException as e:
    print(e.status)
"#;
    let python = std::env::var("KAPI_TEST_PYTHON").unwrap_or_else(|_| "python3".into());
    let out = within(
        Duration::from_secs(60),
        "python client",
        tokio::process::Command::new(python)
            .args(["-c", script])
            .arg(&kubeconfig)
            .kill_on_drop(true)
            .output(),
    )
    .await
    .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lines: Vec<&str> = stdout.lines().collect();
    assert!(lines[0].split(',').any(|n| n == "py"), "{stdout}");
    assert_eq!(lines[1], "403", "{stdout}");
}

#[tokio::test]
async fn replicas_on_etcd_accept_each_others_tokens() {
    let etcd = start_etcd().await;
    let certs = tempfile::tempdir().unwrap();
    let replica = |host: &str| {
        crate::ha::replica_options(&etcd.url, certs.path(), host)
            .args(["--service-account-issuer", "https://kapi.example.test"])
    };
    let a = TestServer::start_with(replica("node-a")).await;
    let b = TestServer::start_with(replica("node-b")).await;
    a.kubectl_ok(&["create", "serviceaccount", "ha", "-n", "default"])
        .await;
    a.kubectl_ok(&[
        "create",
        "rolebinding",
        "ha-view",
        "--clusterrole=view",
        "--serviceaccount=default:ha",
        "-n",
        "default",
    ])
    .await;
    let token = a
        .kubectl_ok(&["create", "token", "ha", "-n", "default"])
        .await;
    let path = "/api/v1/namespaces/default/configmaps";
    eventually("replica b to accept replica a's token", || async {
        status_with_token(&b, path, &token).await.0 == 200
    })
    .await;
    assert_eq!(status_with_token(&a, path, &token).await.0, 200);
}
