//! Thin entry point: parse the command line, set up logging, dispatch, own the exit code.

use clap::Parser;

/// jemalloc: the server allocates and frees many small JSON trees per request on every core,
/// and frees on one thread much of what another allocated (tokio moves tasks between workers;
/// the store's writer thread hands values to the handlers). glibc malloc spent about a quarter
/// of the UPDATE path's CPU on that; mimalloc (v3) less, but jemalloc served about 15% more
/// lease updates per second than mimalloc at concurrency 64 (14 of 16 alternated pairs, GET
/// and LIST unchanged, idle RSS 24 MB). See docs/bench-api.md. Its background thread (the
/// `background_threads` feature) hands freed pages back to the system after a burst (2,000
/// CRDs applied at once: 348 → 241 MB RSS right after; see docs/bench-crds.md).
#[global_allocator]
static GLOBAL: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

fn main() {
    let cli = kapi::cli::Cli::parse();
    let quiet = !matches!(cli.command, kapi::cli::Command::Serve(_));
    kapi::logging::init(cli.verbose, cli.log_format, quiet);
    let code = match kapi::cmd::dispatch(cli) {
        Ok(code) => code,
        Err(err) => {
            kapi::note!("kapi: error: {err:#}");
            kapi::exit::classify(&err)
        }
    };
    std::process::exit(code.code());
}
