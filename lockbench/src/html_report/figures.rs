//! A result file's cells grouped into figures. Each charted scenario declares its
//! [`Chart`] in its own file: the panel a cell goes into (a panel per layout, per
//! load, per read fraction, ...) and whether the panel is drawn as lines against
//! threads, as bars or as ranges. Line charts show one line per lock; where the runs
//! count operations per thread, a second chart shows fairness (the slowest thread ÷
//! the mean). Scenarios without a chart are tables on the page.

use klocks::catalog::{MutexKind, RwLockKind};
use plotters::style::RGBColor;

use super::chart::{self, Bar, Bars, Lines, Point, Range, Ranges, Series};
pub use super::scenario_chart::{Chart, Kind, Panel, Threads};
use super::RunFile;
use crate::cells::Cell;
use crate::cells::Summary;
use crate::verdict;

/// One chart of a file.
#[derive(Debug)]
pub struct Figure {
    /// Unique within the file, usable as a file name: `mutex-load-10-pauses`.
    pub id: String,
    /// The chart's caption.
    pub title: String,
    /// The SVG document.
    pub svg: String,
    /// The cells a line chart marks as not finished, by thread count (`2 threads:
    /// ticket, pvticket`); empty when all finished.
    pub unfinished: String,
}

/// A colour per lock, the same in every chart of a report, and never the colour of
/// another lock drawn in the same chart.
#[derive(Debug, Default)]
pub struct Colors(Vec<(String, usize)>);

impl Colors {
    /// Assigns colours to the locks of `files` in the order first seen: each lock
    /// takes the first palette index that no lock sharing a chart with it holds (a
    /// greedy colouring of the graph whose edges join locks drawn together), so a
    /// report of more locks than the palette has still draws each chart in distinct
    /// colours, and a report of few locks keeps the palette's order.
    pub fn of(files: &[RunFile]) -> Self {
        let mut names: Vec<&str> = Vec::new();
        let mut charts: Vec<(String, Vec<&str>)> = Vec::new();
        for file in files {
            for cell in &file.cells {
                let Some((Panel { key, .. }, _)) = panel(cell, file.machine.pause_ns) else {
                    continue;
                };
                let id = figure_id(cell.scenario, &key);
                let at = match charts.iter().position(|(known, _)| *known == id) {
                    Some(at) => at,
                    None => {
                        charts.push((id, Vec::new()));
                        charts.len() - 1
                    }
                };
                if !charts[at].1.contains(&cell.lock) {
                    charts[at].1.push(cell.lock);
                }
                if !names.contains(&cell.lock) {
                    names.push(cell.lock);
                }
            }
        }
        let mut assigned: Vec<(String, usize)> = Vec::new();
        for name in names {
            let taken: Vec<usize> = charts
                .iter()
                .filter(|(_, locks)| locks.contains(&name))
                .flat_map(|(_, locks)| locks.iter())
                .filter_map(|other| assigned.iter().find(|(n, _)| n == other))
                .map(|(_, index)| *index)
                .collect();
            let index = (0..).find(|i| !taken.contains(i)).unwrap_or_default();
            assigned.push((name.to_owned(), index));
        }
        Self(assigned)
    }

    fn get(&self, lock: &str) -> RGBColor {
        let index = self.0.iter().find(|(name, _)| name == lock);
        chart::color(index.map_or(self.0.len(), |(_, index)| *index))
    }
}

/// Whether a scenario has a chart (else the page shows its table).
pub fn charted(scenario: &str) -> bool {
    crate::scenario::chart(scenario).is_some()
}

/// The panel a cell is drawn in, within its scenario, and how it is drawn. `None`
/// for scenarios without charts.
fn panel(cell: &Cell, pause_ns: f64) -> Option<(Panel, Kind)> {
    let chart = crate::scenario::chart(cell.scenario)?;
    Some(((chart.panel)(cell, pause_ns)?, chart.kind))
}

/// `99.9% reads` → `99-9-reads`: a panel key from a scenario's layout.
pub fn slug(text: &str) -> String {
    let mut slug = String::new();
    for c in text.chars() {
        if c.is_ascii_alphanumeric() {
            slug.push(c.to_ascii_lowercase());
        } else if !slug.ends_with('-') {
            slug.push('-');
        }
    }
    slug.trim_matches('-').to_owned()
}

/// The figure id of a panel.
pub fn figure_id(scenario: &str, key: &str) -> String {
    match key {
        "" => scenario.to_owned(),
        key => format!("{scenario}-{key}"),
    }
}

/// Every figure of a file, in the order its scenarios and panels were measured.
pub fn figures(file: &RunFile, colors: &Colors) -> Result<Vec<Figure>, String> {
    overlay(&[file], colors)
}

/// A cell and the index of the file it comes from.
type Tagged<'a> = (usize, &'a Cell);

/// The figures of `files` drawn over each other: one chart per panel that any of
/// them measured, on one scale, each file's lines in their lock's colour with the
/// file's letter (A, B, ...) in the legend, the first file's solid and the others'
/// dashed. With one file, its figures as they are.
pub fn overlay(files: &[&RunFile], colors: &Colors) -> Result<Vec<Figure>, String> {
    let Some(first) = files.first() else {
        return Ok(Vec::new());
    };
    let pause_ns = first.machine.pause_ns;
    let footer = match files {
        [file] => match &file.date {
            Some(date) => format!("{} · {date}", file.command_line()),
            None => file.command_line(),
        },
        _ => files
            .iter()
            .enumerate()
            .map(|(i, file)| format!("{} = {}", letter(i), file.name()))
            .collect::<Vec<_>>()
            .join(", "),
    };
    let tag = |index: usize| match files.len() {
        1 => String::new(),
        _ => letter(index).to_string(),
    };
    let mut panels: Vec<(String, String, Kind, Vec<Tagged>)> = Vec::new();
    for (index, file) in files.iter().enumerate() {
        for cell in &file.cells {
            let Some((Panel { key, title }, kind)) = panel(cell, file.machine.pause_ns) else {
                continue;
            };
            let id = figure_id(cell.scenario, &key);
            match panels.iter_mut().find(|(known, ..)| *known == id) {
                Some((.., cells)) => cells.push((index, cell)),
                None => panels.push((id, title, kind, vec![(index, cell)])),
            }
        }
    }
    let mut figures = Vec::new();
    for (id, title, kind, cells) in panels {
        let mut threads: Vec<usize> = cells.iter().map(|(_, c)| c.threads).collect();
        threads.sort_unstable();
        threads.dedup();
        let mut unfinished = String::new();
        let svg = match (kind, threads.as_slice()) {
            (Kind::Bars, _) => bars(&title, &cells, colors, &tag, None).svg(&footer)?,
            (Kind::Ranges, _) => ranges(&title, &cells, &tag).svg(&footer)?,
            // One thread count: dots over each other at one x; bars side by side.
            (Kind::Lines(axis), &[only]) => {
                bars(&title, &cells, colors, &tag, Some((axis, only))).svg(&footer)?
            }
            (Kind::Lines(axis), _) => {
                let chart = lines(&title, &cells, colors, &tag, pause_ns, axis, Measure::Value);
                unfinished = chart
                    .unfinished()
                    .iter()
                    .map(|(threads, locks)| {
                        let names: Vec<&str> = locks.iter().map(|s| s.name.as_str()).collect();
                        format!("{threads} threads: {}", names.join(", "))
                    })
                    .collect::<Vec<_>>()
                    .join("; ");
                chart.svg(&footer)?
            }
        };
        figures.push(Figure {
            id: id.clone(),
            title: title.clone(),
            svg,
            unfinished: unfinished.clone(),
        });
        let fair = cells.iter().any(|(_, c)| c.fairness().is_some());
        let axis = match kind {
            Kind::Lines(axis) => Some(axis),
            Kind::Bars => Some(Threads::PLAIN),
            Kind::Ranges => None,
        };
        if let Some(axis) = axis.filter(|_| fair && threads.len() > 1) {
            let title = format!("{title}: fairness");
            let chart = lines(
                &title,
                &cells,
                colors,
                &tag,
                pause_ns,
                axis,
                Measure::Fairness,
            );
            figures.push(Figure {
                id: format!("{id}-fairness"),
                title,
                svg: chart.svg(&footer)?,
                unfinished,
            });
        }
    }
    Ok(figures)
}

/// The letter of the file at `index` in an overlay: A, B, ...
pub fn letter(index: usize) -> char {
    char::from(b'A' + (index % 26) as u8)
}

/// A lock's name in a chart: as users know it, with its file's letter in an overlay.
fn series_name(lock: &str, tag: &str) -> String {
    match tag {
        "" => verdict::label(lock).to_owned(),
        tag => format!("{} · {tag}", verdict::label(lock)),
    }
}

#[derive(Clone, Copy, PartialEq)]
enum Measure {
    Value,
    Fairness,
}

/// One line per lock, in the order first measured.
/// Whether `lock` is the default mutex or rwlock (drawn heavier).
fn is_default(lock: &str) -> bool {
    lock == MutexKind::Default.name() || lock == RwLockKind::Default.name()
}

fn lines(
    title: &str,
    cells: &[Tagged],
    colors: &Colors,
    tag: &dyn Fn(usize) -> String,
    pause_ns: f64,
    axis: Threads,
    measure: Measure,
) -> Lines {
    let mut series: Vec<Series> = Vec::new();
    for &(file, cell) in cells {
        let name = series_name(cell.lock, &tag(file));
        let index = match series.iter().position(|s| s.name == name) {
            Some(index) => index,
            None => {
                series.push(Series {
                    name,
                    color: colors.get(cell.lock),
                    emphasis: is_default(cell.lock),
                    dashed: file > 0,
                    points: Vec::new(),
                    unfinished: Vec::new(),
                });
                series.len() - 1
            }
        };
        let summary = match measure {
            Measure::Value => cell.summary,
            Measure::Fairness => cell.fairness(),
        };
        let line = &mut series[index];
        let x = cell.threads as f64;
        match (summary, &cell.unfinished) {
            (Some(Summary { median, min, max }), None) => line.points.push(Point {
                x,
                median,
                min,
                max,
            }),
            _ => line.unfinished.push(x),
        }
    }
    for line in &mut series {
        line.points.sort_by(|a, b| a.x.total_cmp(&b.x));
    }
    let cells: Vec<&Cell> = cells.iter().map(|(_, cell)| *cell).collect();
    let unit = &cells[0].unit;
    let better = if cells[0].lower_is_better() {
        "lower is better"
    } else {
        "higher is better"
    };
    let (y_label, from_zero) = match measure {
        Measure::Value => (format!("{unit} ({better})"), unit.ends_with("/s")),
        Measure::Fairness => ("slowest thread ÷ mean (1 = even)".to_owned(), true),
    };
    let ceiling = match (measure, axis.ceiling) {
        (Measure::Value, Some(ceiling)) => ceiling(cells[0], pause_ns),
        _ => None,
    };
    let reference = match ceiling {
        Some(per_second) => {
            let mut threads: Vec<f64> = cells.iter().map(|c| c.threads as f64).collect();
            threads.sort_by(f64::total_cmp);
            threads.dedup();
            let line = threads.into_iter().map(|t| (t, per_second)).collect();
            Some(("ceiling (1 ÷ hold)".to_owned(), line))
        }
        _ => None,
    };
    Lines {
        title: title.to_owned(),
        x_label: axis.label.to_owned(),
        y_label,
        series,
        reference,
        y_from_zero: from_zero,
    }
}

/// One bar per lock (and file): `threads` names the axis and the one thread count of
/// a line scenario drawn as bars.
fn bars(
    title: &str,
    cells: &[Tagged],
    colors: &Colors,
    tag: &dyn Fn(usize) -> String,
    threads: Option<(Threads, usize)>,
) -> Bars {
    let bars = cells
        .iter()
        .filter_map(|&(file, cell)| {
            let summary = cell.summary.filter(|_| cell.unfinished.is_none());
            let summary = summary?;
            Some(Bar {
                name: series_name(cell.lock, &tag(file)),
                color: colors.get(cell.lock),
                median: summary.median,
                min: summary.min,
                max: summary.max,
            })
        })
        .collect();
    let cell = cells[0].1;
    let better = match cell.lower_is_better() {
        true => "lower is better",
        false => "higher is better",
    };
    let at = match threads {
        Some((axis, n)) => format!(", {}{n} threads", axis.count),
        None => String::new(),
    };
    Bars {
        title: title.to_owned(),
        x_label: format!("{}{at} ({better})", cell.unit),
        bars,
    }
}

/// Per lock, readers then writers: the lowest minimum and the highest maximum over the
/// runs, and the median mean.
fn ranges(title: &str, cells: &[Tagged], tag: &dyn Fn(usize) -> String) -> Ranges {
    let roles = [("readers", chart::color(0)), ("writers", chart::color(1))];
    let mut rows = Vec::new();
    for &(file, cell) in cells {
        let Some(setup) = &cell.rw else { continue };
        for (role, color) in roles {
            let threads = if role == "readers" {
                setup.readers
            } else {
                setup.writers
            };
            if threads == 0 || cell.runs.is_empty() {
                continue;
            }
            // A run whose role did nothing has no per-thread counts: all zero.
            let per_role: Vec<(f64, f64, f64)> = cell
                .runs
                .iter()
                .map(|run| {
                    let counts = run.rw.as_ref().and_then(|rw| match role {
                        "readers" => rw.readers,
                        _ => rw.writers,
                    });
                    counts.map_or((0.0, 0.0, 0.0), |p| (p.min as f64, p.mean, p.max as f64))
                })
                .collect();
            let mean = Summary::of(per_role.iter().map(|r| r.1)).map_or(0.0, |s| s.median);
            rows.push(Range {
                name: series_name(&format!("{} {role}", verdict::label(cell.lock)), &tag(file)),
                color,
                min: per_role.iter().map(|r| r.0).fold(f64::MAX, f64::min),
                mean,
                max: per_role.iter().map(|r| r.2).fold(0.0, f64::max),
            });
        }
    }
    Ranges {
        title: title.to_owned(),
        x_label: "sections per thread, slowest to fastest, tick = mean (log; 0 at the left edge)"
            .to_owned(),
        rows,
        roles: roles
            .iter()
            .map(|(name, color)| ((*name).to_owned(), *color))
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slugs_are_file_names() {
        assert_eq!(slug("99.9% reads"), "99-9-reads");
        assert_eq!(slug("1000 locks"), "1000-locks");
        assert_eq!(figure_id("loop", ""), "loop");
        assert_eq!(figure_id("rw-mix", "50-reads"), "rw-mix-50-reads");
    }

    /// The palette's colours are far apart, and far from the grey of the reference
    /// lines and the black of the DNF crosses.
    #[test]
    fn the_palette_holds_distinct_colours() {
        let distance = |(r, g, b): (u8, u8, u8), (s, h, c): (u8, u8, u8)| {
            let d = |x: u8, y: u8| (f64::from(x) - f64::from(y)).powi(2);
            (d(r, s) + d(g, h) + d(b, c)).sqrt()
        };
        let palette = chart::PALETTE;
        for (i, &a) in palette.iter().enumerate() {
            for &b in &palette[i + 1..] {
                assert!(distance(a, b) > 60.0, "{a:?} and {b:?}");
            }
            for line in [(110, 110, 110), (0, 0, 0)] {
                assert!(distance(a, line) > 60.0, "{a:?} beside {line:?}");
            }
        }
    }

    /// In every chart of the committed default runs (the uncontended bars hold every
    /// mutex and rwlock, more locks than the palette) and of a report of two files,
    /// no two locks share a colour, and each lock keeps one colour across charts.
    #[test]
    fn every_chart_draws_its_locks_in_distinct_colours() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/results");
        let load = |name: &str| RunFile::load(&dir.join(name)).unwrap_or_else(|e| panic!("{e}"));
        let sets = [
            vec![load("default-suite.json")],
            vec![load("default-suite.json"), load("rw-mix-2026-11-25.json")],
        ];
        for files in sets {
            let colors = Colors::of(&files);
            let mut charts: Vec<(String, Vec<(&str, RGBColor)>)> = Vec::new();
            let mut seen: Vec<(&str, RGBColor)> = Vec::new();
            for file in &files {
                for cell in &file.cells {
                    let Some((panel, _)) = panel(cell, file.machine.pause_ns) else {
                        continue;
                    };
                    let id = figure_id(cell.scenario, &panel.key);
                    let color = colors.get(cell.lock);
                    match seen.iter().find(|(lock, _)| *lock == cell.lock) {
                        Some((_, before)) => assert_eq!(*before, color, "{}", cell.lock),
                        None => seen.push((cell.lock, color)),
                    }
                    match charts.iter_mut().find(|(known, _)| *known == id) {
                        Some((_, locks)) => {
                            if !locks.iter().any(|(lock, _)| *lock == cell.lock) {
                                locks.push((cell.lock, color));
                            }
                        }
                        None => charts.push((id, vec![(cell.lock, color)])),
                    }
                }
            }
            assert!(seen.len() > 2, "{} locks", seen.len());
            for (id, locks) in &charts {
                for (i, (a, color)) in locks.iter().enumerate() {
                    let twin = locks[i + 1..].iter().find(|(_, other)| other == color);
                    assert!(twin.is_none(), "{id}: {a} and {twin:?}");
                }
            }
        }
    }
}
