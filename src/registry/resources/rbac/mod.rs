//! rbac.authorization.k8s.io/v1 (pkg/registry/rbac): Roles and ClusterRoles ([`roles`]),
//! RoleBindings and ClusterRoleBindings ([`bindings`]), served from the generic store like
//! kube-apiserver's `role`, `clusterrole`, `rolebinding` and `clusterrolebinding` storage,
//! with upstream's validation ([`validation`]). What upstream adds around that storage, the
//! escalation checks of its `policybased` wrappers and the RBAC authorizer, is not here.
//! May use: registry (strategy, error, validation), api.

pub(crate) mod bindings;
pub(crate) mod roles;
mod validation;

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_store;

/// The API group (rbac.GroupName), also what roleRef and User/Group subjects must name.
pub(crate) const GROUP: &str = "rbac.authorization.k8s.io";
