//! The RBAC authorizer (plugin/pkg/auth/authorizer/rbac) and its rule resolver
//! (pkg/registry/rbac/validation): it follows the stored Roles, RoleBindings, ClusterRoles and
//! ClusterRoleBindings through the registry's own stores (every replica on one etcd decides
//! alike) and answers from an index of grants by subject. The escalation checks of the RBAC
//! resources resolve a writer's rules through it too.
//! May use: registry (stores), api.

pub(crate) mod escalation;
mod index;

pub(crate) use index::{Kind, RoleRef};

use crate::api::authorizer::{Authorizer, Decision, PolicyRule, Rules};
use crate::api::{RequestInfo, UserInfo};
use crate::registry::error::Error;
use crate::registry::follow::{follow, ns_name, object_key, Change, Synced};
use crate::registry::{GenericStore, Registry};
use index::{Index, Visit};
use std::collections::HashSet;
use std::sync::{Arc, RwLock};

/// The RBAC authorizer over what it follows.
#[derive(Default)]
pub(crate) struct Rbac {
    index: RwLock<Index>,
    /// Which [`Kind`]s have been listed.
    synced: Synced,
}

/// utilerrors.NewAggregate(errs).Error(): one message alone, several (deduplicated) in `[]`.
fn aggregate(errors: &[String]) -> String {
    let mut seen: Vec<&str> = Vec::new();
    for e in errors {
        if !seen.contains(&e.as_str()) {
            seen.push(e);
        }
    }
    match seen.len() {
        0 => String::new(),
        1 => seen[0].to_string(),
        _ => format!("[{}]", seen.join(", ")),
    }
}

impl Rbac {
    /// An authorizer that knows no objects yet.
    pub(crate) fn new() -> Arc<Rbac> {
        Arc::new(Rbac::default())
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, Index> {
        self.index.read().unwrap_or_else(|p| p.into_inner())
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, Index> {
        self.index.write().unwrap_or_else(|p| p.into_inner())
    }

    /// Waits until every kind has been listed once.
    pub(crate) async fn wait_synced(&self) {
        self.synced.wait(Kind::ALL.len()).await;
    }

    fn mark_synced(&self, kind: Kind) {
        self.synced
            .mark(Kind::ALL.iter().position(|k| *k == kind).unwrap_or(0));
    }

    /// RulesFor: every rule of `user` in `namespace`, and the resolution errors met.
    pub(crate) fn rules(&self, user: &UserInfo, namespace: &str) -> (Vec<PolicyRule>, Vec<String>) {
        let (mut rules, mut errors) = (Vec::new(), Vec::new());
        self.read().visit(user, namespace, &mut |v| {
            match v {
                Visit::Rule(_, rule) => rules.push(rule.clone()),
                Visit::Error(err) => errors.push(err),
            }
            true
        });
        (rules, errors)
    }

    /// The rules of cluster role `name`, or of role `name` in `namespace`
    /// (GetRoleReferenceRules), with upstream's not-found message.
    pub(crate) fn role_rules(
        &self,
        role: &RoleRef,
        namespace: &str,
    ) -> Result<Vec<PolicyRule>, String> {
        self.read().role_rules(role, namespace).map(|r| r.to_vec())
    }

    /// Follows one kind until the future is dropped or storage fails (see
    /// [`crate::registry::follow`]); marks it synced after each full list.
    ///
    /// # Errors
    ///
    /// The registry does not serve the kind, or reading it failed (the caller retries).
    pub(crate) async fn follow(&self, registry: &Registry, kind: Kind) -> Result<(), Error> {
        let store = rbac_store(registry, kind)
            .ok_or_else(|| Error::Internal(format!("{} are not served", kind.resource())))?;
        follow(&store, &|change| match change {
            Change::Listed(items) => {
                {
                    let mut index = self.write();
                    let keep: HashSet<String> = items.iter().map(|o| object_key(o)).collect();
                    for obj in items {
                        index.put(kind, obj);
                    }
                    index.retain(kind, &keep);
                }
                self.mark_synced(kind);
            }
            Change::Put(obj) => self.write().put(kind, obj),
            Change::Deleted(obj) => {
                let (ns, name) = ns_name(obj);
                self.write().delete(kind, ns, name);
            }
        })
        .await
    }
}

/// The registry's store of one RBAC kind.
pub(crate) fn rbac_store(registry: &Registry, kind: Kind) -> Option<Arc<GenericStore>> {
    registry
        .resources()
        .stored("rbac.authorization.k8s.io", "v1", kind.resource())
}

impl Authorizer for Rbac {
    fn authorize(&self, user: &UserInfo, attrs: &RequestInfo) -> Decision {
        let mut allowed = None;
        let mut errors = Vec::new();
        self.read().visit(user, &attrs.namespace, &mut |v| {
            match v {
                Visit::Rule(source, rule) => {
                    if crate::api::rbac::allows(rule, attrs) {
                        allowed = Some(source.clone());
                        return false;
                    }
                }
                Visit::Error(err) => errors.push(err),
            }
            true
        });
        match allowed {
            Some(source) => Decision::Allow(source),
            None if errors.is_empty() => Decision::NoOpinion(String::new()),
            None => Decision::NoOpinion(format!("RBAC: {}", aggregate(&errors))),
        }
    }

    fn rules_for(&self, user: &UserInfo, namespace: &str) -> Rules {
        let (rules, errors) = self.rules(user, namespace);
        let (resource, non_resource) =
            rules
                .into_iter()
                .fold((Vec::new(), Vec::new()), |(mut res, mut non), rule| {
                    if !rule.resources.is_empty() {
                        res.push(PolicyRule {
                            non_resource_urls: Vec::new(),
                            ..rule.clone()
                        });
                    }
                    if !rule.non_resource_urls.is_empty() {
                        non.push(PolicyRule {
                            verbs: rule.verbs,
                            non_resource_urls: rule.non_resource_urls,
                            ..PolicyRule::default()
                        });
                    }
                    (res, non)
                });
        Rules {
            resource,
            non_resource,
            incomplete: false,
            evaluation_error: aggregate(&errors),
        }
    }
}

#[cfg(test)]
mod tests;
