//! The ClusterRole aggregation controller (kube-controller-manager's
//! pkg/controller/clusterroleaggregation, run in-process as kapi runs the other
//! controllers): a ClusterRole with an `aggregationRule` gets the rules of every other
//! ClusterRole its selectors match, in name order, each rule once. The rules are written
//! with server-side apply under the field manager `clusterrole-aggregation-controller`,
//! forced, as upstream writes them.

use super::super::util;
use futures::StreamExt;
use k8s_openapi::api::rbac::v1::{ClusterRole, PolicyRule};
use kube::api::{Patch, PatchParams};
use kube::core::{Selector, SelectorExt};
use kube::runtime::{reflector, watcher, WatchStreamExt};
use kube::{Api, Client};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// The field manager of the aggregated rules.
const FIELD_MANAGER: &str = "clusterrole-aggregation-controller";
/// How long changes are gathered before the roles are recomputed.
const SETTLE: Duration = Duration::from_millis(50);
/// A failed write is retried this soon.
const RETRY: Duration = Duration::from_secs(1);

/// The rules `role` aggregates from `all` (syncClusterRole), or None when it has no
/// aggregationRule.
pub(crate) fn aggregated_rules(
    role: &ClusterRole,
    all: &[Arc<ClusterRole>],
) -> Option<Vec<PolicyRule>> {
    let selectors = role
        .aggregation_rule
        .as_ref()?
        .cluster_role_selectors
        .clone();
    let selectors: Vec<Selector> = selectors
        .unwrap_or_default()
        .into_iter()
        .filter_map(|s| Selector::try_from(s).ok())
        .collect();
    let mut matched: BTreeMap<&str, &ClusterRole> = BTreeMap::new();
    let empty = BTreeMap::new();
    for other in all {
        let name = other.metadata.name.as_deref().unwrap_or("");
        if name == role.metadata.name.as_deref().unwrap_or("") {
            continue;
        }
        let labels = other.metadata.labels.as_ref().unwrap_or(&empty);
        if selectors.iter().any(|s| s.matches(labels)) {
            matched.insert(name, other);
        }
    }
    let mut rules: Vec<PolicyRule> = Vec::new();
    for other in matched.values() {
        for rule in other.rules.iter().flatten() {
            if !rules.contains(rule) {
                rules.push(rule.clone());
            }
        }
    }
    Some(rules)
}

/// Writes the aggregated rules of every aggregating role whose rules differ.
async fn sync(api: &Api<ClusterRole>, all: &[Arc<ClusterRole>]) -> Result<(), kube::Error> {
    for role in all {
        let Some(rules) = aggregated_rules(role, all) else {
            continue;
        };
        if role.rules.clone().unwrap_or_default() == rules {
            continue;
        }
        let name = role.metadata.name.clone().unwrap_or_default();
        let apply = serde_json::json!({
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": { "name": name },
            "rules": rules,
        });
        api.patch(
            &name,
            &PatchParams::apply(FIELD_MANAGER).force(),
            &Patch::Apply(&apply),
        )
        .await?;
    }
    Ok(())
}

/// Runs the controller until `cancel` fires.
pub(crate) async fn run(client: Client, cancel: CancellationToken) {
    let api: Api<ClusterRole> = Api::all(client);
    let (store, writer) = reflector::store();
    let changes = watcher(api.clone(), watcher::Config::default())
        .default_backoff()
        .reflect(writer)
        .map(|ev| match ev {
            Ok(watcher::Event::InitApply(_) | watcher::Event::Init) => Ok(false),
            Ok(_) => Ok(true),
            Err(e) => Err(e.to_string()),
        })
        .boxed();
    let pass = || {
        let (api, roles) = (api.clone(), store.state());
        async move {
            sync(&api, &roles)
                .await
                .map_err(|e| util::Brief(&e).to_string())
        }
    };
    util::on_changes(
        changes,
        SETTLE,
        RETRY,
        &cancel,
        "aggregating ClusterRoles",
        pass,
    )
    .await;
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::rbac::v1::AggregationRule;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};

    fn role(name: &str, labels: &[(&str, &str)], verbs: &[&str]) -> Arc<ClusterRole> {
        Arc::new(ClusterRole {
            metadata: ObjectMeta {
                name: Some(name.into()),
                labels: Some(
                    labels
                        .iter()
                        .map(|(k, v)| (k.to_string(), v.to_string()))
                        .collect(),
                ),
                ..ObjectMeta::default()
            },
            rules: Some(vec![PolicyRule {
                verbs: verbs.iter().map(|v| v.to_string()).collect(),
                api_groups: Some(vec![String::new()]),
                resources: Some(vec!["configmaps".into()]),
                ..PolicyRule::default()
            }]),
            aggregation_rule: None,
        })
    }

    #[test]
    fn gathers_matching_roles_in_name_order_each_rule_once() {
        let mut view = (*role("view", &[], &[])).clone();
        view.rules = None;
        view.aggregation_rule = Some(AggregationRule {
            cluster_role_selectors: Some(vec![LabelSelector {
                match_labels: Some([("agg".to_string(), "view".to_string())].into()),
                ..LabelSelector::default()
            }]),
        });
        let all = vec![
            Arc::new(view.clone()),
            role("z-watch", &[("agg", "view")], &["watch"]),
            role("a-get", &[("agg", "view")], &["get"]),
            role("b-get-again", &[("agg", "view")], &["get"]),
            role("other", &[("agg", "edit")], &["delete"]),
        ];
        let rules = aggregated_rules(&view, &all).unwrap();
        let verbs: Vec<&str> = rules.iter().map(|r| r.verbs[0].as_str()).collect();
        assert_eq!(verbs, ["get", "watch"]);
        assert_eq!(aggregated_rules(&all[1], &all), None);
    }
}
