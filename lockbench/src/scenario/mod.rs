//! The experiments. Each file is one `lockbench` subcommand and owns its options
//! (`Args`, whose doc comment is the subcommand's help), its cells and its tables;
//! what they share lives in [`crate::harness`]. A scenario implements [`Options`] and
//! [`Scenario`] (through `scenario!`, which also takes the scenario's chart, if it has
//! one) and is registered by one line in the list at the end of this file.

use crate::cells::{Cell, Progress, Table};
use crate::harness::{Common, Error};
use crate::html_report::scenario_chart::Chart;
use crate::machine::Machine;

pub mod torture;

/// A scenario, configured from its command line.
pub trait Scenario {
    /// The cells it measures (the progress bar's unit).
    fn cells(&self) -> u64;

    /// Measures every cell, each verified.
    fn run(&self, progress: &Progress) -> Result<Vec<Cell>, Error>;

    /// The tables of the measured cells.
    fn tables(&self, cells: &[Cell], machine: &Machine) -> Vec<Table>;
}

/// A scenario's command line.
pub trait Options {
    /// Which of the global lock lists it takes.
    const TAKES: Takes;

    /// How `lockbench report` charts its cells; `None`: the page shows its table.
    const CHART: Option<Chart> = None;

    /// The scenario, configured; `Err` is a usage error.
    fn configure(&self, common: &Common) -> Result<Box<dyn Scenario>, String>;
}

/// Which global lock list a scenario takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Takes {
    /// `--locks`.
    Mutexes,
    /// `--rwlocks`.
    RwLocks,
    /// `--locks`, and `--rwlocks` beside them.
    Both,
    /// Neither (the scenario measures no lock, or chooses locks its own way).
    Neither,
}

/// Implements [`Options`] for a scenario module's `Args` and [`Scenario`] for its
/// `Config`, from its `Config::cells` and `run` and two adapters: `configure(args,
/// common)` builds the `Config` (`Err`: a usage error), `tables(config, cells,
/// machine)` calls the module's tables; `chart`, where given, is [`Options::CHART`].
macro_rules! scenario {
    (
        takes: $takes:ident,
        $(chart: $chart:expr,)?
        configure: $configure:expr,
        tables: $tables:expr $(,)?
    ) => {
        impl $crate::scenario::Options for Args {
            const TAKES: $crate::scenario::Takes = $crate::scenario::Takes::$takes;
            $(const CHART: Option<$crate::html_report::scenario_chart::Chart> = Some($chart);)?

            fn configure(
                &self,
                common: &$crate::harness::Common,
            ) -> Result<Box<dyn $crate::scenario::Scenario>, String> {
                let configure: fn(&Args, &$crate::harness::Common) -> Result<Config, String> =
                    $configure;
                Ok(Box::new(configure(self, common)?))
            }
        }

        impl $crate::scenario::Scenario for Config {
            fn cells(&self) -> u64 {
                Config::cells(self)
            }

            fn run(
                &self,
                progress: &$crate::cells::Progress,
            ) -> Result<Vec<$crate::cells::Cell>, $crate::harness::Error> {
                run(self, progress)
            }

            fn tables(
                &self,
                cells: &[$crate::cells::Cell],
                machine: &$crate::machine::Machine,
            ) -> Vec<$crate::cells::Table> {
                let tables: fn(
                    &Config,
                    &[$crate::cells::Cell],
                    &$crate::machine::Machine,
                ) -> Vec<$crate::cells::Table> = $tables;
                tables(self, cells, machine)
            }
        }
    };
}

/// Declares the scenario modules and the subcommands that run them.
macro_rules! scenarios {
    ($($variant:ident => $module:ident,)*) => {
        $(pub mod $module;)*

        /// The measuring subcommands, one per scenario.
        #[derive(Debug, clap::Subcommand)]
        pub enum Measure {
            $($variant($module::Args),)*
        }

        impl Measure {
            /// The scenario, configured; `Err` is a usage error.
            pub fn configure(&self, common: &Common) -> Result<Box<dyn Scenario>, String> {
                match self {
                    $(Measure::$variant(args) => args.configure(common),)*
                }
            }
        }

        /// Every scenario's `Measure` variant, lock list and chart, in the
        /// subcommands' order.
        const SCENARIOS: &[(&str, Takes, Option<Chart>)] = &[$((
            stringify!($variant),
            <$module::Args as Options>::TAKES,
            <$module::Args as Options>::CHART,
        ),)*];
    };
}

/// Which lock list the scenario `name` (its subcommand) takes; `None` for no
/// scenario.
pub fn takes_of(name: &str) -> Option<Takes> {
    SCENARIOS
        .iter()
        .find(|(variant, ..)| subcommand(variant) == name)
        .map(|(_, takes, _)| *takes)
}

/// How the scenario `name` (its subcommand, as a cell names it) is charted; `None`
/// for a scenario shown as a table, or no scenario.
pub fn chart(name: &str) -> Option<Chart> {
    SCENARIOS
        .iter()
        .find(|(variant, ..)| subcommand(variant) == name)
        .and_then(|(.., chart)| *chart)
}

/// The scenarios that take each of `lists`, in that order and then in the
/// subcommands' order, as prose: `rwsem, rw-fair and rw-mix`.
pub fn taking(lists: &[Takes]) -> String {
    let names: Vec<String> = lists
        .iter()
        .flat_map(|list| SCENARIOS.iter().filter(move |(_, takes, _)| takes == list))
        .map(|(variant, ..)| subcommand(variant))
        .collect();
    match names.split_last() {
        Some((last, [])) => last.clone(),
        Some((last, rest)) => format!("{} and {last}", rest.join(", ")),
        None => String::new(),
    }
}

/// The subcommand clap derives from a `Measure` variant: `RwFair` → `rw-fair`.
fn subcommand(variant: &str) -> String {
    let mut name = String::new();
    for c in variant.chars() {
        if c.is_ascii_uppercase() && !name.is_empty() {
            name.push('-');
        }
        name.push(c.to_ascii_lowercase());
    }
    name
}

scenarios! {
    Uncontended => uncontended,
    Loop => loop_,
    FalseSharing => false_sharing,
    C2c => c2c,
    Overcommit => overcommit,
    MutexLoad => mutex_load,
    Rwsem => rwsem,
    RwFair => rw_fair,
    OwnerProbe => owner_probe,
    App => app,
    Preload => preload,
    Sharded => sharded,
    RwMix => rw_mix,
    LockBench => lock_bench,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `chart` finds a scenario by the name clap gives its subcommand.
    #[test]
    fn variants_name_their_subcommands() {
        let cli = <Measure as clap::Subcommand>::augment_subcommands(clap::Command::new("t"));
        let names: Vec<&str> = cli.get_subcommands().map(|c| c.get_name()).collect();
        let derived: Vec<String> = SCENARIOS.iter().map(|(v, ..)| subcommand(v)).collect();
        assert_eq!(names, derived);
        assert!(chart("rw-fair").is_some() && chart("false-sharing").is_some());
        assert!(chart("c2c").is_none() && chart("no-such-scenario").is_none());
    }

    #[test]
    fn lock_lists_name_their_scenarios() {
        assert_eq!(taking(&[Takes::RwLocks]), "rwsem, rw-fair and rw-mix");
        assert_eq!(
            taking(&[Takes::Both, Takes::RwLocks]),
            "uncontended, rwsem, rw-fair and rw-mix"
        );
    }
}
