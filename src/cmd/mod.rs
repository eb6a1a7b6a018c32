//! Composition roots: one file per subcommand; the only place that wires layers together.

mod serve;

use crate::cli::{Cli, Command};
use crate::exit::{CodedError, ExitCode};

/// Runs the parsed command line and returns the exit code.
pub fn dispatch(cli: Cli) -> anyhow::Result<ExitCode> {
    match cli.command {
        Command::Serve(args) => serve::run(*args),
        _ => Err(CodedError::new(ExitCode::Problem, "not built yet").into()),
    }
}
