//! Composition roots: one file per subcommand; the only place that wires layers together.

mod generate;
mod inspect;
mod serve;
mod top;

use crate::cli::{Cli, Command};
use crate::exit::ExitCode;

/// Runs the parsed command line and returns the exit code.
pub fn dispatch(cli: Cli) -> anyhow::Result<ExitCode> {
    match cli.command {
        Command::Serve(args) => serve::run(*args),
        Command::Leases(args) => inspect::run(inspect::leases(args)),
        Command::Candidates(args) => inspect::run(inspect::candidates(args)),
        Command::Hooks(args) => inspect::run(inspect::hooks(args)),
        Command::Health(args) => inspect::run(inspect::health(args)),
        Command::Top(args) => inspect::run(top::top(args)),
        Command::Completions(args) => generate::completions(&args),
        Command::Man(args) => generate::man(&args),
    }
}
