//! The axes: linear, or log10 drawn as linear over the logarithms, with ticks at round
//! values (or at the thread counts measured) labelled with the values they stand for.

use plotters::coord::ranged1d::{DefaultFormatting, KeyPointHint, Ranged};

use crate::cells::si;

/// A linear or log10 axis over a range of values, with the ticks to label.
#[derive(Debug, Clone)]
pub(super) struct Axis {
    pub(super) log: bool,
    pub(super) lo: f64,
    pub(super) hi: f64,
    pub(super) ticks: Vec<f64>,
}

impl Axis {
    /// An axis over `values` (and zero when `from_zero` and linear); log when the
    /// values are positive and span more than `log_ratio`. `headroom`: extra space
    /// above the largest value (a fraction of the span).
    pub(super) fn over(values: &[f64], from_zero: bool, log_ratio: f64, headroom: f64) -> Self {
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

    pub(super) fn linear(lo: f64, hi: f64) -> Self {
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
    pub(super) fn log(lo: f64, hi: f64) -> Self {
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
    pub(super) fn threads(counts: &[f64]) -> Self {
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
    pub(super) fn to(&self, value: f64) -> f64 {
        if self.log {
            value.max(f64::MIN_POSITIVE).log10()
        } else {
            value
        }
    }

    /// A tick's label: the value it stands for.
    pub(super) fn label(&self, tick: f64) -> String {
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
fn tick_label(value: f64) -> String {
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

/// A categorical axis drawn as a linear one: row `i` is centred on `rows - i`, so the
/// first row is at the top.
pub(super) fn rows_axis(rows: usize) -> Axis {
    Axis {
        log: false,
        lo: 0.3,
        hi: rows as f64 + 0.7,
        ticks: Vec::new(),
    }
}

pub(super) fn row_y(rows: usize, index: usize) -> f64 {
    (rows - index) as f64
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
