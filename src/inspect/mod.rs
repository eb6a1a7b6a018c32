//! Collects views of a live cluster (kapi or kube-apiserver) through a kubeconfig, the way kubectl
//! reaches it. Every command is collect (async, here) → view (a plain `Serialize` struct whose
//! JSON/YAML shape is a stable contract, documented in each command's module) → render
//! ([`crate::output`]). May use: api, output, kube, k8s-openapi. Never the server side.
//!
//! Errors are classified once, here, into [`Error`]: [`Error::exit_code`] tells the edge whether
//! the cluster answered (exit 1) or did not (exit 3), and every message is one line naming the
//! cause and the fix.

pub(crate) mod candidates;
mod client;
mod error;
pub(crate) mod health;
mod healthtext;
pub(crate) mod hooks;
pub(crate) mod leases;
mod peers;
mod promql;
mod scrape;
pub(crate) mod top;
mod top_table;

pub(crate) use client::{Cluster, ClusterConfig};
pub(crate) use error::{one_line, Error, Result};
pub(crate) use healthtext::CheckStatus;
