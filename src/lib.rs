//! kapi: a Kubernetes-compatible control-plane API server and an inspector for live control planes.
//!
//! Server side (mirrors k8s.io/apiserver): [`options`] → [`server`] → [`filters`] /
//! [`endpoints`] → [`registry`] → [`storage`], with [`controllers`] run as post-start hooks.
//! Client side: [`inspect`] collects views from any cluster, [`output`] renders them.
//! [`cli`] holds the clap definitions and [`cmd`] wires the layers together.

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
