//! The handler-chain filters (k8s.io/apiserver pkg/server/filters, pkg/endpoints/filters): each
//! file is one step; `server::chain` orders them. May use: api, serviceaccount (the token
//! authenticator), audit (the audit filters).

pub(crate) mod audit;
pub(crate) mod authn;
pub(crate) mod authz;
pub(crate) mod body_limit;
pub(crate) mod impersonation;
pub(crate) mod in_flight;
pub(crate) mod panic;
pub(crate) mod request_header;
pub(crate) mod sa_tokens;
pub(crate) mod timeout;
