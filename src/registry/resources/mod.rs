//! One file per served resource: its discovery info and strategy.
//! May use: registry (strategy, error, validation, store helpers), api.

pub(crate) mod configmaps;
pub(crate) mod events;
pub(crate) mod leasecandidates;
pub(crate) mod leases;
pub(crate) mod namespaces;
pub(crate) mod reviews;
pub(crate) mod secrets;
pub(crate) mod serviceaccounts;
