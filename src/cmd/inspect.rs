//! Composition root of the inspect commands (client side only): arguments → cluster client →
//! `inspect::<cmd>::collect` → `output::render` on stdout → exit code. Diagnostics and the
//! verdicts go to stderr; a closed stdout (broken pipe) ends the command quietly with 0.

use std::io::{self, IsTerminal, Write};
use std::time::Duration;

use futures::StreamExt;
use tokio::time::Instant;

use crate::cli::inspect::{
    CandidatesArgs, ClusterArgs, HealthArgs, HealthEndpoint, HooksArgs, LeasesArgs, OutputArgs,
};
use crate::exit::{CodedError, ExitCode};
use crate::inspect::{self, candidates, health, hooks, leases, Cluster, ClusterConfig};
use crate::output::{self, Format, Options};

pub(super) type CmdResult = anyhow::Result<ExitCode>;

/// Runs an inspect command on a fresh single-threaded runtime.
pub(crate) fn run<F>(fut: F) -> CmdResult
where
    F: std::future::Future<Output = CmdResult>,
{
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| {
            CodedError::new(
                ExitCode::Problem,
                format!("cannot start the async runtime: {e}"),
            )
        })?;
    rt.block_on(fut)
}

/// `kapi leases`.
pub(crate) async fn leases(args: LeasesArgs) -> CmdResult {
    let cluster = connect(&args.cluster).await?;
    let query = leases::Query {
        all: args.all,
        selector: args.selector.clone(),
        component: args.component.clone(),
    };
    let view = leases::collect(&cluster, &query).await.map_err(coded)?;
    if view.leases.is_empty() && is_table(&args.out) {
        note!("No leases found in {}.", leases::NAMESPACE);
    }
    if let Some(code) = emit(&view, &args.out)? {
        return Ok(code);
    }
    if args.watch {
        return watch_leases(&cluster, &query, view, &args.out).await;
    }
    if args.fail_on_expired && view.any_expired() {
        let expired = view
            .leases
            .iter()
            .filter(|l| l.state == leases::LeaseState::Expired)
            .count();
        note!("kapi: {expired} expired lease(s)");
        return Ok(ExitCode::Problem);
    }
    Ok(ExitCode::Ok)
}

/// `kapi leases --watch`: after the listing, one row (or document) per change, like `kubectl get -w`.
async fn watch_leases(
    cluster: &Cluster,
    query: &leases::Query,
    initial: leases::LeasesView,
    out: &OutputArgs,
) -> CmdResult {
    let wide = out.output == Format::Wide;
    let headers = if out.no_headers {
        Vec::new()
    } else {
        output::Tabular::headers(&initial, wide)
    };
    let widths = output::column_widths(&headers, &output::Tabular::rows(&initial, wide));
    let stream = leases::watch(cluster, query, initial.leases);
    let mut stream = std::pin::pin!(stream);
    let ctrl_c = tokio::signal::ctrl_c();
    let mut ctrl_c = std::pin::pin!(ctrl_c);
    loop {
        let change = tokio::select! {
            _ = &mut ctrl_c => return Ok(ExitCode::Interrupted),
            ch = stream.next() => ch,
        };
        let row = match change {
            None => return Ok(ExitCode::Ok),
            Some(leases::Change::Updated(row) | leases::Change::Deleted(row)) => row,
            Some(leases::Change::Retrying(e)) => {
                note!("kapi: warning: watch of leases failed: {e}; retrying");
                continue;
            }
        };
        let now = chrono::Utc::now();
        let view = leases::LeasesView {
            leases: vec![row],
            all: query.all,
            now,
        };
        let result = match out.output {
            Format::Table | Format::Wide => {
                let cells = output::Tabular::rows(&view, wide);
                write_stdout(|w| output::render_rows(&cells, &widths, color(out), w))
            }
            Format::Json | Format::Yaml | Format::Name => {
                let doc = &view.leases[0];
                write_stdout(|w| match out.output {
                    Format::Json => {
                        serde_json::to_writer_pretty(&mut *w, doc).map_err(io::Error::other)?;
                        w.write_all(b"\n")
                    }
                    Format::Yaml => {
                        w.write_all(b"---\n")?;
                        w.write_all(
                            serde_yaml::to_string(doc)
                                .map_err(io::Error::other)?
                                .as_bytes(),
                        )
                    }
                    _ => writeln!(w, "lease.coordination.k8s.io/{}", doc.name),
                })
            }
        };
        if let Some(code) = result? {
            return Ok(code);
        }
    }
}

/// `kapi candidates`.
pub(crate) async fn candidates(args: CandidatesArgs) -> CmdResult {
    let cluster = connect(&args.cluster).await?;
    let query = candidates::Query {
        namespace: args.namespace.clone(),
        lease: args.lease.clone(),
    };
    let view = candidates::collect(&cluster, &query).await.map_err(coded)?;
    if view.candidates.is_empty() && is_table(&args.out) {
        note!("No lease candidates found.");
    }
    Ok(emit(&view, &args.out)?.unwrap_or(ExitCode::Ok))
}

/// `kapi hooks`.
pub(crate) async fn hooks(args: HooksArgs) -> CmdResult {
    let cluster = connect(&args.cluster).await?;
    let query = hooks::Query {
        failing: args.failing,
        all_apiservers: args.all_apiservers,
    };
    let (view, note) = hooks::collect(&cluster, &query).await.map_err(coded)?;
    if let Some(note) = note {
        note!("kapi: {note}");
    }
    if let Some(code) = emit(&view, &args.out)? {
        return Ok(code);
    }
    for u in &view.unreachable {
        note!("kapi: {} unreachable: {}", u.apiserver, u.error);
    }
    if view.apiservers.is_empty() && !view.unreachable.is_empty() {
        return Ok(ExitCode::NoAnswer);
    }
    let not_ok: usize = view
        .apiservers
        .iter()
        .map(|a| {
            a.hooks
                .iter()
                .filter(|h| h.status != hooks::HookStatus::Ok)
                .count()
        })
        .sum();
    if not_ok > 0 {
        note!("kapi: {not_ok} post-start hook(s) not ok");
    }
    Ok(if view.all_ok() {
        ExitCode::Ok
    } else {
        ExitCode::Problem
    })
}

/// `kapi health`.
pub(crate) async fn health(args: HealthArgs) -> CmdResult {
    let cluster = connect(&args.cluster).await?;
    let endpoints = match args.endpoint {
        HealthEndpoint::Livez => vec!["livez"],
        HealthEndpoint::Readyz => vec!["readyz"],
        HealthEndpoint::Healthz => vec!["healthz"],
        HealthEndpoint::All => vec!["livez", "readyz", "healthz"],
    };
    let query = health::Query {
        endpoints: endpoints.iter().map(|e| (*e).to_string()).collect(),
        exclude: args.exclude.clone(),
        all_apiservers: args.all_apiservers,
    };
    let outcome = if args.wait {
        wait_healthy(&cluster, &query, &args).await
    } else {
        health::collect(&cluster, &query).await
    };
    let (view, note) = match outcome {
        Ok(v) => v,
        Err(e) if args.quiet => return Ok(e.exit_code()),
        Err(e) => return Err(coded(e).into()),
    };
    if args.quiet {
        return Ok(health_code(&view));
    }
    if let Some(note) = note {
        note!("kapi: {note}");
    }
    if let Some(code) = emit(&view, &args.out)? {
        return Ok(code);
    }
    for line in verdict(&view) {
        note!("{line}");
    }
    Ok(health_code(&view))
}

fn health_code(view: &health::HealthView) -> ExitCode {
    if view.healthy {
        ExitCode::Ok
    } else if view.results.is_empty() {
        ExitCode::NoAnswer
    } else {
        ExitCode::Problem
    }
}

/// The stderr verdict lines: one per endpoint and replica, plus warnings and unreachable ones.
pub(crate) fn verdict(view: &health::HealthView) -> Vec<String> {
    let mut lines = Vec::new();
    for r in &view.results {
        let prefix = if view.multi_server {
            format!("{} ", r.apiserver)
        } else {
            String::new()
        };
        for w in &r.warnings {
            lines.push(format!("kapi: warning: {prefix}{}: {w}", r.endpoint));
        }
        let failing: Vec<&str> = r
            .checks
            .iter()
            .filter(|c| c.status == inspect::CheckStatus::Failed)
            .map(|c| c.name.as_str())
            .collect();
        if r.healthy {
            lines.push(format!("{prefix}{}: ok", r.endpoint));
        } else if failing.is_empty() {
            lines.push(format!(
                "{prefix}{}: failed (HTTP {})",
                r.endpoint, r.http_status
            ));
        } else {
            lines.push(format!(
                "{prefix}{}: failed ({} failing: {})",
                r.endpoint,
                failing.len(),
                failing.join(", ")
            ));
        }
    }
    for u in &view.unreachable {
        lines.push(format!("{}: unreachable: {}", u.apiserver, u.error));
    }
    lines
}

/// `--wait`: polls once a second until healthy or `--timeout`; a spinner with the failing checks
/// on a terminal stderr, silence otherwise. The last answer decides: unhealthy → 1, none → 3.
async fn wait_healthy(
    cluster: &Cluster,
    query: &health::Query,
    args: &HealthArgs,
) -> inspect::Result<(health::HealthView, Option<String>)> {
    let deadline = Instant::now() + args.timeout;
    let spinner = WaitSpinner::new(!args.quiet && io::stderr().is_terminal());
    // The last answer the server gave decides after the deadline, over a cut-off attempt;
    // without any answer, the last real failure (e.g. connection refused) is reported.
    let mut last_answer = None;
    let mut last_error = None;
    loop {
        let remaining = deadline.saturating_duration_since(Instant::now());
        let attempt = tokio::time::timeout(remaining, health::collect(cluster, query)).await;
        let healthy = matches!(&attempt, Ok(Ok((v, _))) if v.healthy);
        if Instant::now() >= deadline || healthy {
            drop(spinner);
            return match (attempt, last_answer, last_error) {
                (Ok(Ok(answer)), _, _) | (_, Some(answer), _) => Ok(answer),
                (Ok(Err(e)), None, _) | (Err(_), None, Some(e)) => Err(e),
                (Err(_), None, None) => Err(inspect::Error::Timeout {
                    server: cluster.server().to_string(),
                    what: format!("/{}", query.endpoints.join(", /")),
                    timeout: args.timeout,
                }),
            };
        }
        let attempt = attempt.unwrap_or_else(|_| {
            Err(inspect::Error::Timeout {
                server: cluster.server().to_string(),
                what: format!("/{}", query.endpoints.join(", /")),
                timeout: args.timeout,
            })
        });
        spinner.status(|| match &attempt {
            Ok((v, _)) => verdict(v).join("; "),
            Err(e) => e.to_string(),
        });
        match attempt {
            Ok(answer) => last_answer = Some(answer),
            Err(e) => last_error = Some(e),
        }
        let remaining = deadline.saturating_duration_since(Instant::now());
        tokio::time::sleep(remaining.min(Duration::from_secs(1))).await;
    }
}

/// The `--wait` spinner on stderr: `| waiting 3s: <status>`, redrawn on a steady tick between
/// polls, plain text (no colour), cut to the terminal width. Dropping it clears its line, on
/// every way out of the wait; when disabled nothing is created and nothing is drawn.
struct WaitSpinner(Option<indicatif::ProgressBar>);

impl WaitSpinner {
    const TICK: Duration = Duration::from_millis(100);

    fn new(enabled: bool) -> Self {
        Self(enabled.then(|| {
            let style =
                indicatif::ProgressStyle::with_template("{spinner} waiting {waited}: {wide_msg}")
                    .expect("static spinner template")
                    .tick_chars("|/-\\ ")
                    .with_key(
                        "waited",
                        |state: &indicatif::ProgressState, w: &mut dyn std::fmt::Write| {
                            let _ = write!(w, "{}s", state.elapsed().as_secs());
                        },
                    );
            let bar = indicatif::ProgressBar::with_draw_target(
                None,
                indicatif::ProgressDrawTarget::stderr(),
            )
            .with_style(style)
            .with_message("no answer yet");
            bar.enable_steady_tick(Self::TICK);
            bar
        }))
    }

    /// Shows the outcome of the last poll; `status` is only built when the spinner is drawn.
    fn status(&self, status: impl FnOnce() -> String) {
        if let Some(bar) = &self.0 {
            bar.set_message(status());
        }
    }
}

impl Drop for WaitSpinner {
    fn drop(&mut self) {
        if let Some(bar) = &self.0 {
            bar.finish_and_clear();
        }
    }
}

pub(super) async fn connect(args: &ClusterArgs) -> anyhow::Result<Cluster> {
    let cfg = ClusterConfig {
        kubeconfig: args.kubeconfig.clone(),
        context: args.context.clone(),
        request_timeout: args.request_timeout,
    };
    Ok(Cluster::connect(&cfg).await.map_err(coded)?)
}

/// Carries an inspect error's exit code and one-line message to the edge.
pub(super) fn coded(err: inspect::Error) -> CodedError {
    CodedError::new(err.exit_code(), err.to_string())
}

fn is_table(out: &OutputArgs) -> bool {
    matches!(out.output, Format::Table | Format::Wide)
}

fn color(out: &OutputArgs) -> bool {
    out.color.enabled(io::stdout().is_terminal())
}

/// Renders a view on stdout. `Ok(Some(Ok))` means stdout was closed: stop quietly.
fn emit<V>(view: &V, out: &OutputArgs) -> anyhow::Result<Option<ExitCode>>
where
    V: serde::Serialize + output::Tabular,
{
    let opts = Options {
        no_headers: out.no_headers,
        color: color(out),
    };
    write_stdout(|w| output::render(view, out.output, opts, w))
}

pub(super) fn write_stdout(
    f: impl FnOnce(&mut dyn Write) -> io::Result<()>,
) -> anyhow::Result<Option<ExitCode>> {
    let stdout = io::stdout();
    let mut lock = stdout.lock();
    match f(&mut lock).and_then(|()| lock.flush()) {
        Ok(()) => Ok(None),
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Ok(Some(ExitCode::Ok)),
        Err(e) => {
            Err(CodedError::new(ExitCode::Problem, format!("cannot write to stdout: {e}")).into())
        }
    }
}
