//! Arguments of `kapi completions` and `kapi man`.

use std::path::PathBuf;

/// `kapi completions <shell>`.
#[derive(Debug, clap::Args)]
pub struct CompletionsArgs {
    /// The shell to generate for.
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

/// `kapi man <dir>`.
#[derive(Debug, clap::Args)]
pub struct ManArgs {
    /// Directory to write the pages into (created if missing).
    pub dir: PathBuf,
}
