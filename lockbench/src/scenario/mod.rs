//! The experiments. Each file is one `lockbench` subcommand and owns its options
//! (`Args`, whose doc comment is the subcommand's help), its cells and its tables;
//! what they share lives in [`crate::harness`]. A scenario is registered by one line
//! in the list at the end of this file.

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
    /// Neither (the scenario measures no lock, or chooses locks its own way).
    Neither,
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
    Sharded => sharded,
    RwMix => rw_mix,
}
