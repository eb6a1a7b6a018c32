//! kapi: a Kubernetes-compatible control-plane API server and an inspector for live control planes.
//!
//! Server side (mirrors k8s.io/apiserver): [`options`] → [`server`] → [`filters`] /
//! [`endpoints`] → [`registry`] → [`storage`], with [`controllers`] run as post-start hooks;
//! [`serviceaccount`] (token keys and JWTs) serves the filters, the registry and the server.
//! Client side: [`inspect`] collects views from any cluster, [`output`] renders them.
//! [`cli`] holds the clap definitions and [`cmd`] wires the layers together.

/// `eprintln!` that does not panic when stderr is closed (`2>&-`, or a pipe whose reader went
/// away): the line is lost, the command goes on and keeps its own exit code.
#[macro_export]
macro_rules! note {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), $($arg)*);
    }};
}

pub(crate) mod aggregator;
pub(crate) mod api;
pub(crate) mod audit;
pub mod cli;
pub mod cmd;
pub(crate) mod controllers;
pub(crate) mod endpoints;
pub mod exit;
pub(crate) mod filters;
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub mod fuzzing;
pub(crate) mod inspect;
pub mod logging;
pub(crate) mod metrics;
pub(crate) mod options;
pub(crate) mod output;
pub(crate) mod registry;
pub(crate) mod server;
pub(crate) mod serviceaccount;
pub mod storage;

/// The apiserver ID kube-apiserver derives from a hostname (its identity lease name).
pub use controllers::apiserver_id;
