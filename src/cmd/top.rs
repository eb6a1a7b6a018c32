//! Composition root of `kapi top` (client side only): arguments → cluster client →
//! `inspect::top::Top` (first read of /metrics) → one sample per `--interval` → stdout.
//!
//! On a terminal, tables are redrawn in place like top: cursor home, every line cleared to its
//! end, the rest of the screen cleared, cut to the terminal's size; Ctrl-C leaves the last
//! screen standing. Anywhere else, and with `-o json|yaml`, every sample is printed after the
//! last, so `kapi top -o json --count 3 | jq` works. Ctrl-C ends an unbounded run with 0 (it is
//! how one quits top); it interrupts a `--count`/`--once` run with 130, as `kapi leases --watch`.

use std::io::{self, IsTerminal, Write};
use std::time::Duration;

use crate::cli::inspect::{TopArgs, TopFormat, TopSort};
use crate::exit::ExitCode;
use crate::inspect::top::{self, Top, TopView};
use crate::output::Options;

use super::inspect::{coded, connect, write_stdout, CmdResult};

/// `kapi top`.
pub(crate) async fn top(args: TopArgs) -> CmdResult {
    let cluster = connect(&args.cluster).await?;
    let query = top::Query {
        all_apiservers: args.all_apiservers,
        sort: match args.sort {
            TopSort::Rate => top::SortBy::Rate,
            TopSort::P99 => top::SortBy::P99,
            TopSort::Errors => top::SortBy::Errors,
        },
        limit: args.limit,
    };
    let samples = if args.once { Some(1) } else { args.count };
    let tty = io::stdout().is_terminal();
    let mut screen = (tty && matches!(args.output, TopFormat::Table | TopFormat::Wide))
        .then(|| Screen::new(args.interval));
    // Ctrl-C quits an unbounded run (exit 0) and interrupts a bounded one (exit 130).
    let quit = if samples.is_some() {
        ExitCode::Interrupted
    } else {
        ExitCode::Ok
    };
    let ctrl_c = tokio::signal::ctrl_c();
    let mut ctrl_c = std::pin::pin!(ctrl_c);

    let started = tokio::select! {
        _ = &mut ctrl_c => return Ok(quit),
        started = Top::start(&cluster, query) => started,
    };
    let mut sampler = started.map_err(coded)?;
    let failed = sampler.unanswered();
    if !sampler.answered() {
        for u in &failed {
            note!("kapi: {} unreachable: {}", u.apiserver, u.error);
        }
        return Ok(ExitCode::NoAnswer);
    }
    let failed: Vec<String> = failed
        .iter()
        .map(|u| format!("{} unreachable: {}", u.apiserver, u.error))
        .collect();
    if let Some(screen) = &mut screen {
        // The discovery note holds for the whole run; who is unreachable, only until the
        // next sample says again.
        screen.notes = sampler.note().map(String::from).into_iter().collect();
        let mut waiting: String = failed.iter().map(|f| format!("{f}\n")).collect();
        waiting.push_str(&format!(
            "waiting {} for the second read of /metrics…\n",
            humantime::format_duration(args.interval)
        ));
        if let Some(code) = write_stdout(|w| screen.draw(waiting.as_bytes(), w))? {
            return Ok(code);
        }
    } else {
        // Who is unreachable is said with every sample.
        if let Some(n) = sampler.note() {
            note!("kapi: {n}");
        }
    }

    let opts = Options {
        no_headers: args.no_headers,
        color: args.color.enabled(tty),
    };
    let mut ticker =
        tokio::time::interval_at(tokio::time::Instant::now() + args.interval, args.interval);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut taken = 0;
    loop {
        let view = tokio::select! {
            _ = &mut ctrl_c => return Ok(quit),
            view = async {
                ticker.tick().await;
                sampler.sample().await
            } => view,
        };
        taken += 1;
        if matches!(args.output, TopFormat::Json | TopFormat::Yaml) {
            for u in &view.unreachable {
                note!("kapi: {} unreachable: {}", u.apiserver, u.error);
            }
        }
        let wide = args.output == TopFormat::Wide;
        let result = match (&mut screen, args.output) {
            (Some(screen), _) => {
                let mut frame = Vec::new();
                view.write_tables(wide, opts, &mut frame)?;
                write_stdout(|w| screen.draw(&frame, w))
            }
            (None, TopFormat::Table | TopFormat::Wide) => write_stdout(|w| {
                if taken > 1 {
                    writeln!(w)?;
                }
                view.write_tables(wide, opts, w)
            }),
            (None, TopFormat::Json) => write_stdout(|w| {
                serde_json::to_writer_pretty(&mut *w, &view).map_err(io::Error::other)?;
                w.write_all(b"\n")
            }),
            (None, TopFormat::Yaml) => write_stdout(|w| {
                let text = serde_yaml::to_string(&view).map_err(io::Error::other)?;
                w.write_all(b"---\n")?;
                w.write_all(text.as_bytes())
            }),
        };
        if let Some(code) = result? {
            return Ok(code);
        }
        if samples.is_some_and(|n| taken >= n) {
            return Ok(exit_code(&view));
        }
    }
}

/// 3 when the last sample reached no apiserver, else 0.
fn exit_code(view: &TopView) -> ExitCode {
    if view.apiservers.is_empty() && !view.unreachable.is_empty() {
        ExitCode::NoAnswer
    } else {
        ExitCode::Ok
    }
}

/// The terminal redrawn in place: a title line, the notes, then the frame, cut to the size of
/// the terminal so that nothing scrolls.
struct Screen {
    interval: Duration,
    notes: Vec<String>,
    first: bool,
}

impl Screen {
    fn new(interval: Duration) -> Self {
        Self {
            interval,
            notes: Vec::new(),
            first: true,
        }
    }

    /// Draws `frame` (text lines) over the previous one.
    fn draw(&mut self, frame: &[u8], w: &mut dyn Write) -> io::Result<()> {
        let size = terminal_size::terminal_size()
            .map_or((80, 24), |(w, h)| (usize::from(w.0), usize::from(h.0)));
        self.draw_in(size, frame, w)
    }

    /// [`Screen::draw`] on a terminal of `cols` × `rows` characters.
    fn draw_in(
        &mut self,
        (cols, rows): (usize, usize),
        frame: &[u8],
        w: &mut dyn Write,
    ) -> io::Result<()> {
        let title = format!(
            "kapi top - {} - every {} - Ctrl-C quits",
            chrono::Utc::now().format("%H:%M:%S UTC"),
            humantime::format_duration(self.interval)
        );
        let text = String::from_utf8_lossy(frame);
        let mut lines: Vec<&str> = std::iter::once(title.as_str())
            .chain(self.notes.iter().map(String::as_str))
            .chain(text.lines())
            .collect();
        // The last terminal row stays free: a line written there would scroll the screen.
        let room = rows.saturating_sub(1).max(1);
        let more;
        if lines.len() > room {
            let hidden = lines.len() - room + 1;
            more = format!("… {hidden} more lines (--limit, or a taller terminal)");
            lines.truncate(room - 1);
            lines.push(&more);
        }
        let mut out = String::new();
        if self.first {
            // Start on a clean screen; later frames overwrite in place, without flicker.
            out.push_str("\x1b[H\x1b[2J");
            self.first = false;
        }
        out.push_str("\x1b[H");
        for line in lines {
            out.push_str(&cut(line, cols));
            out.push_str("\x1b[K\n");
        }
        out.push_str("\x1b[J");
        w.write_all(out.as_bytes())
    }
}

/// The first `cols` visible characters of `line`; colour escapes pass through uncounted.
fn cut(line: &str, cols: usize) -> String {
    let mut out = String::with_capacity(line.len());
    let mut shown = 0;
    let mut chars = line.chars();
    let mut styled = false;
    while let Some(c) = chars.next() {
        if c == '\x1b' {
            out.push(c);
            for e in chars.by_ref() {
                out.push(e);
                if e.is_ascii_alphabetic() {
                    break;
                }
            }
            styled = true;
            continue;
        }
        if shown == cols {
            if styled {
                out.push_str("\x1b[0m");
            }
            break;
        }
        out.push(c);
        shown += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cut_counts_only_visible_characters() {
        assert_eq!(cut("abcdef", 4), "abcd");
        assert_eq!(cut("ab", 4), "ab");
        assert_eq!(
            cut("a\x1b[31mbcdef\x1b[39m", 3),
            "a\x1b[31mbc\x1b[0m",
            "a cut inside a colour resets it"
        );
        assert_eq!(cut("µsµs", 3), "µsµ");
    }

    #[test]
    fn frames_fit_the_terminal() {
        let mut screen = Screen::new(Duration::from_secs(2));
        let frame: String = (0..100).map(|i| format!("line {i}\n")).collect();
        let mut out = Vec::new();
        screen
            .draw_in((80, 24), frame.as_bytes(), &mut out)
            .unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(text.starts_with("\x1b[H\x1b[2J\x1b[H"), "{text:?}");
        assert!(text.ends_with("\x1b[J"));
        let lines = text.matches('\n').count();
        assert_eq!(lines, 23, "the last row stays free");
        assert!(text.contains("more lines"), "{text}");
        let mut again = Vec::new();
        screen.draw_in((80, 24), b"short\n", &mut again).unwrap();
        let again = String::from_utf8(again).unwrap();
        assert!(again.starts_with("\x1b[Hkapi top - "), "{again:?}");
        assert!(again.contains("short\x1b[K\n"));
    }
}
