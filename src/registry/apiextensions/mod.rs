//! apiextensions.k8s.io (apiextensions-apiserver): what a CustomResourceDefinition may say
//! ([`validation`]) and what its schema makes of custom objects ([`schema`]). May use: api,
//! registry's error and validation helpers.

// The CRD API is being built in pieces (issue #27); until the registry serves it, only the
// tests call into these modules.
#![cfg_attr(not(test), allow(dead_code))]

pub(crate) mod schema;
pub(crate) mod validation;
