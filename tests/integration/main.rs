//! One integration-test binary driving the real `kapi` executable.

mod generated;
mod layering;
mod support;

mod auth;
mod health;
mod hooks;
mod shutdown;

mod badinput;
mod clients;
mod crud;
mod discovery;
mod patch;
mod watch;
