//! The handler-chain filters (k8s.io/apiserver pkg/server/filters, pkg/endpoints/filters): each
//! file is one step; `server::chain` orders them. May use: api.

pub mod authn;
pub mod authz;
pub mod body_limit;
pub mod in_flight;
pub mod panic;
pub mod timeout;
