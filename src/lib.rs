//! kapi: a Kubernetes-compatible control-plane API server and an inspector for live control planes.
//!
//! Server side (mirrors k8s.io/apiserver): [`options`] → [`server`] → [`filters`] /
//! [`endpoints`] → [`registry`] → [`storage`], with [`controllers`] run as post-start hooks.
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

pub mod api;
pub mod cli;
pub mod cmd;
pub mod controllers;
pub mod endpoints;
pub mod exit;
pub mod filters;
pub mod inspect;
pub mod logging;
pub mod options;
pub mod output;
pub mod registry;
pub mod server;
pub mod storage;
