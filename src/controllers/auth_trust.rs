//! Cluster authentication trust (`pkg/controlplane/controller/clusterauthenticationtrust`,
//! hook `start-cluster-authentication-info-controller`): publishes this server's client CA
//! (and request-header settings, when configured) in ConfigMap
//! `kube-system/extension-apiserver-authentication`, merged with what other servers wrote:
//! CA bundles are unioned (expired certificates dropped, de-duplicated by DER), string
//! lists keep existing entries first and never shrink. Runs on every event of the ConfigMap
//! and every minute; the CA file, when given, is re-read each time.

use super::util;
use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{DeleteParams, PostParams};
use kube::runtime::{watcher, WatchStreamExt};
use kube::{Api, Client};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tracing::{debug, info, warn};

/// Name of the ConfigMap.
pub(super) const CONFIGMAP_NAME: &str = "extension-apiserver-authentication";
const RESYNC: Duration = Duration::from_secs(60);
/// Certificates expired for longer than this are dropped from merged bundles.
const EXPIRY_GRACE_SECS: i64 = 5 * 60;

/// `--requestheader-*` settings (the generated front-proxy CA's, or the operator's).
#[derive(Debug, Clone, Default)]
pub(crate) struct RequestHeaderInfo {
    /// PEM bundle of `--requestheader-client-ca-file`.
    pub ca_pem: String,
    /// `--requestheader-username-headers`.
    pub username_headers: Vec<String>,
    /// `--requestheader-uid-headers`.
    pub uid_headers: Vec<String>,
    /// `--requestheader-group-headers`.
    pub group_headers: Vec<String>,
    /// `--requestheader-extra-headers-prefix`.
    pub extra_headers_prefix: Vec<String>,
    /// `--requestheader-allowed-names`.
    pub allowed_names: Vec<String>,
}

/// What this server contributes.
#[derive(Debug, Clone, Default)]
pub(crate) struct AuthInfo {
    /// The client CA bundle known at start-up.
    pub client_ca_pem: Option<String>,
    /// `--client-ca-file`, re-read on every sync so rotations propagate.
    pub client_ca_file: Option<PathBuf>,
    /// Request-header authentication settings.
    pub request_header: Option<RequestHeaderInfo>,
}

/// Why a sync failed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum Error {
    /// A PEM bundle (existing or ours) did not parse.
    #[error("parsing certificates of {0} failed")]
    BadPem(&'static str),
    /// A JSON list in the existing ConfigMap did not parse.
    #[error("parsing {0} failed")]
    BadList(String),
    /// Reading the ConfigMap failed.
    #[error("reading configmap failed")]
    Get(#[source] kube::Error),
    /// Writing the ConfigMap failed.
    #[error("writing configmap failed")]
    Write(#[source] kube::Error),
}

const LIST_KEYS: [&str; 5] = [
    "requestheader-username-headers",
    "requestheader-uid-headers",
    "requestheader-group-headers",
    "requestheader-extra-headers-prefix",
    "requestheader-allowed-names",
];

/// PEM certificates of `bundle` as DER, in order.
fn parse_certs(bundle: &str, what: &'static str) -> Result<Vec<Vec<u8>>, Error> {
    rustls_pemfile::certs(&mut bundle.as_bytes())
        .map(|c| {
            c.map(|d| d.as_ref().to_vec())
                .map_err(|_| Error::BadPem(what))
        })
        .collect()
}

/// Unions two bundles: existing first, certificates expired > 5 minutes dropped, duplicates
/// removed, re-encoded as consecutive CERTIFICATE blocks (combineCertLists in k8s).
pub(crate) fn merge_bundles(existing: &str, ours: &str, now_secs: i64) -> Result<String, Error> {
    let mut all = parse_certs(existing, "existing bundle")?;
    all.extend(parse_certs(ours, "configured bundle")?);
    let mut kept: Vec<Vec<u8>> = Vec::new();
    for der in all {
        let Ok((_, cert)) = x509_parser::parse_x509_certificate(&der) else {
            return Err(Error::BadPem("certificate"));
        };
        if cert.validity().not_after.timestamp() < now_secs - EXPIRY_GRACE_SECS {
            continue;
        }
        if !kept.contains(&der) {
            kept.push(der);
        }
    }
    Ok(kept.iter().map(|der| encode_pem(der)).collect())
}

fn encode_pem(der: &[u8]) -> String {
    use base64::Engine as _;
    let b64 = base64::engine::general_purpose::STANDARD.encode(der);
    let mut out = String::from("-----BEGIN CERTIFICATE-----\n");
    for chunk in b64.as_bytes().chunks(64) {
        out.push_str(&String::from_utf8_lossy(chunk));
        out.push('\n');
    }
    out.push_str("-----END CERTIFICATE-----\n");
    out
}

/// DER certificates as one PEM bundle (consecutive CERTIFICATE blocks).
pub(crate) fn pem_bundle<D: AsRef<[u8]>>(ders: &[D]) -> String {
    ders.iter().map(|d| encode_pem(d.as_ref())).collect()
}

/// Existing entries first, then new ones, without duplicates.
fn merge_lists(existing: &[String], ours: &[String]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for s in existing.iter().chain(ours) {
        if !out.contains(s) {
            out.push(s.clone());
        }
    }
    out
}

fn list_of(data: &BTreeMap<String, String>, key: &str) -> Result<Vec<String>, Error> {
    match data.get(key).map(String::as_str) {
        None | Some("") | Some("null") => Ok(Vec::new()),
        Some(raw) => serde_json::from_str(raw).map_err(|_| Error::BadList(key.to_string())),
    }
}

/// The ConfigMap data after merging `ours` into `existing` (getConfigMapDataFor of the
/// combined info in k8s).
pub(crate) fn desired_data(
    existing: &BTreeMap<String, String>,
    client_ca: &str,
    request_header: Option<&RequestHeaderInfo>,
    now_secs: i64,
) -> Result<BTreeMap<String, String>, Error> {
    let mut data = BTreeMap::new();
    let empty = String::new();
    let old_ca = existing.get("client-ca-file").unwrap_or(&empty);
    let ca = merge_bundles(old_ca, client_ca, now_secs)?;
    if !ca.is_empty() {
        data.insert("client-ca-file".to_string(), ca);
    }
    let old_rh_ca = existing
        .get("requestheader-client-ca-file")
        .unwrap_or(&empty);
    let rh_ca = merge_bundles(
        old_rh_ca,
        request_header.map_or("", |r| r.ca_pem.as_str()),
        now_secs,
    )?;
    if rh_ca.is_empty() {
        return Ok(data);
    }
    let default = RequestHeaderInfo::default();
    let rh = request_header.unwrap_or(&default);
    let ours = [
        &rh.username_headers,
        &rh.uid_headers,
        &rh.group_headers,
        &rh.extra_headers_prefix,
        &rh.allowed_names,
    ];
    for (key, our) in LIST_KEYS.iter().zip(ours) {
        let merged = merge_lists(&list_of(existing, key)?, our);
        let json = serde_json::to_string(&merged).map_err(|_| Error::BadList(key.to_string()))?;
        data.insert((*key).to_string(), json);
    }
    data.insert("requestheader-client-ca-file".to_string(), rh_ca);
    Ok(data)
}

/// Runs the controller until `cancel` fires.
pub(crate) async fn run(client: Client, info: AuthInfo, cancel: CancellationToken) {
    let api: Api<ConfigMap> = Api::namespaced(client, super::identity::KUBE_SYSTEM);
    let cfg = watcher::Config::default().fields(&format!("metadata.name={CONFIGMAP_NAME}"));
    let mut events = watcher(api.clone(), cfg).default_backoff().boxed().fuse();
    let mut next = Instant::now();
    loop {
        tokio::select! {
            () = cancel.cancelled() => return,
            Some(ev) = events.next() => if let Err(e) = ev {
                debug!(error = %e, "authentication configmap watch error");
                continue;
            },
            () = tokio::time::sleep_until(next) => {}
        }
        next = Instant::now() + RESYNC;
        if let Err(e) = sync(&api, &info).await {
            warn!(error = %format!("{e:#}"), "cluster authentication trust sync failed");
            next = Instant::now() + Duration::from_secs(5);
        }
    }
}

fn client_ca(info: &AuthInfo) -> String {
    if let Some(path) = &info.client_ca_file {
        match std::fs::read_to_string(path) {
            Ok(pem) => return pem,
            Err(e) => {
                warn!(path = %path.display(), error = %e, "re-reading --client-ca-file failed")
            }
        }
    }
    info.client_ca_pem.clone().unwrap_or_default()
}

async fn sync(api: &Api<ConfigMap>, info: &AuthInfo) -> Result<(), Error> {
    let current = api.get_opt(CONFIGMAP_NAME).await.map_err(Error::Get)?;
    let existing = current
        .as_ref()
        .and_then(|c| c.data.clone())
        .unwrap_or_default();
    let now_secs = util::now().as_second();
    let data = desired_data(
        &existing,
        &client_ca(info),
        info.request_header.as_ref(),
        now_secs,
    )?;
    if current.is_some() && data == existing {
        return Ok(());
    }
    let write = match current {
        Some(mut cm) => {
            cm.data = Some(data);
            api.replace(CONFIGMAP_NAME, &PostParams::default(), &cm)
                .await
        }
        None => {
            let cm = ConfigMap {
                metadata: ObjectMeta {
                    name: Some(CONFIGMAP_NAME.to_string()),
                    namespace: Some(super::identity::KUBE_SYSTEM.to_string()),
                    ..ObjectMeta::default()
                },
                data: Some(data),
                ..ConfigMap::default()
            };
            api.create(&PostParams::default(), &cm).await
        }
    };
    match write {
        Ok(_) => {
            info!("updated {CONFIGMAP_NAME} configmap");
            Ok(())
        }
        Err(e) if too_big(&e) => {
            // Start over: the next pass recreates it from this server's data alone.
            let _ = api.delete(CONFIGMAP_NAME, &DeleteParams::default()).await;
            Err(Error::Write(e))
        }
        Err(e) => Err(Error::Write(e)),
    }
}

fn too_big(e: &kube::Error) -> bool {
    matches!(e, kube::Error::Api(s) if s.code == 413 || (s.code == 422 && s.message.contains("Too long")))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ca(name: &str, not_after_year: i32) -> String {
        let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, name);
        params.not_before = rcgen::date_time_ymd(2000, 1, 1);
        params.not_after = rcgen::date_time_ymd(not_after_year, 1, 1);
        params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        let key = rcgen::KeyPair::generate().unwrap();
        params.self_signed(&key).unwrap().pem()
    }

    fn now() -> i64 {
        util::now().as_second()
    }

    #[test]
    fn bundles_union_dedupe_and_drop_expired() {
        let a = ca("a", 2100);
        let b = ca("b", 2100);
        let old = ca("old", 2001);
        let merged = merge_bundles(&format!("{a}{old}"), &format!("{b}{a}"), now()).unwrap();
        let certs = parse_certs(&merged, "t").unwrap();
        assert_eq!(certs.len(), 2);
        assert_eq!(certs[0], parse_certs(&a, "t").unwrap()[0], "existing first");
        assert_eq!(certs[1], parse_certs(&b, "t").unwrap()[0]);
        assert!(merged.starts_with("-----BEGIN CERTIFICATE-----\n"));
        assert!(merged.lines().all(|l| l.len() <= 64));
        assert_eq!(merge_bundles("", "", now()).unwrap(), "");
    }

    #[test]
    fn client_ca_only_writes_one_key() {
        let a = ca("a", 2100);
        let data = desired_data(&BTreeMap::new(), &a, None, now()).unwrap();
        assert_eq!(data.keys().collect::<Vec<_>>(), ["client-ca-file"]);
        assert_eq!(parse_certs(&data["client-ca-file"], "t").unwrap().len(), 1);
        // Idempotent: merging again changes nothing.
        assert_eq!(desired_data(&data, &a, None, now()).unwrap(), data);
    }

    #[test]
    fn request_header_lists_merge_and_never_shrink() {
        let a = ca("front-proxy", 2100);
        let existing = BTreeMap::from([(
            "requestheader-username-headers".to_string(),
            r#"["X-Other"]"#.to_string(),
        )]);
        let rh = RequestHeaderInfo {
            ca_pem: a,
            username_headers: vec!["X-Remote-User".into(), "X-Other".into()],
            ..RequestHeaderInfo::default()
        };
        let data = desired_data(&existing, "", Some(&rh), now()).unwrap();
        assert_eq!(
            data["requestheader-username-headers"],
            r#"["X-Other","X-Remote-User"]"#
        );
        assert_eq!(data["requestheader-allowed-names"], "[]");
        assert!(data.contains_key("requestheader-client-ca-file"));
        assert!(!data.contains_key("client-ca-file"));
    }

    #[test]
    fn garbage_fails_the_sync() {
        let bad = BTreeMap::from([
            ("requestheader-client-ca-file".to_string(), ca("x", 2100)),
            (
                "requestheader-group-headers".to_string(),
                "{not json".to_string(),
            ),
        ]);
        assert!(matches!(
            desired_data(&bad, "", None, now()),
            Err(Error::BadList(_))
        ));
    }
}
