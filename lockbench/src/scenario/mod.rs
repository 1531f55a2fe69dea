//! The experiments. Each file is one `lockbench` subcommand and owns its options
//! (`Args`, whose doc comment is the subcommand's help), its cells and its tables;
//! what they share lives in [`crate::harness`]. A scenario implements [`Options`] and
//! [`Scenario`] (through `scenario!`) and is registered by one line in the list at
//! the end of this file.

use crate::harness::{Common, Error};
use crate::machine::Machine;
use crate::report::{Cell, Progress, Table};

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
/// machine)` calls the module's tables.
macro_rules! scenario {
    (takes: $takes:ident, configure: $configure:expr, tables: $tables:expr $(,)?) => {
        impl $crate::scenario::Options for Args {
            const TAKES: $crate::scenario::Takes = $crate::scenario::Takes::$takes;

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
                progress: &$crate::report::Progress,
            ) -> Result<Vec<$crate::report::Cell>, $crate::harness::Error> {
                run(self, progress)
            }

            fn tables(
                &self,
                cells: &[$crate::report::Cell],
                machine: &$crate::machine::Machine,
            ) -> Vec<$crate::report::Table> {
                let tables: fn(
                    &Config,
                    &[$crate::report::Cell],
                    &$crate::machine::Machine,
                ) -> Vec<$crate::report::Table> = $tables;
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
            /// Which lock list the scenario takes.
            pub fn takes(&self) -> Takes {
                match self {
                    $(Measure::$variant(_) => <$module::Args as Options>::TAKES,)*
                }
            }

            /// The scenario, configured; `Err` is a usage error.
            pub fn configure(&self, common: &Common) -> Result<Box<dyn Scenario>, String> {
                match self {
                    $(Measure::$variant(args) => args.configure(common),)*
                }
            }
        }
    };
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
}
