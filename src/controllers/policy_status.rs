//! The ValidatingAdmissionPolicy status controller (kube-controller-manager's
//! pkg/controller/validatingadmissionpolicystatus, run in-process as kapi runs the other
//! controllers): a policy whose generation is newer than its `status.observedGeneration` is
//! type-checked against the schemas of the kinds its matchConstraints name (exact groups,
//! versions and resources only, at most 10 kinds, as upstream's typesToCheck), and
//! `status.typeChecking.expressionWarnings` and `status.observedGeneration` are written with
//! server-side apply under the field manager `validatingadmissionpolicy-status-controller`,
//! forced. The kinds and their schemas are read from the server's own discovery and OpenAPI v3,
//! as upstream's schema resolver reads them. See [`crate::registry::admission::typecheck`] for
//! what is checked.

use super::util;
use crate::registry::admission::typecheck::{check_expression, KindSchema};
use futures::StreamExt;
use k8s_openapi::api::admissionregistration::v1::ValidatingAdmissionPolicy;
use kube::api::{Patch, PatchParams};
use kube::runtime::{reflector, watcher, WatchStreamExt};
use kube::{Api, Client};
use serde_json::{json, Map, Value};
use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// The field manager of the status it writes (ControllerName upstream).
const FIELD_MANAGER: &str = "validatingadmissionpolicy-status-controller";
/// At most this many kinds are checked per policy (maxTypesToCheck).
const MAX_TYPES: usize = 10;
const SETTLE: Duration = Duration::from_millis(50);
const RETRY: Duration = Duration::from_secs(1);

/// A kind to check against: its group, version and kind, its schema and the definitions
/// its schema refers to.
struct Kind {
    gvk: (String, String, String),
    root: Value,
    defs: Map<String, Value>,
}

async fn get(client: &Client, path: &str) -> Result<Value, kube::Error> {
    let req = http::Request::get(path)
        .body(Vec::new())
        .map_err(kube::Error::HttpError)?;
    client.request::<Value>(req).await
}

/// The path of a group/version: `/api/v1` or `/apis/<group>/<version>`.
fn group_version_path(group: &str, version: &str) -> String {
    if group.is_empty() {
        format!("/api/{version}")
    } else {
        format!("/apis/{group}/{version}")
    }
}

/// The kinds of `rules` (resourceRules of matchConstraints) with their schemas; rules with a
/// wildcard are skipped, as upstream's extractGroups/Versions/Resources give up on them.
async fn kinds(client: &Client, rules: &[Value]) -> Vec<Kind> {
    let strings = |r: &Value, k: &str| -> Option<Vec<String>> {
        let v: Vec<String> = r
            .get(k)?
            .as_array()?
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_string)
            .collect();
        (!v.is_empty() && !v.iter().any(|s| s.contains('*'))).then_some(v)
    };
    let mut wanted: BTreeSet<(String, String, String)> = BTreeSet::new();
    'rules: for rule in rules {
        let (Some(mut groups), Some(mut versions), Some(mut resources)) = (
            strings(rule, "apiGroups"),
            strings(rule, "apiVersions"),
            strings(rule, "resources"),
        ) else {
            continue;
        };
        groups.sort();
        versions.sort();
        resources.sort();
        for g in &groups {
            for v in &versions {
                let Ok(list) = get(client, &group_version_path(g, v)).await else {
                    continue;
                };
                for r in &resources {
                    let kind = list["resources"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .find(|x| x["name"] == r.as_str())
                        .and_then(|x| x["kind"].as_str());
                    if let Some(kind) = kind {
                        wanted.insert((g.clone(), v.clone(), kind.to_string()));
                        if wanted.len() == MAX_TYPES {
                            break 'rules;
                        }
                    }
                }
            }
        }
    }
    let mut out = Vec::new();
    for (g, v, k) in wanted {
        let path = format!("/openapi/v3{}", group_version_path(&g, &v));
        let Ok(doc) = get(client, &path).await else {
            continue;
        };
        let Some(defs) = doc
            .pointer("/components/schemas")
            .and_then(Value::as_object)
        else {
            continue;
        };
        let root = defs.values().find(|s| {
            s["x-kubernetes-group-version-kind"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|x| {
                    x["group"] == g.as_str()
                        && x["version"] == v.as_str()
                        && x["kind"] == k.as_str()
                })
        });
        if let Some(root) = root {
            out.push(Kind {
                gvk: (g, v, k),
                root: root.clone(),
                defs: defs.clone(),
            });
        }
    }
    out
}

/// The expression warnings of `spec` against `kinds` (TypeChecker.Check).
fn warnings(spec: &Value, kinds: &[Kind]) -> Vec<Value> {
    let mut out = Vec::new();
    let check = |expression: &str| -> Option<String> {
        let results: Vec<String> = kinds
            .iter()
            .filter_map(|k| {
                let schema = KindSchema {
                    root: &k.root,
                    defs: &k.defs,
                };
                let issues = check_expression(expression, &schema)?;
                let (g, v, kind) = &k.gvk;
                Some(format!("{g}/{v}, Kind={kind}: {issues}\n"))
            })
            .collect();
        (!results.is_empty()).then(|| results.join("\n"))
    };
    for (i, v) in spec["validations"]
        .as_array()
        .into_iter()
        .flatten()
        .enumerate()
    {
        for field in ["expression", "messageExpression"] {
            let Some(expression) = v[field].as_str().filter(|e| !e.is_empty()) else {
                continue;
            };
            if let Some(warning) = check(expression) {
                out.push(json!({"fieldRef": format!("spec.validations[{i}].{field}"), "warning": warning}));
            }
        }
    }
    out
}

/// Writes the status of every policy whose generation is not yet observed.
async fn sync(
    client: &Client,
    api: &Api<ValidatingAdmissionPolicy>,
    all: &[Arc<ValidatingAdmissionPolicy>],
) -> Result<(), kube::Error> {
    for policy in all {
        let generation = policy.metadata.generation.unwrap_or(0);
        let observed = policy
            .status
            .as_ref()
            .and_then(|s| s.observed_generation)
            .unwrap_or(0);
        if generation <= observed {
            continue;
        }
        let Some(name) = policy.metadata.name.as_deref() else {
            continue;
        };
        let spec = serde_json::to_value(&policy.spec).unwrap_or(Value::Null);
        let rules = spec
            .pointer("/matchConstraints/resourceRules")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        let kinds = kinds(client, &rules).await;
        let apply = json!({
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingAdmissionPolicy",
            "metadata": {"name": name},
            "status": {
                "observedGeneration": generation,
                "typeChecking": {"expressionWarnings": warnings(&spec, &kinds)},
            },
        });
        api.patch_status(
            name,
            &PatchParams::apply(FIELD_MANAGER).force(),
            &Patch::Apply(&apply),
        )
        .await?;
    }
    Ok(())
}

/// Runs the controller until `cancel` fires.
pub(crate) async fn run(client: Client, cancel: CancellationToken) {
    let api: Api<ValidatingAdmissionPolicy> = Api::all(client.clone());
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
        let (client, api, policies) = (client.clone(), api.clone(), store.state());
        async move {
            sync(&client, &api, &policies)
                .await
                .map_err(|e| util::Brief(&e).to_string())
        }
    };
    util::on_changes(
        changes,
        SETTLE,
        RETRY,
        &cancel,
        "type-checking ValidatingAdmissionPolicies",
        pass,
    )
    .await;
}
