//! The `kapi health --wait` spinner, watched on a real pseudo-terminal: it shows the wait and
//! the last poll's outcome, moves several times a second between the once-a-second polls, is
//! plain text, and leaves nothing behind when the wait ends. Off a terminal (a pipe) or with
//! `--quiet` nothing of it is drawn. Every screen is rendered with a terminal emulator, so the
//! assertions are about what a person would see, not about particular escape sequences.

use std::num::NonZeroU16;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use crate::support::pty;

use crate::support::etcd::free_port;
use crate::support::{within, Options, TestServer};

const ROWS: u16 = 40;
/// Wide enough that the one-line error after the wait does not wrap.
const COLS: u16 = 220;
const FRAMES: [char; 4] = ['|', '/', '-', '\\'];

/// What a run on the pseudo-terminal showed.
struct PtyRun {
    code: u32,
    /// Everything the terminal received, in order, with when each piece arrived.
    chunks: Vec<(Instant, Vec<u8>)>,
}

impl PtyRun {
    fn bytes(&self) -> Vec<u8> {
        self.chunks.iter().flat_map(|(_, c)| c.clone()).collect()
    }

    /// The screen after each piece of output, with its arrival time.
    fn screens(&self) -> Vec<(Instant, vt100::Screen)> {
        let mut parser = parser();
        self.chunks
            .iter()
            .map(|(at, chunk)| {
                parser.process(chunk);
                (*at, parser.screen().clone())
            })
            .collect()
    }

    /// The screen once the command has exited.
    fn final_screen(&self) -> Vec<String> {
        let mut parser = parser();
        parser.process(&self.bytes());
        rows(parser.screen())
    }

    /// The spinner line of every screen that shows one: (arrival time, line, drawn plain).
    fn spinner_lines(&self) -> Vec<(Instant, String, bool)> {
        self.screens()
            .into_iter()
            .filter_map(|(at, screen)| {
                let (row, line) = rows(&screen)
                    .into_iter()
                    .enumerate()
                    .find(|(_, r)| spinner_frame(r).is_some())?;
                Some((at, line, plain(&screen, row)))
            })
            .collect()
    }

    fn dump(&self) -> String {
        format!(
            "raw output: {:?}\nfinal screen:\n{}",
            String::from_utf8_lossy(&self.bytes()),
            self.final_screen().join("\n")
        )
    }
}

fn parser() -> vt100::Parser {
    vt100::Parser::new(
        NonZeroU16::new(ROWS).unwrap(),
        NonZeroU16::new(COLS).unwrap(),
        0,
    )
}

/// The screen's rows, trailing blanks cut, trailing empty rows dropped.
fn rows(screen: &vt100::Screen) -> Vec<String> {
    let mut rows: Vec<String> = screen
        .rows(0, COLS)
        .map(|r| r.trim_end().to_string())
        .collect();
    while rows.last().is_some_and(String::is_empty) {
        rows.pop();
    }
    rows
}

/// Whether a row is drawn without colour or any other styling.
fn plain(screen: &vt100::Screen, row: usize) -> bool {
    (0..COLS).all(|col| {
        screen.cell(row as u16, col).is_none_or(|c| {
            c.fgcolor() == vt100::Color::Default
                && c.bgcolor() == vt100::Color::Default
                && !(c.bold() || c.dim() || c.italic() || c.underline() || c.inverse())
        })
    })
}

/// The spinner frame of a `<frame> waiting <n>s: <status>` line.
fn spinner_frame(row: &str) -> Option<char> {
    let mut chars = row.chars();
    let frame = chars.next().filter(|c| FRAMES.contains(c))?;
    let rest = chars.as_str().strip_prefix(" waiting ")?;
    let (secs, _) = rest.split_once("s: ")?;
    secs.parse::<u64>().ok().map(|_| frame)
}

/// Runs `kapi <args>` with stdin, stdout and stderr on a fresh pseudo-terminal; blocking.
fn run_in_pty(kubeconfig: &Path, args: &[&str]) -> PtyRun {
    let mut run = pty::spawn(kubeconfig, args, ROWS, COLS);
    let deadline = Instant::now() + Duration::from_secs(60);
    let status = loop {
        if let Some(status) = run.child.try_wait().expect("wait for kapi") {
            break status;
        }
        if Instant::now() > deadline {
            let _ = run.child.kill();
            panic!("kapi {args:?} did not exit within 60s");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut chunks = Vec::new();
    loop {
        match run.output.recv_timeout(Duration::from_secs(10)) {
            Ok(chunk) => chunks.push(chunk),
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
            Err(mpsc::RecvTimeoutError::Timeout) => panic!("the pty output did not end"),
        }
    }
    PtyRun {
        code: status.exit_code(),
        chunks,
    }
}

/// A kubeconfig for an apiserver address where nothing listens.
fn unreachable_kubeconfig(dir: &Path) -> (PathBuf, String) {
    let server = format!("https://127.0.0.1:{}", free_port());
    let path = dir.join("kubeconfig");
    std::fs::write(
        &path,
        format!(
            "apiVersion: v1
kind: Config
clusters:
- name: nowhere
  cluster:
    server: {server}
    insecure-skip-tls-verify: true
users:
- name: someone
  user:
    token: not-checked
contexts:
- name: nowhere
  context: {{cluster: nowhere, user: someone}}
current-context: nowhere
"
        ),
    )
    .unwrap();
    (path, server)
}

/// The checks common to every run that waited on the terminal: the spinner showed `status`,
/// turned several times within a second (the polls come only once a second), wrote no
/// colour, and the final screen has no spinner line left.
fn assert_spinner(run: &PtyRun, status: &str) {
    let lines = run.spinner_lines();
    assert!(!lines.is_empty(), "no spinner line seen\n{}", run.dump());
    assert!(
        lines.iter().any(|(_, l, _)| l.contains(status)),
        "the spinner never showed {status:?}\n{}",
        run.dump()
    );

    // Redraws with a new frame in the first second after the spinner appeared.
    let first = lines[0].0;
    let mut turns = 0;
    let mut frames = Vec::new();
    let mut last = None;
    for (at, line, _) in &lines {
        let frame = spinner_frame(line);
        if *at <= first + Duration::from_secs(1) && frame != last {
            turns += 1;
        }
        last = frame;
        frames.extend(frame.filter(|f| !frames.contains(f)));
    }
    assert!(
        turns >= 4,
        "the spinner turned {turns} time(s) in its first second, want a steady tick\n{}",
        run.dump()
    );
    assert_eq!(
        frames.len(),
        FRAMES.len(),
        "frames seen: {frames:?}\n{}",
        run.dump()
    );

    assert!(
        lines.iter().all(|(_, _, plain)| *plain),
        "the spinner line has colour or styling\n{}",
        run.dump()
    );
    let screen = run.final_screen();
    assert!(
        screen.iter().all(|r| !r.contains("waiting")),
        "the spinner line was left on the terminal\n{}",
        run.dump()
    );
}

#[test]
fn spinner_while_unreachable_then_cleared_exit_3() {
    let tmp = tempfile::tempdir().unwrap();
    let (kubeconfig, server) = unreachable_kubeconfig(tmp.path());
    let started = Instant::now();
    let run = run_in_pty(
        &kubeconfig,
        &["health", "readyz", "--wait", "--timeout", "3s"],
    );
    assert!(
        started.elapsed() >= Duration::from_secs(3),
        "returned before the timeout"
    );
    assert_eq!(run.code, 3, "no answer gives 3\n{}", run.dump());
    assert_spinner(&run, &format!("cannot reach {server}"));
    // The error took the cleared spinner line's place: it is all there is on the screen.
    let screen = run.final_screen();
    assert_eq!(screen.len(), 1, "{}", run.dump());
    assert!(
        screen[0].starts_with(&format!("kapi: error: cannot reach {server}")),
        "{}",
        run.dump()
    );
}

#[tokio::test]
async fn spinner_shows_failing_checks_then_cleared_exit_1() {
    let server = TestServer::start_with(
        Options::default()
            .args(["--debug-failing-hook", "flaky=100000"])
            .wait_for("/livez/ping")
            .probe_as_admin(),
    )
    .await;
    let kubeconfig = server.kubeconfig().to_path_buf();
    let run = within(
        Duration::from_secs(90),
        "kapi health --wait on a pty",
        tokio::task::spawn_blocking(move || {
            run_in_pty(
                &kubeconfig,
                &["health", "readyz", "--wait", "--timeout", "2s"],
            )
        }),
    )
    .await
    .unwrap();
    assert_eq!(run.code, 1, "unhealthy gives 1\n{}", run.dump());
    assert_spinner(&run, "readyz: failed (");
    let screen = run.final_screen();
    assert!(
        screen
            .iter()
            .any(|r| r.split_whitespace().eq(["poststarthook/flaky", "failed"])),
        "the table follows the wait\n{}",
        run.dump()
    );
    assert!(
        screen
            .iter()
            .any(|r| r.starts_with("readyz: failed (") && r.contains("poststarthook/flaky")),
        "the verdict follows the table\n{}",
        run.dump()
    );
}

#[test]
fn quiet_on_a_terminal_draws_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let (kubeconfig, _) = unreachable_kubeconfig(tmp.path());
    let run = run_in_pty(
        &kubeconfig,
        &["health", "readyz", "--wait", "--timeout", "1500ms", "-q"],
    );
    assert_eq!(run.code, 3, "{}", run.dump());
    assert!(run.bytes().is_empty(), "{}", run.dump());
}

#[tokio::test]
async fn no_spinner_when_stderr_is_a_pipe() {
    let tmp = tempfile::tempdir().unwrap();
    let (kubeconfig, server) = unreachable_kubeconfig(tmp.path());
    let fut = tokio::process::Command::new(env!("CARGO_BIN_EXE_kapi"))
        .args(["health", "readyz", "--wait", "--timeout", "2s"])
        .env("KUBECONFIG", &kubeconfig)
        .env("TERM", "xterm-256color")
        .env_remove("NO_COLOR")
        .stdin(Stdio::null())
        .kill_on_drop(true)
        .output();
    let out = within(Duration::from_secs(60), "kapi health --wait", fut)
        .await
        .unwrap();
    assert_eq!(out.status.code(), Some(3));
    assert!(out.stdout.is_empty(), "{:?}", out.stdout);
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(
        stderr.starts_with(&format!("kapi: error: cannot reach {server}")),
        "{stderr:?}"
    );
    assert_eq!(stderr.lines().count(), 1, "{stderr:?}");
    assert!(
        !stderr.contains("waiting") && !stderr.contains('\r') && !stderr.contains('\x1b'),
        "spinner output on a pipe: {stderr:?}"
    );
}
