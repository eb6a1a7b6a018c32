//! Composition root of `kapi completions <shell>` and `kapi man <dir>`: both generate from the one
//! clap definition, `cli::Cli::command()`. The committed completions/ and man/ are produced by
//! `scripts/gen-docs.sh`, and a test fails when they differ from what the binary generates.

use std::io::{self, Write};

use clap::CommandFactory;

use crate::cli::generate::{CompletionsArgs, ManArgs};
use crate::cli::Cli;
use crate::exit::{CodedError, ExitCode};

/// `kapi completions <shell>`: the completion script on stdout.
pub(crate) fn completions(args: &CompletionsArgs) -> anyhow::Result<ExitCode> {
    let mut buf = Vec::new();
    clap_complete::generate(args.shell, &mut Cli::command(), "kapi", &mut buf);
    let mut out = io::stdout().lock();
    match out.write_all(&buf).and_then(|()| out.flush()) {
        Ok(()) => Ok(ExitCode::Ok),
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Ok(ExitCode::Ok),
        Err(e) => {
            Err(CodedError::new(ExitCode::Problem, format!("cannot write to stdout: {e}")).into())
        }
    }
}

/// `kapi man <dir>`: `kapi.1` plus one `kapi-<subcommand>.1` per subcommand.
pub(crate) fn man(args: &ManArgs) -> anyhow::Result<ExitCode> {
    let fail = |what: &str, e: io::Error| {
        CodedError::new(
            ExitCode::Problem,
            format!(
                "cannot {what} {}: {e}; pick a writable directory",
                args.dir.display()
            ),
        )
    };
    std::fs::create_dir_all(&args.dir).map_err(|e| fail("create", e))?;
    clap_mangen::generate_to(Cli::command(), &args.dir)
        .map_err(|e| fail("write man pages into", e))?;
    Ok(ExitCode::Ok)
}
