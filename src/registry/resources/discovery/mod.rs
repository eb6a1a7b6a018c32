//! discovery.k8s.io/v1 (pkg/registry/discovery/endpointslice): EndpointSlices, the endpoints of
//! a Service, served from the generic store with upstream's v1 defaults, validation
//! (pkg/apis/discovery/validation), generation and table. A slice names its Service with the
//! label `kubernetes.io/service-name`; kapi runs no controller that writes slices, so they are
//! whatever clients put there (the endpoints of a headless Service without a selector).
//! May use: registry (strategy, error, validation), api.

pub(crate) mod endpointslices;
mod validation;

#[cfg(test)]
mod tests;

/// The API group (discovery.GroupName).
pub(crate) const GROUP: &str = "discovery.k8s.io";
