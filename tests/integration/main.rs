//! One integration-test binary driving the real `kapi` executable.

mod support;

mod admissionregistration;
mod apply_list;
mod auth;
mod badinput;
mod bookmarks;
mod chaos;
mod clients;
mod controllers;
mod controllers_system;
mod crds;
mod crds_apply;
mod crds_cel;
mod crds_conversion;
mod crds_kube;
mod crds_versions;
mod crud;
mod discovery;
mod disk;
mod gc;
mod generated;
mod ha;
mod health;
mod hooks;
mod inspect;
mod inspect_leases;
mod inspect_replicas;
mod layering;
mod openapi;
mod patch;
mod rbac;
mod service_accounts;
mod shutdown;
mod spinner;
mod watch;
