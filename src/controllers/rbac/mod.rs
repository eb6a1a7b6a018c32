//! RBAC's controllers: the bootstrap policy (`rbac/bootstrap-roles`, a kube-apiserver hook)
//! and the ClusterRole aggregation controller (kube-controller-manager's, which kapi runs
//! in-process).

pub(crate) mod aggregation;
pub(crate) mod bootstrap;
