//! Aligned plain-text tables and the number formats of every table.

use std::fmt;

/// A plain-text table: first column left-aligned, the others right-aligned.
#[derive(Debug)]
pub struct Table {
    title: String,
    headers: Vec<String>,
    rows: Vec<Vec<String>>,
    notes: Vec<String>,
}

impl Table {
    /// An empty table. A header or an entry that is the name of a catalog's default
    /// lock (`default`, `default-rw`) is shown as users know the lock:
    /// `klocks::Mutex`, `klocks::RwLock` ([`crate::verdict::label`]).
    pub fn new(title: impl Into<String>, headers: &[&str]) -> Self {
        Self {
            title: title.into(),
            headers: headers.iter().map(|h| label(h)).collect(),
            rows: Vec::new(),
            notes: Vec::new(),
        }
    }

    /// Appends a row (one entry per header).
    pub fn row(&mut self, row: Vec<String>) {
        assert_eq!(
            row.len(),
            self.headers.len(),
            "a row needs one entry per header"
        );
        self.rows
            .push(row.iter().map(|entry| label(entry)).collect());
    }

    /// Appends a line under the table, once.
    pub fn note(&mut self, note: impl Into<String>) {
        let note = note.into();
        if !self.notes.contains(&note) {
            self.notes.push(note);
        }
    }

    fn widths(&self) -> Vec<usize> {
        let mut widths: Vec<usize> = self.headers.iter().map(|h| h.chars().count()).collect();
        for row in &self.rows {
            for (width, cell) in widths.iter_mut().zip(row) {
                *width = (*width).max(cell.chars().count());
            }
        }
        widths
    }
}

/// An entry as printed: a default lock's name as users know the lock.
fn label(entry: &str) -> String {
    crate::verdict::label(entry).to_owned()
}

fn write_row(f: &mut fmt::Formatter<'_>, row: &[String], widths: &[usize]) -> fmt::Result {
    for (i, (cell, &width)) in row.iter().zip(widths).enumerate() {
        let pad = " ".repeat(width - cell.chars().count());
        match i {
            0 => write!(f, "{cell}{pad}")?,
            _ => write!(f, "  {pad}{cell}")?,
        }
    }
    writeln!(f)
}

impl Table {
    /// The columns the rows take (the title and the notes aside).
    pub fn width(&self) -> usize {
        let widths = self.widths();
        widths.iter().sum::<usize>() + 2 * (widths.len() - 1)
    }

    /// How many columns the table has.
    pub fn columns(&self) -> usize {
        self.headers.len()
    }

    /// The title, the headers, the rows and the notes, for a page that lays the table
    /// out itself (the HTML report).
    pub fn parts(&self) -> (&str, &[String], &[Vec<String>], &[String]) {
        (&self.title, &self.headers, &self.rows, &self.notes)
    }

    /// The first clause of the title (up to its first `:`), to name the table.
    pub fn name(&self) -> &str {
        self.title.split(':').next().unwrap_or(&self.title)
    }

    /// The table with its title and notes wrapped at `columns` (continuation lines
    /// indented by two), leaving out the notes in `explained` (printed under an earlier
    /// table) and adding its own; the rows are never wrapped.
    pub fn wrapped(&self, columns: usize, explained: &mut Vec<String>) -> String {
        let plain = self.to_string();
        let mut lines = plain.lines();
        let mut text = lines
            .next()
            .map_or(String::new(), |title| wrap(title, columns));
        for line in lines.take(2 + self.rows.len()) {
            text += &format!("{line}\n");
        }
        for note in &self.notes {
            if explained.contains(note) {
                continue;
            }
            explained.push(note.clone());
            for line in note.lines() {
                text += &wrap(line, columns);
            }
        }
        text
    }
}

/// The columns a table may take in the printed text without `--wide`.
pub const COLUMNS: usize = 120;

/// `line` broken at spaces into lines of at most `columns` characters where it can be,
/// the continuation lines indented by two spaces.
pub fn wrap(line: &str, columns: usize) -> String {
    let indent = line.len() - line.trim_start().len();
    let mut text = String::new();
    let mut current = String::new();
    for word in line.trim_start().split(' ') {
        let lead = if text.is_empty() { indent } else { 2 };
        if !current.is_empty()
            && lead + current.chars().count() + 1 + word.chars().count() > columns
        {
            text += &format!("{:lead$}{current}\n", "");
            current.clear();
        }
        if !current.is_empty() {
            current.push(' ');
        }
        current += word;
    }
    let lead = if text.is_empty() { indent } else { 2 };
    text + &format!("{:lead$}{current}\n", "")
}

impl fmt::Display for Table {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let widths = self.widths();
        writeln!(f, "{}", self.title)?;
        write_row(f, &self.headers, &widths)?;
        writeln!(f, "{}", "-".repeat(self.width()))?;
        for row in &self.rows {
            write_row(f, row, &widths)?;
        }
        for note in &self.notes {
            writeln!(f, "{note}")?;
        }
        Ok(())
    }
}

/// Three significant digits (at least), no exponent: `0.412`, `41.2`, `4120`.
pub fn num(x: f64) -> String {
    let decimals = match x.abs() {
        a if a >= 100.0 => 0,
        a if a >= 10.0 => 1,
        a if a >= 1.0 => 2,
        _ => 3,
    };
    format!("{x:.decimals$}")
}

/// A rate with an SI suffix: `41.2M`.
pub fn si(x: f64) -> String {
    match x.abs() {
        a if a >= 1e9 => format!("{}G", num(x / 1e9)),
        a if a >= 1e6 => format!("{}M", num(x / 1e6)),
        a if a >= 1e3 => format!("{}k", num(x / 1e3)),
        _ => num(x),
    }
}

/// A fraction as a percentage, with more digits when it is small: `0.013%`, `3.2%`, `41%`.
pub fn percent(fraction: f64) -> String {
    let pct = fraction * 100.0;
    match pct {
        p if p >= 10.0 => format!("{p:.0}%"),
        p if p >= 1.0 => format!("{p:.1}%"),
        p if p >= 0.01 => format!("{p:.2}%"),
        p => format!("{p:.4}%"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_keep_three_digits() {
        assert_eq!(num(0.4123), "0.412");
        assert_eq!(num(41.23), "41.2");
        assert_eq!(num(4123.4), "4123");
        assert_eq!(si(41_234_567.0), "41.2M");
        assert_eq!(percent(0.0312), "3.1%");
        assert_eq!(percent(0.000_12), "0.01%");
    }

    #[test]
    fn titles_and_notes_wrap_but_rows_do_not() {
        let mut table = Table::new("wide: a title of several words", &["lock", "ns"]);
        table.row(vec![
            "a-lock-with-a-long-name".to_owned(),
            "1.00".to_owned(),
        ]);
        table.note("one note\n  that goes on for a while");
        assert_eq!(table.name(), "wide");
        assert_eq!(table.width(), 29);
        let plain = table.to_string();
        let rows: Vec<&str> = plain.lines().skip(1).take(3).collect();
        let mut explained = Vec::new();
        let wrapped = table.wrapped(16, &mut explained);
        let lines: Vec<&str> = wrapped.lines().collect();
        assert_eq!(lines[..2], ["wide: a title of", "  several words"]);
        assert_eq!(lines[2..5], rows[..], "rows are never wrapped");
        assert_eq!(lines[5..], ["one note", "  that goes on", "  for a while"]);
        // A note printed under an earlier table is not repeated.
        let again = table.wrapped(200, &mut explained);
        assert_eq!(again.lines().count(), 4, "{again}");
        assert_eq!(table.wrapped(200, &mut Vec::new()), table.to_string());
    }

    #[test]
    fn the_default_locks_go_by_their_type_names() {
        let mut table = Table::new("t", &["threads", "default", "default-rw", "std"]);
        table.row(
            ["default", "default-rw", "1.0 default", "std"]
                .map(str::to_owned)
                .to_vec(),
        );
        let text = table.to_string();
        let lines: Vec<&str> = text.lines().collect();
        let words = |line: &str| line.split_whitespace().collect::<Vec<_>>().join(" ");
        assert_eq!(words(lines[1]), "threads klocks::Mutex klocks::RwLock std");
        assert_eq!(
            words(lines[3]),
            "klocks::Mutex klocks::RwLock 1.0 default std",
            "only a whole entry is a lock's name"
        );
    }

    #[test]
    fn tables_align_columns() {
        let mut table = Table::new("t", &["lock", "ns"]);
        table.row(vec!["std".to_owned(), "4.41".to_owned()]);
        table.row(vec!["qspinlock".to_owned(), "12.3 [11–13]".to_owned()]);
        let text = table.to_string();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[1], "lock                 ns");
        assert_eq!(lines[3], "std                4.41");
        assert_eq!(lines[4], "qspinlock  12.3 [11–13]");
    }
}
