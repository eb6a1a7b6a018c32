//! The kubectl-like table preset on comfy-table: no borders, columns separated by three spaces,
//! left-aligned, no trailing whitespace (kubectl's tabwriter output), optional status colours.

use std::io::{self, Write};

use comfy_table::{CellAlignment, Color, ColumnConstraint, ContentArrangement, Table};

/// The meaning of a cell, which picks its colour when colour is on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum Tone {
    /// Plain text.
    #[default]
    Plain,
    /// Healthy / live (green).
    Good,
    /// Waiting / degraded (yellow).
    Warn,
    /// Failing / expired (red).
    Bad,
}

/// One table cell: text and tone.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct Cell {
    /// The text shown.
    pub text: String,
    /// The colour hint.
    pub tone: Tone,
}

impl Cell {
    /// A plain cell.
    pub(crate) fn plain(text: impl Into<String>) -> Self {
        Self {
            text: text.into(),
            tone: Tone::Plain,
        }
    }

    /// A cell with a tone.
    pub(crate) fn toned(text: impl Into<String>, tone: Tone) -> Self {
        Self {
            text: text.into(),
            tone,
        }
    }
}

impl From<String> for Cell {
    fn from(text: String) -> Self {
        Self::plain(text)
    }
}

impl From<&str> for Cell {
    fn from(text: &str) -> Self {
        Self::plain(text)
    }
}

/// Column gap, as kubectl's tabwriter (padding 3).
const GAP: u16 = 3;

/// Writes `headers` (when given) and `rows` as a borderless table.
pub(crate) fn write(
    headers: Option<&[&'static str]>,
    rows: &[Vec<Cell>],
    color: bool,
    out: &mut dyn Write,
) -> io::Result<()> {
    let columns = headers
        .map(<[_]>::len)
        .or_else(|| rows.first().map(Vec::len))
        .unwrap_or(0);
    if columns == 0 || (headers.is_none() && rows.is_empty()) {
        return Ok(());
    }
    let mut table = Table::new();
    table
        .load_preset(comfy_table::presets::NOTHING)
        .set_content_arrangement(ContentArrangement::Disabled);
    if color {
        table.enforce_styling();
    } else {
        table.force_no_tty();
    }
    if let Some(headers) = headers {
        table.set_header(headers.iter().map(comfy_table::Cell::new));
    }
    for row in rows {
        table.add_row(row.iter().map(|c| to_comfy(c, color)));
    }
    let last = columns.saturating_sub(1);
    for (i, column) in table.column_iter_mut().enumerate() {
        column.set_padding((0, if i == last { 0 } else { GAP }));
        column.set_cell_alignment(CellAlignment::Left);
        column.set_constraint(ColumnConstraint::ContentWidth);
    }
    for line in table.lines() {
        writeln!(out, "{}", line.trim_end())?;
    }
    Ok(())
}

/// Widest cell per column, headers included.
pub(crate) fn widths(headers: &[&str], rows: &[Vec<Cell>]) -> Vec<usize> {
    let mut w: Vec<usize> = headers.iter().map(|h| h.chars().count()).collect();
    for row in rows {
        for (i, cell) in row.iter().enumerate() {
            let n = cell.text.chars().count();
            match w.get_mut(i) {
                Some(cur) => *cur = (*cur).max(n),
                None => w.push(n),
            }
        }
    }
    w
}

/// Rows padded to fixed widths with the same gap as [`write`], no trailing whitespace.
pub(crate) fn write_aligned(
    rows: &[Vec<Cell>],
    widths: &[usize],
    color: bool,
    out: &mut dyn Write,
) -> io::Result<()> {
    for row in rows {
        let mut line = String::new();
        for (i, cell) in row.iter().enumerate() {
            let text = if color {
                paint(cell)
            } else {
                cell.text.clone()
            };
            line.push_str(&text);
            if i + 1 < row.len() {
                let width = widths.get(i).copied().unwrap_or(0);
                let pad = width.saturating_sub(cell.text.chars().count()) + usize::from(GAP);
                line.push_str(&" ".repeat(pad));
            }
        }
        writeln!(out, "{}", line.trim_end())?;
    }
    Ok(())
}

fn paint(cell: &Cell) -> String {
    let code = match cell.tone {
        Tone::Plain => return cell.text.clone(),
        Tone::Good => 32,
        Tone::Warn => 33,
        Tone::Bad => 31,
    };
    format!("\u{1b}[{code}m{}\u{1b}[39m", cell.text)
}

fn to_comfy(cell: &Cell, color: bool) -> comfy_table::Cell {
    let c = comfy_table::Cell::new(&cell.text);
    if !color {
        return c;
    }
    match cell.tone {
        Tone::Plain => c,
        Tone::Good => c.fg(Color::Green),
        Tone::Warn => c.fg(Color::Yellow),
        Tone::Bad => c.fg(Color::Red),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn render(headers: Option<&[&'static str]>, rows: &[Vec<Cell>], color: bool) -> String {
        let mut out = Vec::new();
        write(headers, rows, color, &mut out).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn borderless_three_space_gap_no_trailing_space() {
        let rows = vec![
            vec![
                Cell::plain("a"),
                Cell::plain("longer-value"),
                Cell::plain("x"),
            ],
            vec![Cell::plain("bbbbbb"), Cell::plain("v"), Cell::plain("")],
        ];
        let got = render(Some(&["NAME", "VALUE", "LAST"]), &rows, false);
        assert_eq!(
            got,
            "NAME     VALUE          LAST\na        longer-value   x\nbbbbbb   v\n"
        );
        let got = render(None, &rows, false);
        assert_eq!(got, "a        longer-value   x\nbbbbbb   v\n");
    }

    #[test]
    fn watch_rows_align_with_the_listing() {
        let first = vec![vec![
            Cell::plain("a"),
            Cell::plain("longer-value"),
            Cell::plain("x"),
        ]];
        let w = widths(&["NAME", "VALUE", "LAST"], &first);
        assert_eq!(w, [4, 12, 4]);
        let listing = render(Some(&["NAME", "VALUE", "LAST"]), &first, false);
        let mut more = Vec::new();
        let next = vec![vec![
            Cell::plain("b"),
            Cell::plain("v"),
            Cell::toned("y", Tone::Bad),
        ]];
        write_aligned(&next, &w, false, &mut more).unwrap();
        let more = String::from_utf8(more).unwrap();
        assert_eq!(
            listing,
            "NAME   VALUE          LAST\na      longer-value   x\n"
        );
        assert_eq!(more, "b      v              y\n");
        let mut coloured = Vec::new();
        write_aligned(&next, &w, true, &mut coloured).unwrap();
        assert_eq!(
            String::from_utf8(coloured).unwrap(),
            "b      v              \u{1b}[31my\u{1b}[39m\n"
        );
    }

    #[test]
    fn headers_only_when_no_rows() {
        assert_eq!(render(Some(&["A", "B"]), &[], false), "A   B\n");
        assert_eq!(render(None, &[], false), "");
    }

    #[test]
    fn colour_only_when_asked() {
        let rows = vec![vec![Cell::toned("ok", Tone::Good)]];
        assert_eq!(render(None, &rows, false), "ok\n");
        let coloured = render(None, &rows, true);
        assert!(coloured.contains("\u{1b}["), "{coloured:?}");
        assert!(coloured.contains("ok"));
    }
}
