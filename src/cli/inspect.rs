//! Arguments of the inspect commands (leases, candidates, hooks, health).

/// `kapi leases`.
#[derive(Debug, clap::Args)]
pub struct LeasesArgs {}

/// `kapi candidates`.
#[derive(Debug, clap::Args)]
pub struct CandidatesArgs {}

/// `kapi hooks`.
#[derive(Debug, clap::Args)]
pub struct HooksArgs {}

/// `kapi health`.
#[derive(Debug, clap::Args)]
pub struct HealthArgs {}
