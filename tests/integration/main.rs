//! One integration-test binary driving the real `kapi` executable.

mod support;

mod auth;
mod generated;
mod health;
mod hooks;
mod inspect;
mod layering;
mod shutdown;
