//! apiextensions.k8s.io (apiextensions-apiserver): what a CustomResourceDefinition may say
//! ([`validation`]) and what its schema makes of custom objects ([`schema`]). May use: api,
//! registry's error and validation helpers.

pub(crate) mod cel;
pub(crate) mod conversion;
pub(crate) mod custom;
mod gofmt;
mod goregex;
pub(crate) mod schema;
pub(crate) mod serving;
pub(crate) mod validation;
