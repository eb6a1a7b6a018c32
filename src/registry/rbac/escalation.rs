//! Escalation prevention (pkg/registry/rbac/{role,clusterrole,rolebinding,clusterrolebinding}/
//! policybased and pkg/registry/rbac/validation): a role may be written only with rules its
//! writer holds, or by someone allowed to `escalate` it; a binding only by someone holding the
//! bound role's rules, or allowed to `bind` it. Members of system:masters (the loopback
//! client among them) may do both.

use super::{Rbac, RoleRef};
use crate::api::authorizer::{Authorizer, PolicyRule};
use crate::api::rbac::{compact, compact_string, covers, go_quote};
use crate::api::{RequestInfo, UserInfo};
use crate::registry::error::Error;
use crate::registry::strategy::name_of;
use serde_json::Value;
use std::sync::Arc;

const GROUP: &str = "rbac.authorization.k8s.io";
/// The group whose members may write any role or binding.
const PRIVILEGED_GROUP: &str = "system:masters";

/// Who writes, and what answers for them: what the RBAC resources' writes are checked with.
/// A registry call without one comes from inside the server and is not checked.
#[derive(Clone)]
pub(crate) struct Access {
    /// The writer.
    pub user: Arc<UserInfo>,
    /// The server's authorizer (every mode, in order).
    pub authorizer: Arc<dyn Authorizer>,
    /// The RBAC rule resolver.
    pub rbac: Arc<Rbac>,
}

impl std::fmt::Debug for Access {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Access")
            .field("user", &self.user.name)
            .finish()
    }
}

impl Access {
    /// EscalationAllowed: the writer is in system:masters.
    fn privileged(&self) -> bool {
        self.user.groups.iter().any(|g| g == PRIVILEGED_GROUP)
    }

    /// Whether the authorizer allows `verb` on `resource` named `name` of the rbac group.
    fn may(&self, verb: &str, resource: &str, namespace: &str, name: &str) -> bool {
        let attrs = RequestInfo {
            is_resource_request: true,
            verb: verb.into(),
            api_group: GROUP.into(),
            api_version: "*".into(),
            namespace: namespace.into(),
            resource: resource.into(),
            name: name.into(),
            ..RequestInfo::default()
        };
        self.authorizer.authorize(&self.user, &attrs).allowed()
    }

    /// ConfirmNoEscalation: the writer's rules in `namespace` cover `rules`.
    fn confirm_no_escalation(&self, namespace: &str, rules: &[PolicyRule]) -> Result<(), String> {
        let (owned, errors) = self.rbac.rules(&self.user, namespace);
        let (ok, missing) = covers(&owned, rules);
        if ok {
            return Ok(());
        }
        let mut lines: Vec<String> = compact(missing).iter().map(compact_string).collect();
        lines.sort();
        lines.dedup();
        let groups: Vec<String> = self.user.groups.iter().map(|g| go_quote(g)).collect();
        let mut msg = format!(
            "user {} (groups=[{}]) is attempting to grant RBAC permissions not currently held:\n{}",
            go_quote(&self.user.name),
            groups.join(" "),
            lines.join("\n")
        );
        if !errors.is_empty() {
            msg.push_str(&format!(
                "; resolution errors: [{}]",
                super::aggregate(&errors)
            ));
        }
        Err(msg)
    }
}

fn forbidden(resource: &str, name: &str, message: String) -> Error {
    Error::Forbidden {
        group: GROUP.into(),
        resource: resource.into(),
        name: name.into(),
        message,
        causes: Vec::new(),
    }
}

fn rules_of(obj: &Value) -> Vec<PolicyRule> {
    obj.get("rules")
        .cloned()
        .and_then(|r| serde_json::from_value(r).ok())
        .unwrap_or_default()
}

/// Whether an update changes only what the garbage collector writes (IsOnlyMutatingGCFields:
/// ownerReferences and finalizers).
fn only_gc_fields(new: &Value, old: &Value) -> bool {
    let strip = |v: &Value| {
        let mut v = v.clone();
        if let Some(m) = v.get_mut("metadata").and_then(Value::as_object_mut) {
            for f in [
                "ownerReferences",
                "finalizers",
                "resourceVersion",
                "managedFields",
                "generation",
            ] {
                m.remove(f);
            }
        }
        v
    };
    strip(new) == strip(old)
}

/// Every rule there is: what the aggregationRule of a cluster role may gather.
fn full_authority() -> [PolicyRule; 2] {
    let all = || vec!["*".to_string()];
    [
        PolicyRule {
            verbs: all(),
            api_groups: all(),
            resources: all(),
            ..PolicyRule::default()
        },
        PolicyRule {
            verbs: all(),
            non_resource_urls: all(),
            ..PolicyRule::default()
        },
    ]
}

/// The check of a Role or ClusterRole write (`resource` is `roles` or `clusterroles`) by
/// `access` in `namespace`; `old` is the stored object of an update.
pub(crate) fn check_role(
    access: &Access,
    resource: &str,
    namespace: &str,
    new: &Value,
    old: Option<&Value>,
) -> Result<(), Error> {
    if old.is_some_and(|old| only_gc_fields(new, old)) || access.privileged() {
        return Ok(());
    }
    let name = name_of(new);
    if access.may("escalate", resource, namespace, name) {
        return Ok(());
    }
    access
        .confirm_no_escalation(namespace, &rules_of(new))
        .map_err(|e| forbidden(resource, name, e))?;
    let aggregation = new.get("aggregationRule").filter(|a| !a.is_null());
    let changed = aggregation
        != old
            .and_then(|o| o.get("aggregationRule"))
            .filter(|a| !a.is_null());
    if resource == "clusterroles" && aggregation.is_some() && changed {
        access
            .confirm_no_escalation(namespace, &full_authority())
            .map_err(|_| {
                forbidden(
                    resource,
                    name,
                    "must have cluster-admin privileges to use the aggregationRule".into(),
                )
            })?;
    }
    Ok(())
}

/// The check of a RoleBinding or ClusterRoleBinding write (`resource` is `rolebindings` or
/// `clusterrolebindings`) by `access` in `namespace` ("" for a ClusterRoleBinding).
pub(crate) fn check_binding(
    access: &Access,
    resource: &str,
    namespace: &str,
    new: &Value,
    old: Option<&Value>,
) -> Result<(), Error> {
    if old.is_some_and(|old| only_gc_fields(new, old)) || access.privileged() {
        return Ok(());
    }
    let name = name_of(new);
    let role: RoleRef = new
        .get("roleRef")
        .cloned()
        .and_then(|r| serde_json::from_value(r).ok())
        .unwrap_or_default();
    let role_resource = if role.kind == "Role" {
        "roles"
    } else {
        "clusterroles"
    };
    // BindingAuthorized: `bind` on the referenced role.
    if access.may("bind", role_resource, namespace, &role.name) {
        return Ok(());
    }
    let rules = access
        .rbac
        .role_rules(&role, namespace)
        .map_err(|e| forbidden(resource, name, e))?;
    access
        .confirm_no_escalation(namespace, &rules)
        .map_err(|e| forbidden(resource, name, e))
}
