//! `rbac/bootstrap-roles` (pkg/registry/rbac/rest/storage_rbac.go): makes the bootstrap
//! ClusterRoles and ClusterRoleBindings exist, then the bootstrap Roles and RoleBindings of
//! kube-system and kube-public (creating those namespaces if they are missing, as upstream's
//! RoleModifier does), reconciled as upstream reconciles them
//! (component-helpers auth/rbac/reconciliation) without undoing what users changed: missing
//! rules, aggregation selectors, labels, annotations and subjects are added, nothing is
//! removed, a binding whose roleRef changed is recreated, and an object annotated
//! `rbac.authorization.kubernetes.io/autoupdate: "false"` is left alone.

use crate::api::authorizer::PolicyRule;
use crate::api::rbac::covers;
use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::api::rbac::v1::{
    AggregationRule, ClusterRole, ClusterRoleBinding, Role, RoleBinding,
};
use kube::api::{DeleteParams, ObjectMeta, PostParams};
use kube::{Api, Client, Resource};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt::Debug;
use tracing::{info, warn};

/// The bootstrap policy, one YAML document per object.
const POLICY: &str = include_str!("bootstrap_policy.yaml");

/// The annotation that opts an object out of reconciliation when `"false"`.
const AUTOUPDATE: &str = "rbac.authorization.kubernetes.io/autoupdate";
/// The label prefix of aggregation labels (reconciled as any other label).
const AGGREGATE_PREFIX: &str = "rbac.authorization.k8s.io/aggregate-to-";

/// Why the policy could not be reconciled (the hook is retried).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub(crate) enum Error {
    /// The embedded policy does not parse (a build defect).
    #[error("the bootstrap policy does not parse")]
    Policy(#[source] serde_yaml::Error),
    /// A bootstrap object did not convert between its namespaced and cluster-wide forms.
    #[error("a bootstrap role or binding does not convert")]
    Convert(#[source] serde_json::Error),
    /// A request failed.
    #[error("unable to reconcile {what} {name}")]
    Api {
        /// `clusterrole.rbac.authorization.k8s.io` or the binding's.
        what: &'static str,
        /// Object name.
        name: String,
        /// The client's error.
        #[source]
        source: kube::Error,
    },
}

/// The bootstrap objects. Roles and RoleBindings are held in the shape of their cluster-wide
/// kinds (the same fields, with `metadata.namespace` set), so one reconciliation serves both.
pub(crate) struct Policy {
    /// ClusterRoles, in the policy's order.
    pub roles: Vec<ClusterRole>,
    /// ClusterRoleBindings.
    pub bindings: Vec<ClusterRoleBinding>,
    /// Roles, each with its namespace.
    pub namespace_roles: Vec<ClusterRole>,
    /// RoleBindings, each with its namespace.
    pub namespace_bindings: Vec<ClusterRoleBinding>,
}

/// Parses the embedded policy.
pub(crate) fn policy() -> Result<Policy, Error> {
    let mut out = Policy {
        roles: Vec::new(),
        bindings: Vec::new(),
        namespace_roles: Vec::new(),
        namespace_bindings: Vec::new(),
    };
    for doc in serde_yaml::Deserializer::from_str(POLICY) {
        let value = serde_json::Value::deserialize(doc).map_err(Error::Policy)?;
        match value.get("kind").and_then(|k| k.as_str()) {
            Some("ClusterRole") => out.roles.push(decode(value)?),
            Some("ClusterRoleBinding") => out.bindings.push(decode(value)?),
            Some("Role") => out
                .namespace_roles
                .push(recast::<Role, _>(&decode(value)?)?),
            Some("RoleBinding") => out
                .namespace_bindings
                .push(recast::<RoleBinding, _>(&decode(value)?)?),
            _ => {}
        }
    }
    Ok(out)
}

fn decode<T: DeserializeOwned>(value: serde_json::Value) -> Result<T, Error> {
    serde_json::from_value(value).map_err(|e| Error::Policy(serde::de::Error::custom(e)))
}

/// `obj` as the kind of the same fields `B` (Role and ClusterRole, RoleBinding and
/// ClusterRoleBinding); a Role gets no aggregationRule.
fn recast<A: Serialize, B: DeserializeOwned + Resource<DynamicType = ()>>(
    obj: &A,
) -> Result<B, Error> {
    let mut value = serde_json::to_value(obj).map_err(Error::Convert)?;
    if let Some(map) = value.as_object_mut() {
        map.insert("kind".into(), B::kind(&()).into());
        map.insert("apiVersion".into(), B::api_version(&()).into());
        if B::kind(&()) == "Role" {
            map.remove("aggregationRule");
        }
    }
    serde_json::from_value(value).map_err(Error::Convert)
}

fn to_rules(rules: &Option<Vec<k8s_openapi::api::rbac::v1::PolicyRule>>) -> Vec<PolicyRule> {
    serde_json::to_value(rules.as_deref().unwrap_or_default())
        .ok()
        .and_then(|v| serde_json::from_value(v).ok())
        .unwrap_or_default()
}

fn from_rules(rules: &[PolicyRule]) -> Vec<k8s_openapi::api::rbac::v1::PolicyRule> {
    serde_json::to_value(rules)
        .ok()
        .and_then(|v| serde_json::from_value(v).ok())
        .unwrap_or_default()
}

fn protected(annotations: &Option<BTreeMap<String, String>>) -> bool {
    annotations
        .as_ref()
        .and_then(|a| a.get(AUTOUPDATE))
        .is_some_and(|v| v == "false")
}

/// `merge(expected, existing)`: the later map wins.
fn merged(
    expected: &Option<BTreeMap<String, String>>,
    existing: &Option<BTreeMap<String, String>>,
) -> Option<BTreeMap<String, String>> {
    if expected.is_none() && existing.is_none() {
        return None;
    }
    let mut out = expected.clone().unwrap_or_default();
    out.extend(existing.clone().unwrap_or_default());
    Some(out)
}

/// computeReconciledRole (union mode): the existing role with what the expected one adds,
/// or None when nothing is missing.
pub(crate) fn reconcile_role(
    existing: &ClusterRole,
    expected: &ClusterRole,
) -> Option<ClusterRole> {
    let mut role = existing.clone();
    let mut changed = false;
    let annotations = merged(
        &expected.metadata.annotations,
        &existing.metadata.annotations,
    );
    changed |= annotations != existing.metadata.annotations;
    role.metadata.annotations = annotations;
    // Aggregation labels of the existing role give way to the expected ones.
    let kept = existing.metadata.labels.as_ref().map(|l| {
        l.iter()
            .filter(|(k, _)| !k.starts_with(AGGREGATE_PREFIX))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    });
    let labels = merged(&expected.metadata.labels, &kept);
    changed |= labels != existing.metadata.labels;
    role.metadata.labels = labels;

    let (have, want) = (to_rules(&existing.rules), to_rules(&expected.rules));
    let (_, missing) = covers(&have, &want);
    if !missing.is_empty() {
        let mut rules = have;
        rules.extend(missing);
        role.rules = Some(from_rules(&rules));
        changed = true;
    }
    let want_selectors = expected
        .aggregation_rule
        .as_ref()
        .and_then(|a| a.cluster_role_selectors.clone())
        .unwrap_or_default();
    match (&expected.aggregation_rule, &existing.aggregation_rule) {
        (None, Some(_)) => {
            role.aggregation_rule = None;
            changed = true;
        }
        (Some(_), _) => {
            let mut have = existing
                .aggregation_rule
                .as_ref()
                .and_then(|a| a.cluster_role_selectors.clone())
                .unwrap_or_default();
            let before = have.len();
            for s in want_selectors {
                if !have.contains(&s) {
                    have.push(s);
                }
            }
            if have.len() != before || existing.aggregation_rule.is_none() {
                role.aggregation_rule = Some(AggregationRule {
                    cluster_role_selectors: Some(have),
                });
                changed = true;
            }
        }
        (None, None) => {}
    }
    changed.then_some(role)
}

/// What reconciling a binding takes.
#[derive(Debug, PartialEq)]
pub(crate) enum BindingChange {
    /// Nothing.
    None,
    /// An update to this object.
    Update(Box<ClusterRoleBinding>),
    /// Its roleRef changed: delete it, create this one.
    Recreate(Box<ClusterRoleBinding>),
}

/// computeReconciledRoleBinding (union mode).
pub(crate) fn reconcile_binding(
    existing: &ClusterRoleBinding,
    expected: &ClusterRoleBinding,
) -> BindingChange {
    let mut binding = existing.clone();
    let mut changed = false;
    let annotations = merged(
        &expected.metadata.annotations,
        &existing.metadata.annotations,
    );
    changed |= annotations != existing.metadata.annotations;
    binding.metadata.annotations = annotations;
    let labels = merged(&expected.metadata.labels, &existing.metadata.labels);
    changed |= labels != existing.metadata.labels;
    binding.metadata.labels = labels;
    if existing.role_ref != expected.role_ref {
        binding.role_ref = expected.role_ref.clone();
        binding.metadata.resource_version = None;
        binding.metadata.uid = None;
        return BindingChange::Recreate(Box::new(binding));
    }
    let mut subjects = existing.subjects.clone().unwrap_or_default();
    for s in expected.subjects.iter().flatten() {
        if !subjects.contains(s) {
            subjects.push(s.clone());
            changed = true;
        }
    }
    if changed {
        binding.subjects = (!subjects.is_empty()).then_some(subjects);
        BindingChange::Update(Box::new(binding))
    } else {
        BindingChange::None
    }
}

fn api_error<'a>(what: &'static str, name: &'a str) -> impl FnOnce(kube::Error) -> Error + 'a {
    move |source| Error::Api {
        what,
        name: name.to_string(),
        source,
    }
}

fn is_status(e: &kube::Error, code: u16) -> bool {
    matches!(e, kube::Error::Api(s) if s.code == code)
}

/// Reconciles every bootstrap ClusterRole, then every ClusterRoleBinding, then the Roles and
/// RoleBindings of each namespace (ensureRBACPolicy).
pub(crate) async fn run(client: Client) -> Result<(), Error> {
    let policy = policy()?;
    ensure_roles(
        |_| Api::<ClusterRole>::all(client.clone()),
        "clusterrole.rbac.authorization.k8s.io",
        &policy.roles,
    )
    .await?;
    ensure_bindings(
        |_| Api::<ClusterRoleBinding>::all(client.clone()),
        "clusterrolebinding.rbac.authorization.k8s.io",
        &policy.bindings,
    )
    .await?;
    let namespaces = (policy.namespace_roles.iter().map(|r| &r.metadata))
        .chain(policy.namespace_bindings.iter().map(|b| &b.metadata))
        .filter_map(|m| m.namespace.as_deref())
        .collect::<std::collections::BTreeSet<_>>();
    let nss: Api<Namespace> = Api::all(client.clone());
    for ns in namespaces {
        let namespace = Namespace {
            metadata: ObjectMeta {
                name: Some(ns.to_string()),
                ..ObjectMeta::default()
            },
            ..Namespace::default()
        };
        match nss.create(&PostParams::default(), &namespace).await {
            Ok(_) => info!("created namespace {ns}"),
            Err(e) if is_status(&e, 409) => {}
            Err(e) => return Err(api_error("namespace", ns)(e)),
        }
    }
    ensure_roles(
        |ns| Api::<Role>::namespaced(client.clone(), ns),
        "role.rbac.authorization.k8s.io",
        &policy.namespace_roles,
    )
    .await?;
    ensure_bindings(
        |ns| Api::<RoleBinding>::namespaced(client.clone(), ns),
        "rolebinding.rbac.authorization.k8s.io",
        &policy.namespace_bindings,
    )
    .await
}

/// What the bootstrap objects are read and written as: ClusterRoles and Roles (and their
/// bindings) through one reconciliation.
trait Kind: Clone + Debug + Serialize + DeserializeOwned + Resource<DynamicType = ()> {}
impl<K: Clone + Debug + Serialize + DeserializeOwned + Resource<DynamicType = ()>> Kind for K {}

fn name_of(meta: &ObjectMeta) -> (String, String) {
    let ns = meta.namespace.clone().unwrap_or_default();
    (ns, meta.name.clone().unwrap_or_default())
}

/// Creates each missing role and adds what an existing one lacks (unless it is protected).
async fn ensure_roles<K: Kind>(
    api: impl Fn(&str) -> Api<K>,
    what: &'static str,
    expected: &[ClusterRole],
) -> Result<(), Error> {
    for expected in expected {
        let (ns, name) = name_of(&expected.metadata);
        let roles = api(&ns);
        match roles.get_opt(&name).await.map_err(api_error(what, &name))? {
            None => match roles
                .create(&PostParams::default(), &recast(expected)?)
                .await
            {
                Ok(_) => info!("created {what}/{name}"),
                // Made meanwhile (another replica): the next start reconciles it.
                Err(e) if is_status(&e, 409) => {}
                Err(e) => return Err(api_error(what, &name)(e)),
            },
            Some(existing) => {
                let existing: ClusterRole = recast(&existing)?;
                let Some(role) = reconcile_role(&existing, expected) else {
                    continue;
                };
                if protected(&existing.metadata.annotations) {
                    warn!("skipped reconcile-protected {what}/{name} with missing permissions");
                    continue;
                }
                roles
                    .replace(&name, &PostParams::default(), &recast(&role)?)
                    .await
                    .map_err(api_error(what, &name))?;
                info!("updated {what}/{name} with additional permissions");
            }
        }
    }
    Ok(())
}

/// Creates each missing binding, adds missing subjects, recreates one whose roleRef changed.
async fn ensure_bindings<K: Kind>(
    api: impl Fn(&str) -> Api<K>,
    what: &'static str,
    expected: &[ClusterRoleBinding],
) -> Result<(), Error> {
    for expected in expected {
        let (ns, name) = name_of(&expected.metadata);
        let bindings = api(&ns);
        let Some(existing) = bindings
            .get_opt(&name)
            .await
            .map_err(api_error(what, &name))?
        else {
            match bindings
                .create(&PostParams::default(), &recast(expected)?)
                .await
            {
                Ok(_) => info!("created {what}/{name}"),
                Err(e) if is_status(&e, 409) => {}
                Err(e) => return Err(api_error(what, &name)(e)),
            }
            continue;
        };
        let existing: ClusterRoleBinding = recast(&existing)?;
        let change = reconcile_binding(&existing, expected);
        if change != BindingChange::None && protected(&existing.metadata.annotations) {
            warn!("skipped reconcile-protected {what}/{name} with missing subjects");
            continue;
        }
        match change {
            BindingChange::None => {}
            BindingChange::Update(b) => {
                bindings
                    .replace(&name, &PostParams::default(), &recast(&*b)?)
                    .await
                    .map_err(api_error(what, &name))?;
                info!("updated {what}/{name} with additional subjects");
            }
            BindingChange::Recreate(b) => {
                match bindings.delete(&name, &DeleteParams::default()).await {
                    Ok(_) => {}
                    Err(e) if is_status(&e, 404) => {}
                    Err(e) => return Err(api_error(what, &name)(e)),
                }
                bindings
                    .create(&PostParams::default(), &recast(&*b)?)
                    .await
                    .map_err(api_error(what, &name))?;
                info!("recreated {what}/{name}");
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::rbac::v1::{RoleRef, Subject};

    #[test]
    fn the_policy_has_upstreams_roles_and_bindings() {
        let p = policy().unwrap();
        let names: Vec<String> = p
            .roles
            .iter()
            .map(|r| r.metadata.name.clone().unwrap())
            .collect();
        for want in [
            "cluster-admin",
            "admin",
            "edit",
            "view",
            "system:discovery",
            "system:basic-user",
            "system:public-info-viewer",
            "system:monitoring",
            "system:service-account-issuer-discovery",
        ] {
            assert!(names.iter().any(|n| n == want), "{want} missing");
        }
        let viewer = p
            .bindings
            .iter()
            .find(|b| b.metadata.name.as_deref() == Some("system:public-info-viewer"))
            .unwrap();
        let groups: Vec<&str> = viewer
            .subjects
            .iter()
            .flatten()
            .map(|s| s.name.as_str())
            .collect();
        assert_eq!(groups, ["system:authenticated", "system:unauthenticated"]);
        // Upstream's namespace-roles.yaml and namespace-role-bindings.yaml, whole.
        let named = |m: &ObjectMeta| {
            format!(
                "{}/{}",
                m.namespace.as_deref().unwrap_or("-"),
                m.name.as_deref().unwrap_or("-")
            )
        };
        let roles: Vec<String> = p
            .namespace_roles
            .iter()
            .map(|r| named(&r.metadata))
            .collect();
        assert_eq!(roles.len(), 7, "{roles:?}");
        assert!(roles.contains(&"kube-system/extension-apiserver-authentication-reader".into()));
        assert!(roles.contains(&"kube-public/system:controller:bootstrap-signer".into()));
        let reader = p
            .namespace_bindings
            .iter()
            .find(|b| b.role_ref.name == "extension-apiserver-authentication-reader")
            .unwrap();
        assert_eq!(
            named(&reader.metadata),
            "kube-system/system::extension-apiserver-authentication-reader"
        );
        assert_eq!(reader.role_ref.kind, "Role");
        assert_eq!(p.namespace_bindings.len(), 7);
        // A Role converts to its own kind and back without losing a field.
        let role: Role = recast(&p.namespace_roles[1]).unwrap();
        assert_eq!(role.metadata.namespace.as_deref(), Some("kube-system"));
        let back: ClusterRole = recast(&role).unwrap();
        assert_eq!(back, p.namespace_roles[1]);
        for r in p.roles.iter().chain(&p.namespace_roles) {
            let annotations = r.metadata.annotations.clone().unwrap_or_default();
            assert_eq!(
                annotations.get(AUTOUPDATE).map(String::as_str),
                Some("true")
            );
        }
    }

    #[test]
    fn reconciling_adds_what_is_missing_and_keeps_what_users_added() {
        let p = policy().unwrap();
        let expected = p
            .roles
            .iter()
            .find(|r| r.metadata.name.as_deref() == Some("system:public-info-viewer"))
            .unwrap();
        assert_eq!(reconcile_role(expected, expected), None);
        let mut edited = expected.clone();
        let mut rules = to_rules(&edited.rules);
        rules[0].non_resource_urls.retain(|u| u != "/version");
        rules.push(PolicyRule {
            verbs: vec!["get".into()],
            non_resource_urls: vec!["/metrics".into()],
            ..PolicyRule::default()
        });
        edited.rules = Some(from_rules(&rules));
        edited
            .metadata
            .labels
            .get_or_insert_default()
            .insert("team".into(), "ops".into());
        let fixed = reconcile_role(&edited, expected).expect("a rule is missing");
        let fixed_rules = to_rules(&fixed.rules);
        assert!(covers(&fixed_rules, &to_rules(&expected.rules)).0);
        assert!(fixed_rules
            .iter()
            .any(|r| r.non_resource_urls == ["/metrics"]));
        assert_eq!(fixed.metadata.labels.unwrap()["team"], "ops");
    }

    #[test]
    fn bindings_gain_subjects_and_are_recreated_for_a_new_role() {
        let subject = |n: &str| Subject {
            kind: "Group".into(),
            name: n.into(),
            api_group: Some("rbac.authorization.k8s.io".into()),
            namespace: None,
        };
        let role = |n: &str| RoleRef {
            api_group: "rbac.authorization.k8s.io".into(),
            kind: "ClusterRole".into(),
            name: n.into(),
        };
        let expected = ClusterRoleBinding {
            role_ref: role("view"),
            subjects: Some(vec![subject("a")]),
            ..ClusterRoleBinding::default()
        };
        let mut existing = expected.clone();
        existing.subjects = Some(vec![subject("b")]);
        let BindingChange::Update(b) = reconcile_binding(&existing, &expected) else {
            panic!("a subject is missing")
        };
        assert_eq!(b.subjects.unwrap(), vec![subject("b"), subject("a")]);
        existing.role_ref = role("edit");
        assert!(matches!(
            reconcile_binding(&existing, &expected),
            BindingChange::Recreate(b) if b.role_ref.name == "view"
        ));
        assert_eq!(reconcile_binding(&expected, &expected), BindingChange::None);
    }
}
