//! The service-account tokens controller (kube-controller-manager's
//! pkg/controller/serviceaccount/tokens_controller.go, run in-process): a Secret of type
//! `kubernetes.io/service-account-token` naming a service account gets `token` (a legacy JWT),
//! `ca.crt` and `namespace`, and the account's UID annotation; a token secret whose service
//! account is gone (or is another one by that name) is deleted. As upstream since 1.24, no
//! secret is created for a service account: users create them.

use super::util;
use crate::serviceaccount::legacy::{self, NAME_ANNOTATION, SECRET_TYPE, UID_ANNOTATION};
use crate::serviceaccount::Issuer;
use futures::StreamExt;
use k8s_openapi::api::core::v1::{Secret, ServiceAccount};
use k8s_openapi::ByteString;
use kube::api::{DeleteParams, PostParams, Preconditions};
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::{watcher, WatchStreamExt};
use kube::{Api, Client, ResourceExt};
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;
use tracing::info;

/// The keys the controller fills.
const TOKEN_KEY: &str = "token";
const CA_KEY: &str = "ca.crt";
const NAMESPACE_KEY: &str = "namespace";
/// How long changes are gathered before the secrets are checked.
const SETTLE: Duration = Duration::from_millis(20);
/// A failed pass is retried this soon.
const RETRY: Duration = Duration::from_secs(1);

/// What the controller signs tokens with and puts in `ca.crt`.
#[derive(Clone)]
pub(crate) struct Signer {
    /// The service-account issuer (its signing key).
    pub issuer: Arc<Issuer>,
    /// The CA bundle clients verify the server with (PEM).
    pub root_ca: Vec<u8>,
}

/// What to do about one token secret.
#[derive(Debug, PartialEq)]
pub(crate) enum Action {
    /// Nothing is missing.
    Nothing,
    /// Its service account is not there (or has another UID): delete it, unless a live read
    /// finds the account after all.
    Orphaned,
    /// Fill in what is missing: the secret as it should be written.
    Fill(Box<Secret>),
}

fn has(secret: &Secret, key: &str) -> bool {
    secret
        .data
        .as_ref()
        .and_then(|d| d.get(key))
        .is_some_and(|v| !v.0.is_empty())
}

/// tokens_controller's syncSecret and generateTokenIfNeeded for `secret`, whose service
/// account (by the name annotation) is `account`.
pub(crate) fn action(
    secret: &Secret,
    account: Option<&ServiceAccount>,
    signer: &Signer,
) -> Result<Action, crate::serviceaccount::jwt::TokenError> {
    let annotations = secret.annotations();
    let wanted_uid = annotations.get(UID_ANNOTATION).filter(|u| !u.is_empty());
    let Some(sa) = account.filter(|sa| wanted_uid.is_none_or(|u| sa.uid().as_ref() == Some(u)))
    else {
        return Ok(Action::Orphaned);
    };
    let ca_current = secret
        .data
        .as_ref()
        .and_then(|d| d.get(CA_KEY))
        .is_some_and(|v| v.0 == signer.root_ca);
    let needs_ca = !signer.root_ca.is_empty() && !ca_current;
    let needs_namespace = !has(secret, NAMESPACE_KEY);
    let needs_token = !has(secret, TOKEN_KEY);
    if !needs_ca && !needs_namespace && !needs_token {
        return Ok(Action::Nothing);
    }
    let namespace = secret.namespace().unwrap_or_default();
    let mut fresh = secret.clone();
    let data = fresh.data.get_or_insert_with(Default::default);
    if needs_ca {
        data.insert(CA_KEY.into(), ByteString(signer.root_ca.clone()));
    }
    if needs_namespace {
        data.insert(
            NAMESPACE_KEY.into(),
            ByteString(namespace.clone().into_bytes()),
        );
    }
    if needs_token {
        let claims = legacy::Claims::new(
            &namespace,
            &sa.name_any(),
            &sa.uid().unwrap_or_default(),
            &secret.name_any(),
        );
        let token = crate::serviceaccount::jwt::issue(&signer.issuer.signing, &claims)?;
        data.insert(TOKEN_KEY.into(), ByteString(token.into_bytes()));
    }
    let annotations = fresh.annotations_mut();
    annotations.insert(NAME_ANNOTATION.into(), sa.name_any());
    annotations.insert(UID_ANNOTATION.into(), sa.uid().unwrap_or_default());
    Ok(Action::Fill(Box::new(fresh)))
}

/// Why a pass stopped (retried).
#[derive(Debug, thiserror::Error)]
enum Error {
    #[error("{0}")]
    Api(String),
    #[error(transparent)]
    Token(#[from] crate::serviceaccount::jwt::TokenError),
}

impl From<kube::Error> for Error {
    fn from(e: kube::Error) -> Self {
        Error::Api(util::Brief(&e).to_string())
    }
}

/// One pass over every token secret.
async fn sync(
    client: &Client,
    secrets: &Store<Secret>,
    accounts: &Store<ServiceAccount>,
    signer: &Signer,
) -> Result<(), Error> {
    for secret in secrets.state() {
        if secret.metadata.deletion_timestamp.is_some()
            || secret.type_.as_deref() != Some(SECRET_TYPE)
        {
            continue;
        }
        let namespace = secret.namespace().unwrap_or_default();
        let Some(sa_name) = secret.annotations().get(NAME_ANNOTATION).cloned() else {
            continue;
        };
        let cached = accounts.get(&ObjectRef::new(&sa_name).within(&namespace));
        let secrets_api: Api<Secret> = Api::namespaced(client.clone(), &namespace);
        match action(&secret, cached.as_deref(), signer)? {
            Action::Nothing => {}
            Action::Fill(fresh) => match secrets_api
                .replace(&secret.name_any(), &PostParams::default(), &fresh)
                .await
            {
                Ok(_) => {
                    info!(secret = %format!("{namespace}/{}", secret.name_any()), "filled in the service account token")
                }
                // Changed or deleted meanwhile: its event brings another pass.
                Err(kube::Error::Api(s)) if matches!(s.code, 404 | 409) => {}
                Err(e) => return Err(e.into()),
            },
            Action::Orphaned => {
                // The cache may lag: ask the server before deleting (fetchOnCacheMiss).
                let live = Api::<ServiceAccount>::namespaced(client.clone(), &namespace)
                    .get_opt(&sa_name)
                    .await?;
                if action(&secret, live.as_ref(), signer)? != Action::Orphaned {
                    continue;
                }
                let params = DeleteParams {
                    preconditions: Some(Preconditions {
                        uid: secret.uid(),
                        resource_version: None,
                    }),
                    ..DeleteParams::default()
                };
                match secrets_api.delete(&secret.name_any(), &params).await {
                    Ok(_) => {
                        info!(secret = %format!("{namespace}/{}", secret.name_any()), "deleted the token of a removed service account")
                    }
                    Err(kube::Error::Api(s)) if matches!(s.code, 404 | 409) => {}
                    Err(e) => return Err(e.into()),
                }
            }
        }
    }
    Ok(())
}

/// Runs the controller until `cancel` fires.
pub(crate) async fn run(client: Client, signer: Signer, cancel: CancellationToken) {
    let changed = |e: Result<(), watcher::Error>| e.map(|()| true).map_err(|e| e.to_string());
    let (secrets, secret_writer) = reflector::store();
    let of_type = watcher::Config::default().fields(&format!("type={SECRET_TYPE}"));
    let secret_events = watcher(Api::<Secret>::all(client.clone()), of_type)
        .default_backoff()
        .reflect(secret_writer)
        .map(move |e| changed(e.map(|_| ())))
        .boxed();
    let (accounts, sa_writer) = reflector::store();
    let sa_events = watcher(
        Api::<ServiceAccount>::all(client.clone()),
        watcher::Config::default(),
    )
    .default_backoff()
    .reflect(sa_writer)
    .map(move |e| changed(e.map(|_| ())))
    .boxed();
    let changes = futures::stream::select(secret_events, sa_events);
    let pass = || {
        let (client, secrets, accounts, signer) = (
            client.clone(),
            secrets.clone(),
            accounts.clone(),
            signer.clone(),
        );
        async move {
            sync(&client, &secrets, &accounts, &signer)
                .await
                .map_err(|e| e.to_string())
        }
    };
    util::on_changes(
        changes,
        SETTLE,
        RETRY,
        &cancel,
        "filling service account tokens",
        pass,
    )
    .await;
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

    fn signer() -> Signer {
        Signer {
            issuer: Arc::new(Issuer::for_tests("https://kapi.test")),
            root_ca: b"-----BEGIN CERTIFICATE-----\n".to_vec(),
        }
    }

    fn account(uid: &str) -> ServiceAccount {
        ServiceAccount {
            metadata: ObjectMeta {
                name: Some("builder".into()),
                namespace: Some("ci".into()),
                uid: Some(uid.into()),
                ..ObjectMeta::default()
            },
            ..ServiceAccount::default()
        }
    }

    fn secret(uid_annotation: Option<&str>) -> Secret {
        let mut annotations = std::collections::BTreeMap::new();
        annotations.insert(NAME_ANNOTATION.to_string(), "builder".to_string());
        if let Some(uid) = uid_annotation {
            annotations.insert(UID_ANNOTATION.to_string(), uid.to_string());
        }
        Secret {
            metadata: ObjectMeta {
                name: Some("builder-token".into()),
                namespace: Some("ci".into()),
                annotations: Some(annotations),
                ..ObjectMeta::default()
            },
            type_: Some(SECRET_TYPE.into()),
            ..Secret::default()
        }
    }

    #[test]
    fn a_new_token_secret_is_filled_once() {
        let signer = signer();
        let Action::Fill(filled) = action(&secret(None), Some(&account("u1")), &signer).unwrap()
        else {
            panic!("expected the secret to be filled");
        };
        let data = filled.data.as_ref().unwrap();
        assert_eq!(data[NAMESPACE_KEY].0, b"ci");
        assert_eq!(data[CA_KEY].0, signer.root_ca);
        let token = String::from_utf8(data[TOKEN_KEY].0.clone()).unwrap();
        let claims = legacy::verify(&token, &signer.issuer.verifying).unwrap();
        assert_eq!(
            claims,
            legacy::Claims::new("ci", "builder", "u1", "builder-token")
        );
        assert_eq!(filled.annotations()[UID_ANNOTATION], "u1");
        // Filled: nothing more to do, and the token is kept.
        assert_eq!(
            action(&filled, Some(&account("u1")), &signer).unwrap(),
            Action::Nothing
        );
    }

    #[test]
    fn secrets_of_missing_or_replaced_accounts_are_orphans() {
        let signer = signer();
        assert_eq!(
            action(&secret(None), None, &signer).unwrap(),
            Action::Orphaned
        );
        assert_eq!(
            action(&secret(Some("u1")), Some(&account("u2")), &signer).unwrap(),
            Action::Orphaned
        );
    }
}
