//! What a charted scenario declares as its chart ([`Chart`]): the panel each cell goes
//! into and how a panel is drawn (lines against threads, bars or ranges). The figures
//! of a result file are drawn from these in `figures.rs`.

use crate::cells::Cell;

/// How a scenario's cells are charted: what a scenario declares as its
/// [`Options::CHART`](crate::scenario::Options::CHART). Scenarios without one are
/// tables on the page.
#[derive(Debug, Clone, Copy)]
pub struct Chart {
    /// The panel a cell is drawn in, from the cell and the file's `pause` in ns;
    /// `None` leaves the cell out.
    pub panel: fn(&Cell, f64) -> Option<Panel>,
    /// How each panel is drawn.
    pub kind: Kind,
}

/// One chart of a scenario: the cells that share it.
#[derive(Debug)]
pub struct Panel {
    /// Unique within the scenario, part of the figure id ([`figure_id`](super::figures::figure_id)); empty for a
    /// scenario with one panel.
    pub key: String,
    /// The chart's caption.
    pub title: String,
}

/// How a panel is drawn.
#[derive(Debug, Clone, Copy)]
pub enum Kind {
    /// Against threads, one line per lock (bars side by side when the panel has one
    /// thread count), with fairness as a second chart where the runs count operations
    /// per thread.
    Lines(Threads),
    /// One bar per lock.
    Bars,
    /// Per lock, readers then writers: the range of sections per thread.
    Ranges,
}

/// The thread axis of a line chart.
#[derive(Debug, Clone, Copy)]
pub struct Threads {
    /// The axis label.
    pub label: &'static str,
    /// What a bar chart at one thread count `n` puts before `n threads`.
    pub count: &'static str,
    /// A horizontal line no lock can beat, from a cell and the `pause` in ns (the
    /// first file's); drawn on the value chart when it is `Some`.
    pub ceiling: Option<fn(&Cell, f64) -> Option<f64>>,
}

impl Threads {
    /// Threads on the axis, nothing else.
    pub const PLAIN: Threads = Threads {
        label: "threads",
        count: "",
        ceiling: None,
    };
}

impl Panel {
    /// A panel of `key` and `title`.
    pub fn new(key: impl Into<String>, title: impl Into<String>) -> Self {
        Self {
            key: key.into(),
            title: title.into(),
        }
    }
}
