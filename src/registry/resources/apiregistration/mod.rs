//! apiregistration.k8s.io/v1 (kube-aggregator's pkg/registry/apiservice): the APIServices that
//! tell the aggregation layer which server answers a group version, served from the generic
//! store with upstream's v1 defaults, validation (pkg/apis/apiregistration/validation), the
//! `status` subresource and the Name/Service/Available/Age table.
//!
//! This is the API surface only: nothing here proxies to a service, registers the built-in
//! groups as local APIServices or checks availability; the aggregator does that, as a client
//! of these objects.
//!
//! May use: registry (strategy, error, validation), api.

pub(crate) mod apiservices;
mod validation;

#[cfg(test)]
mod tests;

/// The API group (apiregistration.GroupName).
pub(crate) const GROUP: &str = "apiregistration.k8s.io";
