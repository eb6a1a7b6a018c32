//! How objects are decoded and canonicalized, and the caches that spare repeating it: the
//! typed round trip through k8s-openapi's structs ([`roundtrip`], with [`rest`] for bodies
//! whose metadata it has seen), the decoded-object memo of stored bytes ([`memo`]) and the
//! bounded maps both keep ([`bounded`]). May use: registry (strategy, error), api.

pub(crate) mod bounded;
pub(crate) mod memo;
pub(crate) mod rest;
pub(crate) mod roundtrip;
mod typed;
