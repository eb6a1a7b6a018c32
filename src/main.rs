//! Thin entry point: parse the command line, set up logging, dispatch, own the exit code.

use clap::Parser;

/// mimalloc: the server allocates and frees many small JSON trees per request on every core,
/// and glibc malloc spent about a quarter of the UPDATE path's CPU on that. Built with
/// `no_thp`: mimalloc otherwise asks for transparent huge pages on its arenas, which doubled
/// the idle RSS (36 MB instead of 19 MB).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

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
