//! rw-mix's read fraction: the probability that an operation reads, held in parts
//! per million so that 99.99% (and 99.999%) are exact. On the command line it is per
//! mille, with decimals if need be (`999` = 99.9%, `999.9` = 99.99%: the original
//! spelling, every older command line means what it meant), or percent with its sign
//! (`99.99%`). Tables and the cells' layout print it in percent (`99.99% reads`),
//! with as many decimals as it has, so that a whole per mille prints as it always did.

/// Parts per million in a whole: the unit of a [`ReadFraction`].
pub const MILLION: u32 = 1_000_000;

/// The probability that an operation reads, exact in parts per million: above 0 (an
/// operation that never reads measures no reader), at most 1.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReadFraction(u32);

/// How a value of `--reads` is spelled: its unit in parts per million, and the most
/// decimals it may have (one more would be finer than a part per million).
struct Spelling {
    per_million: u64,
    decimals: usize,
}

/// `999.9`: per mille.
const PER_MILLE: Spelling = Spelling {
    per_million: 1_000,
    decimals: 3,
};
/// `99.99%`: percent.
const PERCENT: Spelling = Spelling {
    per_million: 10_000,
    decimals: 4,
};

impl ReadFraction {
    /// `permille` reads in a thousand operations.
    pub const fn per_mille(permille: u32) -> Self {
        Self(permille * (MILLION / 1_000))
    }

    /// Reads in a million operations: the exact fraction, as a cell records it.
    pub fn per_million(self) -> u32 {
        self.0
    }

    /// Whether an operation whose uniform random `draw` this is reads.
    #[inline]
    pub fn reads(self, draw: u64) -> bool {
        draw % u64::from(MILLION) < u64::from(self.0)
    }

    /// The fraction in percent, exact, without trailing zeros: `99.99`, `99.9`, `50`.
    pub fn percent(self) -> String {
        let per_cent = MILLION / 100;
        let (whole, rest) = (self.0 / per_cent, self.0 % per_cent);
        match rest {
            0 => whole.to_string(),
            _ => {
                let decimals = format!("{rest:04}");
                format!("{whole}.{}", decimals.trim_end_matches('0'))
            }
        }
    }

    /// `99.99% reads`: how tables and cells name the fraction.
    pub fn label(self) -> String {
        format!("{}% reads", self.percent())
    }

    /// A `--reads` value: per mille (`999`, `999.9`) or percent with its sign
    /// (`99.99%`); `Err` says why not, for clap's usage error.
    pub fn parse(text: &str) -> Result<Self, String> {
        let (number, spelling) = match text.strip_suffix('%') {
            Some(percent) => (percent, PERCENT),
            None => (text, PER_MILLE),
        };
        let (whole, decimals) = number.split_once('.').unwrap_or((number, ""));
        let digits = |part: &str| part.bytes().all(|b| b.is_ascii_digit());
        if (whole.is_empty() && decimals.is_empty()) || !digits(whole) || !digits(decimals) {
            return Err(format!(
                "`{text}` is not a read fraction: per mille (999 = 99.9%, 999.9 = 99.99%) or percent with its sign (99.99%)"
            ));
        }
        if decimals.len() > spelling.decimals {
            return Err(format!(
                "`{text}` is finer than the read fraction's unit, a millionth (at most {} decimals here)",
                spelling.decimals
            ));
        }
        let above = || format!("`{text}` is above every operation (at most 1000 per mille, 100%)");
        // Past 7 digits the whole part is above 100% in either spelling, and could
        // overflow the arithmetic below.
        let whole = whole.trim_start_matches('0');
        if whole.len() > 7 {
            return Err(above());
        }
        // Digits only, at most 7 of them; none (`.5`) is 0.
        let whole: u64 = whole.parse().unwrap_or(0);
        let decimals: u64 = format!("{decimals:0<width$}", width = spelling.decimals)
            .parse()
            .unwrap_or(0);
        // The last decimal place of either spelling is one part per million.
        match whole * spelling.per_million + decimals {
            0 => Err(format!(
                "`{text}`: no reads at all; rw-mix mixes reads with writes (above 0, at most 1000 per mille, 100%)"
            )),
            fraction if fraction <= u64::from(MILLION) => Ok(Self(fraction as u32)),
            _ => Err(above()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_spellings_give_the_exact_fraction() {
        let parsed = |text| ReadFraction::parse(text).map(ReadFraction::per_million);
        assert_eq!(parsed("999"), Ok(999_000));
        assert_eq!(parsed("999.9"), Ok(999_900));
        assert_eq!(parsed("99.99%"), Ok(999_900));
        assert_eq!(parsed("999.999"), Ok(999_999));
        assert_eq!(parsed("99.9999%"), Ok(999_999));
        assert_eq!(parsed("1000"), Ok(MILLION));
        assert_eq!(parsed("100%"), Ok(MILLION));
        assert_eq!(parsed("0.001"), Ok(1));
        assert_eq!(parsed("50%"), Ok(500_000));
        assert_eq!(parsed("0500"), Ok(500_000));
    }

    #[test]
    fn what_is_no_fraction_says_why() {
        for bad in [
            "", ".", "0", "0.000", "0%", "1000.001", "100.0001%", "1001", "101%",
            "99999999999999999999999", "-5", "+5", "five", "9e2", "99.99%%", "999.9999",
            "99.99999%", " 999",
        ] {
            assert!(ReadFraction::parse(bad).is_err(), "`{bad}` was taken");
        }
    }

    #[test]
    fn whole_per_mille_prints_as_before() {
        // The label older lockbenches wrote: f64 per mille ÷ 10.
        for permille in [1, 5, 10, 90, 500, 900, 990, 999, 1000] {
            let old = format!("{}% reads", f64::from(permille) / 10.0);
            assert_eq!(ReadFraction::per_mille(permille).label(), old);
        }
        assert_eq!(ReadFraction(999_900).label(), "99.99% reads");
        assert_eq!(ReadFraction(999_999).label(), "99.9999% reads");
        assert_eq!(ReadFraction(1).label(), "0.0001% reads");
    }

    #[test]
    fn a_draw_reads_with_the_fraction() {
        let fraction = ReadFraction(999_900);
        let reads = (0..u64::from(MILLION))
            .filter(|&draw| fraction.reads(draw))
            .count();
        assert_eq!(reads, 999_900);
        assert!(fraction.reads(999_899) && !fraction.reads(999_900));
    }
}
