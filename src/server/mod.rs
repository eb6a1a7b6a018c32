//! The generic API server (k8s.io/apiserver pkg/server): config, handler chain, TLS serving,
//! health, supervised hooks, graceful shutdown.
//! May use: options, filters, endpoints, registry, storage, api.

pub mod hooks;
