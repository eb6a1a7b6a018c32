//! Legacy secret-based service-account tokens: the tokens controller fills a
//! `kubernetes.io/service-account-token` Secret, the token authenticates its service account,
//! its use is recorded in the `kubernetes.io/legacy-token-last-used` label, the
//! `kubernetes.io/legacy-token-invalid-since` label and the account's deletion revoke it;
//! each use (a refused one too) is annotated in the audit log and counted as upstream's
//! legacy validator does.

use crate::support::{audited_server, kubectl_with, output_text as text, within};
use base64::Engine as _;
use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, Patch, PatchParams};
use std::time::Duration;

/// Polls `f` every 50 ms until it yields a value (at most 20 s).
async fn eventually<T, F, Fut>(what: &str, mut f: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    within(Duration::from_secs(20), what, async {
        loop {
            if let Some(v) = f().await {
                return v;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await
}

fn label(secret: &Secret, key: &str) -> Option<String> {
    secret.metadata.labels.as_ref()?.get(key).cloned()
}

async fn whoami(kubeconfig: &std::path::Path) -> Result<String, String> {
    let o = kubectl_with(
        kubeconfig,
        &[
            "auth",
            "whoami",
            "-o",
            "jsonpath={.status.userInfo.username}",
        ],
    )
    .await;
    if o.status.success() {
        Ok(String::from_utf8_lossy(&o.stdout).into_owned())
    } else {
        Err(text(&o))
    }
}

#[tokio::test]
async fn secret_tokens_are_filled_tracked_and_revoked() {
    let (server, log, dir) = audited_server().await;
    let client = server.client().await;
    server
        .kubectl_ok(&["create", "serviceaccount", "builder"])
        .await;

    // The name annotation is required, as upstream validates it.
    let bare = dir.path().join("bare.yaml");
    std::fs::write(
        &bare,
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: bare\ntype: kubernetes.io/service-account-token\n",
    )
    .unwrap();
    let o = server
        .kubectl(&["apply", "-f", bare.to_str().unwrap()])
        .await;
    assert!(
        text(&o)
            .contains("metadata.annotations[kubernetes.io/service-account.name]: Required value"),
        "{}",
        text(&o)
    );

    let manifest = dir.path().join("token.yaml");
    std::fs::write(
        &manifest,
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: builder-token\n  annotations:\n    \
         kubernetes.io/service-account.name: builder\ntype: kubernetes.io/service-account-token\n",
    )
    .unwrap();
    server
        .kubectl_ok(&["apply", "-f", manifest.to_str().unwrap()])
        .await;
    let secrets: Api<Secret> = Api::namespaced(client.clone(), "default");
    let filled = eventually("the tokens controller to fill the secret", || async {
        let s = secrets.get("builder-token").await.ok()?;
        s.data.as_ref()?.get("token").is_some().then_some(s)
    })
    .await;
    let data = filled.data.as_ref().unwrap();
    assert_eq!(data["namespace"].0, b"default");
    let ca = std::fs::read_to_string(server.kubeconfig()).unwrap();
    let ca_b64 = ca
        .lines()
        .find_map(|l| l.trim().strip_prefix("certificate-authority-data:"))
        .unwrap()
        .trim()
        .trim_matches('"')
        .to_string();
    assert_eq!(
        data["ca.crt"].0,
        base64::engine::general_purpose::STANDARD
            .decode(ca_b64)
            .unwrap()
    );
    let sa_uid = server
        .kubectl_ok(&[
            "get",
            "serviceaccount",
            "builder",
            "-o",
            "jsonpath={.metadata.uid}",
        ])
        .await;
    assert_eq!(
        filled.metadata.annotations.as_ref().unwrap()["kubernetes.io/service-account.uid"],
        sa_uid.trim()
    );
    assert_eq!(label(&filled, "kubernetes.io/legacy-token-last-used"), None);

    // The token authenticates the service account, and its use is recorded with today's date.
    let token = String::from_utf8(data["token"].0.clone()).unwrap();
    let kubeconfig = server.token_kubeconfig("builder", &token);
    assert_eq!(
        whoami(&kubeconfig).await.unwrap(),
        "system:serviceaccount:default:builder"
    );
    let today = k8s_openapi::jiff::Timestamp::now()
        .to_zoned(k8s_openapi::jiff::tz::TimeZone::UTC)
        .date()
        .to_string();
    let used = eventually("the last-used label", || async {
        label(
            &secrets.get("builder-token").await.ok()?,
            "kubernetes.io/legacy-token-last-used",
        )
    })
    .await;
    assert_eq!(used, today);

    // Marked invalid: refused until the label is removed.
    let mark = |value: Option<&str>| serde_json::json!({"metadata": {"labels": {"kubernetes.io/legacy-token-invalid-since": value}}});
    secrets
        .patch(
            "builder-token",
            &PatchParams::default(),
            &Patch::Merge(&mark(Some("2026-01-01"))),
        )
        .await
        .unwrap();
    let refused = eventually("the invalid-since label to refuse the token", || async {
        whoami(&kubeconfig).await.err()
    })
    .await;
    assert!(refused.contains("Unauthorized"), "{refused}");
    secrets
        .patch(
            "builder-token",
            &PatchParams::default(),
            &Patch::Merge(&mark(None)),
        )
        .await
        .unwrap();
    eventually("the token to work again", || async {
        whoami(&kubeconfig).await.ok()
    })
    .await;

    // A token the account lists in its `secrets` was generated for it: every response warns
    // its client, as upstream's authenticator does. The one made by hand above is not.
    let warning = "Warning: Use tokens from the TokenRequest API or manually created \
                   secret-based tokens instead of auto-generated secret-based tokens.";
    let o = kubectl_with(&kubeconfig, &["auth", "whoami"]).await;
    assert!(o.status.success(), "{}", text(&o));
    assert!(!text(&o).contains("auto-generated"), "{}", text(&o));
    server
        .kubectl_ok(&[
            "patch",
            "serviceaccount",
            "builder",
            "-p",
            r#"{"secrets":[{"name":"builder-token"}]}"#,
        ])
        .await;
    let warned = eventually("the warning for an auto-generated token", || async {
        let o = kubectl_with(&kubeconfig, &["auth", "whoami"]).await;
        let out = text(&o);
        (o.status.success() && out.contains("auto-generated")).then_some(out)
    })
    .await;
    assert!(warned.contains(warning), "{warned}");
    // Forbidden requests carry it too.
    let o = kubectl_with(&kubeconfig, &["get", "secrets"]).await;
    assert!(!o.status.success());
    assert!(text(&o).contains(warning), "{}", text(&o));

    // Every use is annotated with the secret's name, by kind, and counted.
    let annotated: Vec<String> = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|e| e["user"]["username"] == "system:serviceaccount:default:builder")
        .filter_map(|e| {
            let annotations = e["annotations"].as_object()?;
            let (key, value) = annotations
                .iter()
                .find(|(k, _)| k.starts_with("authentication.k8s.io/legacy-token-"))?;
            assert_eq!(value, "builder-token");
            Some(key.clone())
        })
        .collect();
    for kind in ["manual", "autogenerated"] {
        let key = format!("authentication.k8s.io/legacy-token-{kind}-secret");
        assert!(annotated.contains(&key), "{key} not in {annotated:?}");
    }
    // A use while marked invalid is annotated on the refusal (no user: it was refused) with
    // upstream's `name/namespace`.
    let invalidated = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|e| e["responseStatus"]["code"] == 401)
        .filter_map(|e| {
            e["annotations"]["authentication.k8s.io/legacy-token-invalidated"]
                .as_str()
                .map(str::to_owned)
        })
        .collect::<Vec<_>>();
    assert!(
        invalidated.iter().any(|v| v == "builder-token/default"),
        "{invalidated:?}"
    );
    let metrics = server.kubectl_ok(&["get", "--raw", "/metrics"]).await;
    for kind in ["legacy_auto", "legacy_manual", "invalid_legacy_auto"] {
        let name = format!("serviceaccount_{kind}_token_uses_total ");
        let count: f64 = metrics
            .lines()
            .find_map(|l| l.strip_prefix(name.as_str()))
            .unwrap_or_else(|| panic!("{name} not in /metrics"))
            .trim()
            .parse()
            .unwrap();
        assert!(count >= 1.0, "{name}{count}");
    }

    // Deleting the service account deletes its token secret and revokes the token.
    server
        .kubectl_ok(&["delete", "serviceaccount", "builder"])
        .await;
    eventually("the token secret to be deleted", || async {
        secrets
            .get_opt("builder-token")
            .await
            .ok()?
            .is_none()
            .then_some(())
    })
    .await;
    let refused = whoami(&kubeconfig).await.unwrap_err();
    assert!(refused.contains("Unauthorized"), "{refused}");
}
