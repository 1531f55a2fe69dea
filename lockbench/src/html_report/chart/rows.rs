//! The charts with one row per lock: bars, and per-thread ranges.

use plotters::prelude::*;

use super::axis::{row_y, rows_axis, Axis};
use super::{failed, fit, frame, svg, Bars, Drawn, LegendEntry, Plot, Ranges, Swatch, FONT};

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
