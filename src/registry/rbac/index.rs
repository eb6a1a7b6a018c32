//! The RBAC objects as the authorizer reads them (upstream reads informer listers): roles and
//! cluster roles by name, and bindings indexed by subject, so a request looks up the grants
//! of its user and groups instead of scanning every binding. A ServiceAccount subject is
//! indexed under its user name, `system:serviceaccount:<namespace>:<name>`.

use crate::api::authorizer::PolicyRule;
use crate::api::UserInfo;
use serde::Deserialize;
use serde_json::Value;
use std::sync::Arc;

/// Hash maps looked up by name or token on every request: foldhash, randomly seeded per map
/// (hashbrown's default), a fraction of SipHash's cost on these short keys.
type HashMap<K, V> = std::collections::HashMap<K, V, foldhash::fast::RandomState>;

/// A binding's roleRef.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default)]
pub(crate) struct RoleRef {
    /// `Role` or `ClusterRole`.
    pub kind: String,
    /// The role's name.
    pub name: String,
}

/// A binding's subject.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default)]
pub(crate) struct Subject {
    /// `User`, `Group` or `ServiceAccount`.
    pub kind: String,
    /// Its name.
    pub name: String,
    /// A ServiceAccount's namespace (defaults to the RoleBinding's).
    pub namespace: String,
}

/// The parts of a (Cluster)RoleBinding the authorizer reads.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub(crate) struct Binding {
    /// The granted role.
    pub role_ref: RoleRef,
    /// Who it is granted to.
    pub subjects: Vec<Subject>,
}

/// The parts of a (Cluster)Role the authorizer reads.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub(crate) struct Role {
    /// Its rules.
    pub rules: Vec<PolicyRule>,
}

/// The user name of service account `name` in `namespace`.
pub(crate) fn service_account_user(namespace: &str, name: &str) -> String {
    format!("system:serviceaccount:{namespace}:{name}")
}

/// describeSubject.
fn describe_subject(s: &Subject, binding_namespace: &str) -> String {
    let name = if s.kind == "ServiceAccount" {
        let ns = if s.namespace.is_empty() {
            binding_namespace
        } else {
            &s.namespace
        };
        format!("{}/{ns}", s.name)
    } else {
        s.name.clone()
    };
    format!("{} {}", s.kind, crate::api::rbac::go_quote(&name))
}

/// One role granted to one subject by one binding.
#[derive(Debug, Clone)]
pub(crate) struct Grant {
    /// The binding's name (to drop its grants when it changes).
    binding: Arc<str>,
    /// The granted role.
    pub role: Arc<RoleRef>,
    /// `RBAC: allowed by ClusterRoleBinding "b" of ClusterRole "r" to User "u"`: the reason
    /// of the decisions it allows.
    pub source: Arc<str>,
}

/// The grants of one scope (the cluster, or one namespace), by subject.
#[derive(Debug, Default)]
pub(crate) struct Grants {
    users: HashMap<String, Vec<Grant>>,
    groups: HashMap<String, Vec<Grant>>,
    /// binding name → (is group, subject key) of each of its grants.
    by_binding: HashMap<Arc<str>, Vec<(bool, String)>>,
}

impl Grants {
    /// Replaces the grants of binding `name` (in namespace `namespace`, "" for a cluster
    /// binding) by those of `binding`.
    fn put(&mut self, namespace: &str, name: &str, binding: &Binding) {
        self.remove(name);
        let name: Arc<str> = Arc::from(name);
        let role = Arc::new(binding.role_ref.clone());
        let mut keys = Vec::new();
        for s in &binding.subjects {
            let (group, key) = match s.kind.as_str() {
                "User" => (false, s.name.clone()),
                "Group" => (true, s.name.clone()),
                "ServiceAccount" => {
                    let ns = if s.namespace.is_empty() {
                        namespace
                    } else {
                        &s.namespace
                    };
                    if ns.is_empty() {
                        continue;
                    }
                    (false, service_account_user(ns, &s.name))
                }
                _ => continue,
            };
            let source = if namespace.is_empty() {
                format!(
                    "RBAC: allowed by ClusterRoleBinding {} of {} {} to {}",
                    crate::api::rbac::go_quote(&name),
                    role.kind,
                    crate::api::rbac::go_quote(&role.name),
                    describe_subject(s, "")
                )
            } else {
                format!(
                    "RBAC: allowed by RoleBinding {} of {} {} to {}",
                    crate::api::rbac::go_quote(&format!("{name}/{namespace}")),
                    role.kind,
                    crate::api::rbac::go_quote(&role.name),
                    describe_subject(s, namespace)
                )
            };
            let grant = Grant {
                binding: name.clone(),
                role: role.clone(),
                source: source.into(),
            };
            let map = if group {
                &mut self.groups
            } else {
                &mut self.users
            };
            let list = map.entry(key.clone()).or_default();
            // upstream's appliesTo takes a binding's first matching subject only.
            if list.iter().any(|g| g.binding == name) {
                continue;
            }
            list.push(grant);
            keys.push((group, key));
        }
        self.by_binding.insert(name, keys);
    }

    /// Drops the grants of binding `name`.
    fn remove(&mut self, name: &str) {
        let Some(keys) = self.by_binding.remove(name) else {
            return;
        };
        for (group, key) in keys {
            let map = if group {
                &mut self.groups
            } else {
                &mut self.users
            };
            if let Some(list) = map.get_mut(&key) {
                list.retain(|g| &*g.binding != name);
                if list.is_empty() {
                    map.remove(&key);
                }
            }
        }
    }

    /// Every grant that applies to `user`: its name's, then its groups'.
    pub(crate) fn of<'a>(&'a self, user: &'a UserInfo) -> impl Iterator<Item = &'a Grant> + 'a {
        let own = self.users.get(&user.name).into_iter().flatten();
        let groups = user
            .groups
            .iter()
            .filter_map(|g| self.groups.get(g))
            .flatten();
        own.chain(groups)
    }

    fn is_empty(&self) -> bool {
        self.by_binding.is_empty()
    }
}

/// What [`Index::visit`] hands its visitor.
pub(crate) enum Visit<'a> {
    /// A rule that applies, and the reason it applies.
    Rule(&'a Arc<str>, &'a PolicyRule),
    /// A binding whose role could not be resolved.
    Error(String),
}

/// Everything the RBAC authorizer reads.
#[derive(Debug, Default)]
pub(crate) struct Index {
    cluster_roles: HashMap<String, Arc<[PolicyRule]>>,
    /// namespace → name → rules.
    roles: HashMap<String, HashMap<String, Arc<[PolicyRule]>>>,
    cluster_grants: Grants,
    /// namespace → grants of its RoleBindings.
    grants: HashMap<String, Grants>,
}

/// Which of the four kinds an object is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// Role.
    Role,
    /// RoleBinding.
    RoleBinding,
    /// ClusterRole.
    ClusterRole,
    /// ClusterRoleBinding.
    ClusterRoleBinding,
}

impl Kind {
    /// All four, in the order they are followed.
    pub(crate) const ALL: [Kind; 4] = [
        Kind::ClusterRole,
        Kind::Role,
        Kind::ClusterRoleBinding,
        Kind::RoleBinding,
    ];

    /// The resource name.
    pub(crate) fn resource(self) -> &'static str {
        match self {
            Kind::Role => "roles",
            Kind::RoleBinding => "rolebindings",
            Kind::ClusterRole => "clusterroles",
            Kind::ClusterRoleBinding => "clusterrolebindings",
        }
    }
}

impl Index {
    /// Applies one object, created or changed. An object that does not decode grants nothing.
    pub(crate) fn put(&mut self, kind: Kind, obj: &Value) {
        let (ns, name) = crate::registry::follow::ns_name(obj);
        match kind {
            Kind::ClusterRole | Kind::Role => {
                let rules: Arc<[PolicyRule]> = Role::deserialize(obj)
                    .map(|r| r.rules)
                    .unwrap_or_default()
                    .into();
                if kind == Kind::ClusterRole {
                    self.cluster_roles.insert(name.to_string(), rules);
                } else {
                    self.roles
                        .entry(ns.to_string())
                        .or_default()
                        .insert(name.to_string(), rules);
                }
            }
            Kind::ClusterRoleBinding | Kind::RoleBinding => {
                let binding = Binding::deserialize(obj).unwrap_or_default();
                if kind == Kind::ClusterRoleBinding {
                    self.cluster_grants.put("", name, &binding);
                } else {
                    self.grants
                        .entry(ns.to_string())
                        .or_default()
                        .put(ns, name, &binding);
                }
            }
        }
    }

    /// Forgets one deleted object.
    pub(crate) fn delete(&mut self, kind: Kind, namespace: &str, name: &str) {
        match kind {
            Kind::ClusterRole => {
                self.cluster_roles.remove(name);
            }
            Kind::Role => {
                if let Some(roles) = self.roles.get_mut(namespace) {
                    roles.remove(name);
                    if roles.is_empty() {
                        self.roles.remove(namespace);
                    }
                }
            }
            Kind::ClusterRoleBinding => self.cluster_grants.remove(name),
            Kind::RoleBinding => {
                if let Some(grants) = self.grants.get_mut(namespace) {
                    grants.remove(name);
                    if grants.is_empty() {
                        self.grants.remove(namespace);
                    }
                }
            }
        }
    }

    /// After a full list of `kind`: forgets the objects not in `keep` (`namespace/name`).
    pub(crate) fn retain(&mut self, kind: Kind, keep: &std::collections::HashSet<String>) {
        let gone: Vec<(String, String)> = match kind {
            Kind::ClusterRole => self
                .cluster_roles
                .keys()
                .map(|n| (String::new(), n.clone()))
                .collect(),
            Kind::Role => self
                .roles
                .iter()
                .flat_map(|(ns, m)| m.keys().map(|n| (ns.clone(), n.clone())))
                .collect(),
            Kind::ClusterRoleBinding => self
                .cluster_grants
                .by_binding
                .keys()
                .map(|n| (String::new(), n.to_string()))
                .collect(),
            Kind::RoleBinding => self
                .grants
                .iter()
                .flat_map(|(ns, g)| g.by_binding.keys().map(|n| (ns.clone(), n.to_string())))
                .collect(),
        };
        for (ns, name) in gone {
            if !keep.contains(&format!("{ns}/{name}")) {
                self.delete(kind, &ns, &name);
            }
        }
    }

    /// GetRoleReferenceRules: the rules of the role a binding in `namespace` refers to.
    pub(crate) fn role_rules(
        &self,
        role: &RoleRef,
        namespace: &str,
    ) -> Result<&Arc<[PolicyRule]>, String> {
        let found = match role.kind.as_str() {
            "ClusterRole" => self.cluster_roles.get(&role.name),
            "Role" => self.roles.get(namespace).and_then(|m| m.get(&role.name)),
            other => {
                return Err(format!(
                    "unsupported role reference kind: {}",
                    crate::api::rbac::go_quote(other)
                ))
            }
        };
        found.ok_or_else(|| {
            let resource = if role.kind == "Role" {
                "role"
            } else {
                "clusterrole"
            };
            format!(
                "{resource}.rbac.authorization.k8s.io {} not found",
                crate::api::rbac::go_quote(&role.name)
            )
        })
    }

    /// VisitRulesFor: calls `visit` with every rule that applies to `user` in `namespace`
    /// (cluster bindings first) and every resolution error, until it returns false.
    pub(crate) fn visit(
        &self,
        user: &UserInfo,
        namespace: &str,
        visit: &mut dyn FnMut(Visit<'_>) -> bool,
    ) {
        let scopes = std::iter::once(("", &self.cluster_grants)).chain(
            (!namespace.is_empty())
                .then(|| self.grants.get(namespace).map(|g| (namespace, g)))
                .flatten(),
        );
        for (ns, grants) in scopes {
            // A binding that names the user and one of its groups applies once.
            let mut seen: Vec<&Arc<str>> = Vec::new();
            for grant in grants.of(user) {
                if seen.contains(&&grant.binding) {
                    continue;
                }
                seen.push(&grant.binding);
                match self.role_rules(&grant.role, ns) {
                    Ok(rules) => {
                        for rule in rules.iter() {
                            if !visit(Visit::Rule(&grant.source, rule)) {
                                return;
                            }
                        }
                    }
                    Err(e) => {
                        if !visit(Visit::Error(e)) {
                            return;
                        }
                    }
                }
            }
        }
    }
}
