//! Rendering of views: kubectl-like tables, JSON, YAML and names. Pure: every function writes to
//! a `&mut dyn Write` and decides nothing about where the bytes go. May use: nothing internal.
//!
//! A view is any `Serialize` type that also implements [`Tabular`]. `-o json` / `-o yaml` print
//! the serialized view (a documented, stable contract owned by the view's module); `-o table` and
//! `-o wide` print [`Tabular::rows`]; `-o name` prints [`Tabular::names`], one per line.

mod age;
mod table;

pub(crate) use age::{human_duration, relative_time};
pub(crate) use table::{Cell, Tone};

use std::io::{self, Write};

/// The output format chosen with `-o`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum Format {
    /// A borderless table with the essential columns.
    #[default]
    Table,
    /// The table with extra columns appended.
    Wide,
    /// The view as pretty-printed JSON.
    Json,
    /// The view as YAML.
    Yaml,
    /// One `kind/name` per line.
    Name,
}

/// When to colour table cells (`--color`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum ColorChoice {
    /// Colour when stdout is a terminal and NO_COLOR is not set.
    #[default]
    Auto,
    /// Always colour.
    Always,
    /// Never colour.
    Never,
}

impl ColorChoice {
    /// Resolves the choice for a stream; `is_tty` says whether that stream is a terminal.
    /// `NO_COLOR` (any non-empty value, see no-color.org) turns `auto` off.
    pub fn enabled(self, is_tty: bool) -> bool {
        match self {
            ColorChoice::Always => true,
            ColorChoice::Never => false,
            ColorChoice::Auto => {
                is_tty && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
            }
        }
    }
}

/// Rendering options besides the format.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Options {
    /// Leave out the header line of tables.
    pub no_headers: bool,
    /// Colour status cells with ANSI escapes.
    pub color: bool,
}

/// A view that can be shown as a table.
pub(crate) trait Tabular {
    /// The column headers, UPPERCASE; `wide` appends the extra columns (never reorders).
    fn headers(&self, wide: bool) -> Vec<&'static str>;
    /// One row per item, with as many cells as [`Tabular::headers`] for the same `wide`.
    fn rows(&self, wide: bool) -> Vec<Vec<Cell>>;
    /// `kind/name` of every item, for `-o name`.
    fn names(&self) -> Vec<String>;
}

/// Renders `view` in `format` into `out`.
///
/// # Errors
/// Fails only when writing fails (e.g. a closed pipe) or, for JSON/YAML, when the view
/// cannot be serialized.
pub(crate) fn render<V>(
    view: &V,
    format: Format,
    opts: Options,
    out: &mut dyn Write,
) -> io::Result<()>
where
    V: serde::Serialize + Tabular + ?Sized,
{
    match format {
        Format::Table | Format::Wide => render_table(view, format == Format::Wide, opts, out),
        Format::Json => {
            serde_json::to_writer_pretty(&mut *out, view).map_err(io::Error::other)?;
            out.write_all(b"\n")
        }
        Format::Yaml => {
            let text = serde_yaml::to_string(view).map_err(io::Error::other)?;
            out.write_all(text.as_bytes())
        }
        Format::Name => {
            for name in view.names() {
                writeln!(out, "{name}")?;
            }
            Ok(())
        }
    }
}

/// Renders `view` as a table (`wide` for `-o wide`): one of several tables on a screen.
///
/// # Errors
/// Fails only when writing fails.
pub(crate) fn render_table<V>(
    view: &V,
    wide: bool,
    opts: Options,
    out: &mut dyn Write,
) -> io::Result<()>
where
    V: Tabular + ?Sized,
{
    let headers = if opts.no_headers {
        None
    } else {
        Some(view.headers(wide))
    };
    table::write(headers.as_deref(), &view.rows(wide), opts.color, out)
}

/// Column widths (in characters) of a table with `headers` and `rows`, for [`render_rows`].
pub(crate) fn column_widths(headers: &[&str], rows: &[Vec<Cell>]) -> Vec<usize> {
    table::widths(headers, rows)
}

/// Writes more rows of an already printed table (as `kubectl get -w` does after the listing),
/// aligned to `widths` from [`column_widths`]; a wider cell pushes its line only.
///
/// # Errors
/// Fails only when writing fails.
pub(crate) fn render_rows(
    rows: &[Vec<Cell>],
    widths: &[usize],
    color: bool,
    out: &mut dyn Write,
) -> io::Result<()> {
    table::write_aligned(rows, widths, color, out)
}
