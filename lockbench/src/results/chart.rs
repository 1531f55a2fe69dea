//! Charts as SVG, drawn with plotters' SVG backend.
//!
//! Three kinds: a line chart (one line per lock against threads, the runs' min–max as
//! error bars, a cell that did not finish as a `DNF` cross on the top edge), a bar
//! chart (one horizontal bar per lock, with the runs' range) and a range chart (per
//! lock and role, the slowest and the fastest thread's operations with the mean, on a
//! log axis whose left edge stands for zero, so a starved thread touches it). Every
//! chart keeps its legend in a column beside the plot, where it cannot cover data,
//! and prints the command that measured it under the plot.
//!
//! Log axes are drawn as linear axes over log10 of the values, with ticks placed and
//! labelled here: one coordinate type for every chart, and ticks at round values.

use plotters::coord::ranged1d::{DefaultFormatting, KeyPointHint, Ranged};
use plotters::prelude::*;

use crate::report::si;

/// Chart size in pixels: the plot, and the legend column beside it.
const WIDTH: u32 = 660;
const HEIGHT: u32 = 360;
const LEGEND: u32 = 170;
const FOOTER: u32 = 18;
const FONT: &str = "sans-serif";

/// One point of a line: a cell's median and the range of its runs.
#[derive(Debug, Clone, Copy)]
pub struct Point {
    /// Threads.
    pub x: f64,
    /// The median run.
    pub median: f64,
    /// The smallest run.
    pub min: f64,
    /// The largest run.
    pub max: f64,
}

/// One lock's line.
#[derive(Debug)]
pub struct Series {
    /// The lock.
    pub name: String,
    /// Its colour.
    pub color: RGBColor,
    /// Drawn thicker: klocks' default locks.
    pub emphasis: bool,
    /// The finished cells, by threads.
    pub points: Vec<Point>,
    /// Threads of the cells that did not finish.
    pub unfinished: Vec<f64>,
}

/// A line chart against threads.
#[derive(Debug)]
pub struct Lines {
    /// Above the plot.
    pub title: String,
    /// Under the x axis.
    pub x_label: String,
    /// Beside the y axis.
    pub y_label: String,
    /// One per lock.
    pub series: Vec<Series>,
    /// A dashed reference line (e.g. the serialisation ceiling): its name and points.
    pub reference: Option<(String, Vec<(f64, f64)>)>,
    /// The y axis starts at zero when linear (a fraction, a throughput).
    pub y_from_zero: bool,
}

/// One bar of a bar chart.
#[derive(Debug)]
pub struct Bar {
    /// The lock.
    pub name: String,
    /// Its colour.
    pub color: RGBColor,
    /// The median run, and the range.
    pub median: f64,
    /// The smallest run.
    pub min: f64,
    /// The largest run.
    pub max: f64,
}

/// Horizontal bars, one per lock, from zero.
#[derive(Debug)]
pub struct Bars {
    /// Above the plot.
    pub title: String,
    /// Under the value axis.
    pub x_label: String,
    /// In the order drawn, top to bottom.
    pub bars: Vec<Bar>,
}

/// One row of a range chart: a role of a lock.
#[derive(Debug)]
pub struct Range {
    /// `lock readers` or `lock writers`.
    pub name: String,
    /// The role's colour.
    pub color: RGBColor,
    /// The slowest thread's operations (0: starved).
    pub min: f64,
    /// Operations per thread on average.
    pub mean: f64,
    /// The fastest thread's operations.
    pub max: f64,
}

/// Per-thread operations per lock and role.
#[derive(Debug)]
pub struct Ranges {
    /// Above the plot.
    pub title: String,
    /// Under the value axis.
    pub x_label: String,
    /// In the order drawn, top to bottom.
    pub rows: Vec<Range>,
    /// The roles' names and colours, for the legend.
    pub roles: Vec<(String, RGBColor)>,
}

/// A distinct colour per index (Tableau 10, then darker variants).
pub fn color(index: usize) -> RGBColor {
    const PALETTE: [(u8, u8, u8); 10] = [
        (31, 119, 180),
        (255, 127, 14),
        (44, 160, 44),
        (214, 39, 40),
        (148, 103, 189),
        (140, 86, 75),
        (227, 119, 194),
        (127, 127, 127),
        (188, 189, 34),
        (23, 190, 207),
    ];
    let (r, g, b) = PALETTE[index % PALETTE.len()];
    let shade = |c: u8| (u32::from(c) * 3 / (3 + (index / PALETTE.len()) as u32 * 2)) as u8;
    RGBColor(shade(r), shade(g), shade(b))
}

/// A linear or log10 axis over a range of values, with the ticks to label.
#[derive(Debug, Clone)]
struct Axis {
    log: bool,
    lo: f64,
    hi: f64,
    ticks: Vec<f64>,
}

impl Axis {
    /// An axis over `values` (and zero when `from_zero` and linear); log when the
    /// values are positive and span more than `log_ratio`. `headroom`: extra space
    /// above the largest value (a fraction of the span).
    fn over(values: &[f64], from_zero: bool, log_ratio: f64, headroom: f64) -> Self {
        let positive: Vec<f64> = values.iter().copied().filter(|v| *v > 0.0).collect();
        let (min, max) = positive
            .iter()
            .fold((f64::MAX, f64::MIN), |(lo, hi), &v| (lo.min(v), hi.max(v)));
        if positive.is_empty() {
            return Self::linear(0.0, 1.0);
        }
        if positive.len() == values.len() && max / min > log_ratio {
            let (lo, hi) = (min.log10() - 0.08, max.log10() + 0.08);
            return Self::log(lo, hi + (hi - lo) * headroom);
        }
        let lo = if from_zero {
            0.0
        } else {
            min - (max - min) * 0.08
        };
        let hi = max + (max - lo).max(max * 0.1) * (0.08 + headroom);
        Self::linear(lo, hi)
    }

    fn linear(lo: f64, hi: f64) -> Self {
        let step = nice_step((hi - lo) / 5.0);
        let first = (lo / step).ceil() as i64;
        let last = (hi / step).floor() as i64;
        let ticks = (first..=last).map(|i| i as f64 * step).collect();
        Self {
            log: false,
            lo,
            hi,
            ticks,
        }
    }

    /// `lo` and `hi` in log10 units.
    fn log(lo: f64, hi: f64) -> Self {
        let decades: Vec<f64> = (lo.ceil() as i32..=hi.floor() as i32)
            .map(f64::from)
            .collect();
        let mantissas: &[f64] = if decades.len() >= 3 {
            &[1.0]
        } else {
            &[1.0, 2.0, 5.0]
        };
        let ticks = (lo.floor() as i32..=hi.ceil() as i32)
            .flat_map(|d| mantissas.iter().map(move |m| f64::from(d) + m.log10()))
            .filter(|t| (lo..=hi).contains(t))
            .collect();
        Self {
            log: true,
            lo,
            hi,
            ticks,
        }
    }

    /// Threads: ticks at the counts measured, log when they span 8× or more.
    fn threads(counts: &[f64]) -> Self {
        let (min, max) = counts
            .iter()
            .fold((f64::MAX, f64::MIN), |(lo, hi), &v| (lo.min(v), hi.max(v)));
        let mut axis = if max / min >= 8.0 {
            Self::log(min.log10() - 0.1, max.log10() + 0.1)
        } else {
            let pad = ((max - min) * 0.08).max(0.5);
            Self::linear(min - pad, max + pad)
        };
        let mut ticks: Vec<f64> = counts.iter().map(|&c| axis.to(c)).collect();
        ticks.sort_by(f64::total_cmp);
        ticks.dedup();
        axis.ticks = ticks;
        axis
    }

    /// A value in the axis' drawing units.
    fn to(&self, value: f64) -> f64 {
        if self.log {
            value.max(f64::MIN_POSITIVE).log10()
        } else {
            value
        }
    }

    /// A tick's label: the value it stands for.
    fn label(&self, tick: f64) -> String {
        tick_label(if self.log { 10f64.powf(tick) } else { tick })
    }
}

/// plotters' view of an axis: linear in drawing units, ticks where [`Axis`] put them.
impl Ranged for Axis {
    type FormatOption = DefaultFormatting;
    type ValueType = f64;

    fn map(&self, value: &f64, limit: (i32, i32)) -> i32 {
        let share = (value - self.lo) / (self.hi - self.lo);
        limit.0 + (f64::from(limit.1 - limit.0) * share).round() as i32
    }

    fn key_points<Hint: KeyPointHint>(&self, _hint: Hint) -> Vec<f64> {
        self.ticks.clone()
    }

    fn range(&self) -> std::ops::Range<f64> {
        self.lo..self.hi
    }
}

/// 1, 2, 2.5 or 5 times a power of ten, at least `rough`.
fn nice_step(rough: f64) -> f64 {
    let magnitude = 10f64.powf(rough.log10().floor());
    let step = [1.0, 2.0, 2.5, 5.0, 10.0]
        .iter()
        .map(|m| m * magnitude)
        .find(|step| *step >= rough);
    step.unwrap_or(10.0 * magnitude)
}

/// A round label: `0`, `0.25`, `8`, `10k`, `2.5M`.
pub fn tick_label(value: f64) -> String {
    let text = si(value);
    let digits_end = text
        .find(|c: char| c.is_ascii_alphabetic())
        .unwrap_or(text.len());
    let (digits, suffix) = text.split_at(digits_end);
    let digits = match digits.contains('.') {
        true => digits.trim_end_matches('0').trim_end_matches('.'),
        false => digits,
    };
    format!("{digits}{suffix}")
}

/// What can go wrong drawing into a string: nothing but a bug, reported as text.
type Drawn = Result<(), String>;

fn failed<E: std::fmt::Debug>(err: E) -> String {
    format!("drawing a chart: {err:?}")
}

/// Draws into an SVG string: the plot area, the legend column and the footer line.
fn svg(
    footer: &str,
    draw: impl FnOnce(&DrawingArea<SVGBackend, plotters::coord::Shift>) -> Drawn,
    legend: &[LegendEntry],
) -> Result<String, String> {
    let mut out = String::new();
    {
        let root = SVGBackend::with_string(&mut out, (WIDTH, HEIGHT)).into_drawing_area();
        root.fill(&WHITE).map_err(failed)?;
        let (body, foot) = root.split_vertically(HEIGHT - FOOTER);
        let (plot, side) = body.split_horizontally(WIDTH - LEGEND);
        draw(&plot)?;
        draw_legend(&side, legend)?;
        let style = TextStyle::from((FONT, 13).into_font()).color(&RGBColor(90, 90, 90));
        foot.draw(&Text::new(fit(footer, 110), (8, 3), style))
            .map_err(failed)?;
        root.present().map_err(failed)?;
    }
    Ok(out)
}

/// `text`, cut to `chars` with an ellipsis.
fn fit(text: &str, chars: usize) -> String {
    match text.char_indices().nth(chars) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_owned(),
    }
}

/// One legend line: a swatch and a name.
struct LegendEntry {
    name: String,
    color: RGBColor,
    swatch: Swatch,
}

#[derive(Clone, Copy)]
enum Swatch {
    Line { width: u32 },
    Dashed,
    Cross,
}

fn draw_legend(
    area: &DrawingArea<SVGBackend, plotters::coord::Shift>,
    entries: &[LegendEntry],
) -> Drawn {
    let style = TextStyle::from((FONT, 14).into_font());
    for (i, entry) in entries.iter().enumerate() {
        let y = 34 + 19 * i as i32;
        let stroke = |width| entry.color.stroke_width(width);
        match entry.swatch {
            Swatch::Line { width } => {
                area.draw(&PathElement::new(vec![(6, y), (30, y)], stroke(width)))
                    .map_err(failed)?;
                area.draw(&Circle::new((18, y), 3, entry.color.filled()))
                    .map_err(failed)?;
            }
            Swatch::Dashed => {
                for x in [6, 14, 22] {
                    area.draw(&PathElement::new(vec![(x, y), (x + 5, y)], stroke(2)))
                        .map_err(failed)?;
                }
            }
            Swatch::Cross => {
                area.draw(&Cross::new((18, y), 4, stroke(2)))
                    .map_err(failed)?;
            }
        }
        area.draw(&Text::new(fit(&entry.name, 20), (36, y - 7), style.clone()))
            .map_err(failed)?;
    }
    Ok(())
}

type Plot<'a> = ChartContext<'a, SVGBackend<'a>, Cartesian2d<Axis, Axis>>;

/// The frame of a chart: caption, axes, grid and tick labels.
fn frame<'a>(
    area: &DrawingArea<SVGBackend<'a>, plotters::coord::Shift>,
    title: &str,
    (x, x_label): (&Axis, &str),
    (y, y_label): (&Axis, &str),
    y_label_area: u32,
) -> Result<Plot<'a>, String> {
    let mut chart = ChartBuilder::on(area)
        .caption(title, (FONT, 18))
        .margin(8)
        .x_label_area_size(38)
        .y_label_area_size(y_label_area)
        .build_cartesian_2d(x.clone(), y.clone())
        .map_err(failed)?;
    chart
        .configure_mesh()
        .x_desc(x_label)
        .y_desc(y_label)
        .x_label_formatter(&|t| x.label(*t))
        .y_label_formatter(&|t| y.label(*t))
        .label_style((FONT, 14))
        .axis_desc_style((FONT, 14))
        .light_line_style(WHITE)
        .bold_line_style(RGBColor(225, 225, 225))
        .draw()
        .map_err(failed)?;
    Ok(chart)
}

impl Lines {
    /// The chart as an SVG document; `footer`: the command that measured it.
    pub fn svg(&self, footer: &str) -> Result<String, String> {
        let threads: Vec<f64> = self
            .series
            .iter()
            .flat_map(|s| {
                s.points
                    .iter()
                    .map(|p| p.x)
                    .chain(s.unfinished.iter().copied())
            })
            .collect();
        let mut values: Vec<f64> = self
            .series
            .iter()
            .flat_map(|s| s.points.iter().flat_map(|p| [p.min, p.max]))
            .collect();
        if let Some((_, line)) = &self.reference {
            values.extend(line.iter().map(|(_, y)| *y));
        }
        let unfinished = self.series.iter().any(|s| !s.unfinished.is_empty());
        if threads.is_empty() {
            return Err(format!("{}: nothing to draw", self.title));
        }
        let x = Axis::threads(&threads);
        let headroom = if unfinished { 0.12 } else { 0.0 };
        let y = Axis::over(&values, self.y_from_zero, 30.0, headroom);
        svg(
            footer,
            |area| self.draw(area, &x, &y),
            &self.legend(unfinished),
        )
    }

    fn draw(
        &self,
        area: &DrawingArea<SVGBackend, plotters::coord::Shift>,
        x: &Axis,
        y: &Axis,
    ) -> Drawn {
        let mut chart = frame(
            area,
            &self.title,
            (x, &self.x_label),
            (y, &self.y_label),
            56,
        )?;
        if let Some((_, line)) = &self.reference {
            let points: Vec<(f64, f64)> = line.iter().map(|(a, b)| (x.to(*a), y.to(*b))).collect();
            let grey = RGBColor(110, 110, 110).stroke_width(2);
            chart
                .draw_series(DashedLineSeries::new(points, 6, 4, grey))
                .map_err(failed)?;
        }
        // Where a DNF cross sits: on the top edge, inside the plot.
        let top = y.hi - (y.hi - y.lo) * 0.03;
        for series in &self.series {
            let style = series
                .color
                .stroke_width(if series.emphasis { 3 } else { 2 });
            let line = series.points.iter().map(|p| (x.to(p.x), y.to(p.median)));
            chart
                .draw_series(LineSeries::new(line, style))
                .map_err(failed)?;
            let bars = series.points.iter().filter(|p| p.max > p.min).map(|p| {
                ErrorBar::new_vertical(
                    x.to(p.x),
                    y.to(p.min),
                    y.to(p.median),
                    y.to(p.max),
                    series.color.stroke_width(1),
                    6,
                )
            });
            chart.draw_series(bars).map_err(failed)?;
            let dots = series
                .points
                .iter()
                .map(|p| Circle::new((x.to(p.x), y.to(p.median)), 3, series.color.filled()));
            chart.draw_series(dots).map_err(failed)?;
            let label = TextStyle::from((FONT, 12).into_font()).color(&series.color);
            let crosses = series.unfinished.iter().map(|&threads| {
                EmptyElement::at((x.to(threads), top))
                    + Cross::new((0, 0), 5, series.color.stroke_width(2))
                    + Text::new("DNF", (7, -4), label.clone())
            });
            chart.draw_series(crosses).map_err(failed)?;
        }
        Ok(())
    }

    fn legend(&self, unfinished: bool) -> Vec<LegendEntry> {
        let mut entries: Vec<LegendEntry> = self
            .series
            .iter()
            .map(|s| LegendEntry {
                name: s.name.clone(),
                color: s.color,
                swatch: Swatch::Line {
                    width: if s.emphasis { 3 } else { 2 },
                },
            })
            .collect();
        if let Some((name, _)) = &self.reference {
            entries.push(LegendEntry {
                name: name.clone(),
                color: RGBColor(110, 110, 110),
                swatch: Swatch::Dashed,
            });
        }
        if unfinished {
            entries.push(LegendEntry {
                name: "did not finish".to_owned(),
                color: BLACK,
                swatch: Swatch::Cross,
            });
        }
        entries
    }
}

/// A categorical axis drawn as a linear one: row `i` is centred on `rows - i`, so the
/// first row is at the top.
fn rows_axis(rows: usize) -> Axis {
    Axis {
        log: false,
        lo: 0.3,
        hi: rows as f64 + 0.7,
        ticks: Vec::new(),
    }
}

fn row_y(rows: usize, index: usize) -> f64 {
    (rows - index) as f64
}

/// Writes the row names left of the plot, one per row.
fn row_names(chart: &mut Plot, x: &Axis, names: &[&str]) -> Drawn {
    use plotters::style::text_anchor::{HPos, Pos, VPos};
    let style = TextStyle::from((FONT, 14).into_font()).pos(Pos::new(HPos::Right, VPos::Center));
    let rows = names.len();
    let labels = names.iter().enumerate().map(|(i, name)| {
        EmptyElement::at((x.lo, row_y(rows, i))) + Text::new(fit(name, 30), (-6, 0), style.clone())
    });
    chart.draw_series(labels).map_err(failed)?;
    Ok(())
}

impl Bars {
    /// The chart as an SVG document; `footer`: the command that measured it.
    pub fn svg(&self, footer: &str) -> Result<String, String> {
        if self.bars.is_empty() {
            return Err(format!("{}: nothing to draw", self.title));
        }
        let values: Vec<f64> = self.bars.iter().map(|b| b.max).collect();
        let x = Axis::over(&values, true, f64::INFINITY, 0.0);
        let y = rows_axis(self.bars.len());
        svg(footer, |area| self.draw(area, &x, &y), &[])
    }

    fn draw(
        &self,
        area: &DrawingArea<SVGBackend, plotters::coord::Shift>,
        x: &Axis,
        y: &Axis,
    ) -> Drawn {
        let mut chart = frame(area, &self.title, (x, &self.x_label), (y, ""), 150)?;
        let rows = self.bars.len();
        for (i, bar) in self.bars.iter().enumerate() {
            let at = row_y(rows, i);
            let rect = Rectangle::new(
                [(0.0, at - 0.32), (bar.median, at + 0.32)],
                bar.color.filled(),
            );
            chart.draw_series([rect]).map_err(failed)?;
            if bar.max > bar.min {
                let range = ErrorBar::new_horizontal(
                    at,
                    bar.min,
                    bar.median,
                    bar.max,
                    BLACK.stroke_width(1),
                    8,
                );
                chart.draw_series([range]).map_err(failed)?;
            }
        }
        let names: Vec<&str> = self.bars.iter().map(|b| b.name.as_str()).collect();
        row_names(&mut chart, x, &names)
    }
}

impl Ranges {
    /// The chart as an SVG document; `footer`: the command that measured it.
    pub fn svg(&self, footer: &str) -> Result<String, String> {
        if self.rows.is_empty() {
            return Err(format!("{}: nothing to draw", self.title));
        }
        // Log from one operation; zero is drawn on the left edge (0.5).
        let largest = self.rows.iter().map(|r| r.max).fold(1.0, f64::max);
        let x = Axis::log(0.5f64.log10(), largest.log10() + 0.1);
        let y = rows_axis(self.rows.len());
        let legend: Vec<LegendEntry> = self
            .roles
            .iter()
            .map(|(name, color)| LegendEntry {
                name: name.clone(),
                color: *color,
                swatch: Swatch::Line { width: 6 },
            })
            .collect();
        svg(footer, |area| self.draw(area, &x, &y), &legend)
    }

    fn draw(
        &self,
        area: &DrawingArea<SVGBackend, plotters::coord::Shift>,
        x: &Axis,
        y: &Axis,
    ) -> Drawn {
        let mut chart = frame(area, &self.title, (x, &self.x_label), (y, ""), 200)?;
        let rows = self.rows.len();
        let at_least_half = |v: f64| x.to(v.max(0.5));
        for (i, row) in self.rows.iter().enumerate() {
            let at = row_y(rows, i);
            let span = Rectangle::new(
                [
                    (at_least_half(row.min), at - 0.25),
                    (at_least_half(row.max), at + 0.25),
                ],
                row.color.mix(0.55).filled(),
            );
            chart.draw_series([span]).map_err(failed)?;
            let mean = at_least_half(row.mean);
            let mean = PathElement::new(
                vec![(mean, at - 0.38), (mean, at + 0.38)],
                BLACK.stroke_width(2),
            );
            chart.draw_series([mean]).map_err(failed)?;
        }
        let names: Vec<&str> = self.rows.iter().map(|r| r.name.as_str()).collect();
        row_names(&mut chart, x, &names)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_are_round_numbers() {
        assert_eq!(tick_label(0.25), "0.25");
        assert_eq!(tick_label(10_000.0), "10k");
        assert_eq!(tick_label(2_500_000.0), "2.5M");
        assert_eq!(tick_label(8.0), "8");
        assert_eq!(nice_step(0.23), 0.25);
        assert_eq!(nice_step(3.1), 5.0);
        assert_eq!(nice_step(7_000.0), 10_000.0);
    }

    #[test]
    fn wide_ranges_get_a_log_axis() {
        let narrow = Axis::over(&[10.0, 20.0], true, 30.0, 0.0);
        assert!(!narrow.log && narrow.lo == 0.0 && narrow.hi > 20.0);
        let wide = Axis::over(&[10.0, 20_000.0], true, 30.0, 0.0);
        assert!(wide.log);
        let decades: Vec<String> = wide.ticks.iter().map(|&t| wide.label(t)).collect();
        assert_eq!(decades, ["10", "100", "1k", "10k"]);
    }

    #[test]
    fn thread_counts_are_the_ticks() {
        let axis = Axis::threads(&[2.0, 10.0, 64.0, 256.0, 10.0]);
        assert!(axis.log);
        let labels: Vec<String> = axis.ticks.iter().map(|&t| axis.label(t)).collect();
        assert_eq!(labels, ["2", "10", "64", "256"]);
    }
}
