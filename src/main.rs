//! Thin entry point: parse the command line, set up logging, dispatch, own the exit code.

use clap::Parser;

fn main() {
    let cli = kapi::cli::Cli::parse();
    let quiet = !matches!(cli.command, kapi::cli::Command::Serve(_));
    kapi::logging::init(cli.verbose, cli.log_format, quiet);
    let code = match kapi::cmd::dispatch(cli) {
        Ok(code) => code,
        Err(err) => {
            eprintln!("kapi: error: {err:#}");
            kapi::exit::classify(&err)
        }
    };
    std::process::exit(code.code());
}
