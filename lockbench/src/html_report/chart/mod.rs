//! Charts as SVG, drawn with plotters' SVG backend.
//!
//! Three kinds: a line chart (one line per lock against threads, the runs' min–max as
//! error bars, the cells that did not finish as one `DNF (n)` cross per thread count
//! on the top edge), a bar
//! chart (one horizontal bar per lock, with the runs' range) and a range chart (per
//! lock and role, the slowest and the fastest thread's operations with the mean, on a
//! log axis whose left edge stands for zero, so a starved thread touches it). Every
//! chart keeps its legend in a column beside the plot, where it cannot cover data,
//! and prints the command that measured it under the plot.
//!
//! Log axes are drawn as linear axes over log10 of the values, with ticks placed and
//! labelled here: one coordinate type for every chart, and ticks at round values.

mod axis;
mod lines;
mod rows;

use plotters::prelude::*;

use axis::Axis;

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
    /// Drawn dashed: the second file's lines in an overlay.
    pub dashed: bool,
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

/// The colours of the locks, each far from the others and from the greys and black
/// of the reference lines and the DNF crosses: Tableau 10 without its grey, then
/// Trubetskoy's "20 distinct colours" that are dark enough on white. A chart holds up
/// to 19 locks (the uncontended bars); past those, darker variants.
pub const PALETTE: [(u8, u8, u8); 19] = [
    (31, 119, 180),
    (255, 127, 14),
    (44, 160, 44),
    (214, 39, 40),
    (148, 103, 189),
    (0, 255, 127),
    (227, 119, 194),
    (188, 189, 34),
    (23, 190, 207),
    (0, 0, 117),
    (128, 0, 0),
    (70, 153, 144),
    (240, 50, 230),
    (128, 128, 0),
    (255, 225, 25),
    (0, 90, 50),
    (170, 255, 195),
    (255, 215, 180),
    (145, 30, 180),
];

/// A distinct colour per index ([`PALETTE`], then darker variants).
pub fn color(index: usize) -> RGBColor {
    let (r, g, b) = PALETTE[index % PALETTE.len()];
    let shade = |c: u8| (u32::from(c) * 3 / (3 + (index / PALETTE.len()) as u32 * 2)) as u8;
    RGBColor(shade(r), shade(g), shade(b))
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
    Dashed { width: u32 },
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
            Swatch::Dashed { width } => {
                for x in [6, 14, 22] {
                    area.draw(&PathElement::new(vec![(x, y), (x + 5, y)], stroke(width)))
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
