//! The line chart: one line per lock against threads.

use plotters::prelude::*;

use super::axis::Axis;
use super::{failed, frame, svg, Drawn, LegendEntry, Lines, Series, Swatch, FONT};

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
        for series in &self.series {
            let style = series
                .color
                .stroke_width(if series.emphasis { 3 } else { 2 });
            let line = series.points.iter().map(|p| (x.to(p.x), y.to(p.median)));
            match series.dashed {
                true => chart.draw_series(DashedLineSeries::new(line, 7, 4, style)),
                false => chart.draw_series(LineSeries::new(line, style)),
            }
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
        }
        // One cross per thread count on the top edge, inside the plot, with how many
        // locks did not finish there (the page lists them under the chart: beside
        // the crosses, the names of neighbouring thread counts would overlap).
        let top = y.hi - (y.hi - y.lo) * 0.03;
        let dnf = TextStyle::from((FONT, 12).into_font());
        let marks = self.unfinished().into_iter().map(|(threads, locks)| {
            EmptyElement::at((x.to(threads), top))
                + Cross::new((0, 0), 5, BLACK.stroke_width(2))
                + Text::new(format!("DNF ({})", locks.len()), (7, -4), dnf.clone())
        });
        chart.draw_series(marks).map_err(failed)?;
        Ok(())
    }

    /// The thread counts where a lock did not finish, each with those locks.
    pub fn unfinished(&self) -> Vec<(f64, Vec<&Series>)> {
        let mut found: Vec<(f64, Vec<&Series>)> = Vec::new();
        for series in &self.series {
            for &threads in &series.unfinished {
                match found.iter_mut().find(|(x, _)| *x == threads) {
                    Some((_, locks)) => locks.push(series),
                    None => found.push((threads, vec![series])),
                }
            }
        }
        found
    }

    fn legend(&self, unfinished: bool) -> Vec<LegendEntry> {
        let mut entries: Vec<LegendEntry> = self
            .series
            .iter()
            .map(|s| {
                let width = if s.emphasis { 3 } else { 2 };
                LegendEntry {
                    name: s.name.clone(),
                    color: s.color,
                    swatch: match s.dashed {
                        true => Swatch::Dashed { width },
                        false => Swatch::Line { width },
                    },
                }
            })
            .collect();
        if let Some((name, _)) = &self.reference {
            entries.push(LegendEntry {
                name: name.clone(),
                color: RGBColor(110, 110, 110),
                swatch: Swatch::Dashed { width: 2 },
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
