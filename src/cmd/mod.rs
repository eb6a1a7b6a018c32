//! Composition roots: one file per subcommand; the only place that wires layers together.

use crate::cli::{Cli, Command};
use crate::exit::{CodedError, ExitCode};

/// Runs the parsed command line and returns the exit code.
pub fn dispatch(cli: Cli) -> anyhow::Result<ExitCode> {
    match cli.command {
        Command::Serve(_) => Err(CodedError::new(ExitCode::Problem, "serve: not built yet").into()),
        _ => Err(CodedError::new(ExitCode::Problem, "not built yet").into()),
    }
}
