//! The progress bar over a command's cells.

use indicatif::{ProgressBar, ProgressStyle};

/// A progress bar on stderr over all cells of a command; invisible when stderr is
/// not a terminal. It only redraws between cells, never while one is measured.
pub struct Progress(ProgressBar);

impl Progress {
    /// A bar over `cells` cells.
    pub fn new(cells: u64) -> Self {
        let bar = ProgressBar::new(cells);
        let style = ProgressStyle::with_template("[{elapsed_precise}] {bar:30} {pos}/{len} {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_bar());
        bar.set_style(style);
        Self(bar)
    }

    /// Names the cell now being measured.
    pub fn start(&self, label: impl Into<String>) {
        self.0.set_message(label.into());
    }

    /// Counts a cell as done.
    pub fn done(&self) {
        self.0.inc(1);
    }

    /// Prints to stdout without tearing the bar.
    pub fn print(&self, text: &str) {
        self.0.suspend(|| print!("{text}"));
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.0.finish_and_clear();
    }
}
