//! Legacy service-account token tracking (`pkg/controlplane/controller/legacytokentracking`,
//! hook `start-legacy-token-tracking-controller`): ConfigMap
//! `kube-system/kube-apiserver-legacy-service-account-token-tracking` with `since` = the UTC
//! date tracking was first enabled. Creation is rate-limited to one successful create per 30
//! minutes per process (first attempt immediate; failed attempts retry after 2 s); an
//! unparsable `since` is rewritten.

use super::util;
use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::jiff::{civil::Date, tz::TimeZone, Timestamp};
use kube::api::PostParams;
use kube::runtime::{watcher, WatchStreamExt};
use kube::{Api, Client};
use std::collections::BTreeMap;
use std::time::Duration;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tracing::{debug, info, warn};

/// Name of the ConfigMap.
pub(super) const CONFIGMAP_NAME: &str = "kube-apiserver-legacy-service-account-token-tracking";
/// Its only key.
pub(super) const SINCE_KEY: &str = "since";
const CREATE_INTERVAL: Duration = Duration::from_secs(30 * 60);
const RESYNC: Duration = Duration::from_secs(60);
const CREATE_RETRY: Duration = Duration::from_secs(2);

/// Today's UTC date in Go's `2006-01-02` layout.
pub(crate) fn today(now: Timestamp) -> String {
    now.to_zoned(TimeZone::UTC).date().to_string()
}

/// Whether `since` holds a valid `YYYY-MM-DD` date.
pub(crate) fn valid_since(cm: &ConfigMap) -> bool {
    cm.data
        .as_ref()
        .and_then(|d| d.get(SINCE_KEY))
        .is_some_and(|s| s.len() == 10 && s.parse::<Date>().is_ok())
}

/// What one sync does.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Action {
    /// Absent: create it.
    Create,
    /// Present without a valid date: rewrite `since`.
    Fix,
    /// Present and valid.
    Nothing,
}

/// Decides the action for the current object.
pub(crate) fn action(cm: Option<&ConfigMap>) -> Action {
    match cm {
        None => Action::Create,
        Some(cm) if !valid_since(cm) => Action::Fix,
        Some(_) => Action::Nothing,
    }
}

/// Runs the controller until `cancel` fires: syncs on every event of the ConfigMap, once at
/// start and every minute.
pub(crate) async fn run(client: Client, cancel: CancellationToken) {
    let api: Api<ConfigMap> = Api::namespaced(client, super::identity::KUBE_SYSTEM);
    let cfg = watcher::Config::default().fields(&format!("metadata.name={CONFIGMAP_NAME}"));
    let mut events = watcher(api.clone(), cfg).default_backoff().boxed().fuse();
    let mut last_create: Option<Instant> = None;
    let mut next = Instant::now();
    loop {
        tokio::select! {
            () = cancel.cancelled() => return,
            Some(ev) = events.next() => if let Err(e) = ev {
                debug!(error = %e, "token tracking configmap watch error");
                continue;
            },
            () = tokio::time::sleep_until(next) => {}
        }
        next = Instant::now() + RESYNC;
        if let Some(wait) = sync(&api, &mut last_create).await {
            next = Instant::now() + wait;
        }
    }
}

/// One sync; Some(delay) when it must run again after `delay` (throttled or failed).
async fn sync(api: &Api<ConfigMap>, last_create: &mut Option<Instant>) -> Option<Duration> {
    let current = match api.get_opt(CONFIGMAP_NAME).await {
        Ok(c) => c,
        Err(e) => {
            warn!(error = %util::Brief(&e), "reading the token tracking configmap failed");
            return Some(CREATE_RETRY);
        }
    };
    let data = || BTreeMap::from([(SINCE_KEY.to_string(), today(util::now()))]);
    match action(current.as_ref()) {
        Action::Nothing => None,
        Action::Create => {
            if let Some(at) = *last_create {
                let elapsed = at.elapsed();
                if elapsed < CREATE_INTERVAL {
                    return Some(CREATE_INTERVAL - elapsed);
                }
            }
            let cm = ConfigMap {
                metadata: ObjectMeta {
                    name: Some(CONFIGMAP_NAME.to_string()),
                    namespace: Some(super::identity::KUBE_SYSTEM.to_string()),
                    ..ObjectMeta::default()
                },
                data: Some(data()),
                ..ConfigMap::default()
            };
            // Only writes that happened count against the limit: a create that failed (e.g.
            // kube-system not there yet at start-up) is retried soon, not in 30 minutes.
            match api.create(&PostParams::default(), &cm).await {
                Ok(_) => {
                    *last_create = Some(Instant::now());
                    info!("created legacy token tracking configmap");
                    None
                }
                Err(e) if util::is_already_exists(&e) => None,
                Err(e) => {
                    warn!(error = %util::Brief(&e), "creating the token tracking configmap failed");
                    Some(CREATE_RETRY)
                }
            }
        }
        Action::Fix => {
            let mut cm = current?;
            cm.data
                .get_or_insert_with(BTreeMap::new)
                .insert(SINCE_KEY.to_string(), today(util::now()));
            match api
                .replace(CONFIGMAP_NAME, &PostParams::default(), &cm)
                .await
            {
                Ok(_) => info!("repaired legacy token tracking configmap"),
                Err(e) if util::is_not_found(&e) || util::is_conflict(&e) => {}
                Err(e) => {
                    warn!(error = %util::Brief(&e), "updating the token tracking configmap failed")
                }
            }
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cm(since: Option<&str>) -> ConfigMap {
        ConfigMap {
            data: since.map(|s| BTreeMap::from([(SINCE_KEY.to_string(), s.to_string())])),
            ..ConfigMap::default()
        }
    }

    #[test]
    fn date_layout() {
        let ts: Timestamp = "2025-03-04T23:59:59Z".parse().unwrap();
        assert_eq!(today(ts), "2025-03-04");
    }

    #[test]
    fn actions() {
        assert_eq!(action(None), Action::Create);
        assert_eq!(action(Some(&cm(None))), Action::Fix);
        assert_eq!(action(Some(&cm(Some("yesterday")))), Action::Fix);
        assert_eq!(action(Some(&cm(Some("2025-13-01")))), Action::Fix);
        assert_eq!(action(Some(&cm(Some("2025-01-31")))), Action::Nothing);
    }
}
