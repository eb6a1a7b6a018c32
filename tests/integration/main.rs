//! One integration-test binary driving the real `kapi` executable.

mod generated;
mod layering;
