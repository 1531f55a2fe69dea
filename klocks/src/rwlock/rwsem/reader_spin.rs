//! The reader-spin policies, as types (`RwSem<P>`) and as values.

/// The policies as values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Policy {
    /// Readers spin; writers' timeouts turn reader spinning off adaptively.
    Adaptive,
    /// Readers spin; nonspinnable bits last until the owner changes.
    Always,
    /// Only writers spin; readers get one lock-steal attempt.
    Never,
}

/// Seed 001's "after": reader spinning, turned off adaptively by the sticky
/// reader-nonspinnable bit; phase-fair spinners.
#[derive(Debug)]
pub struct Adaptive;
/// Seed 001's "before": reader spinning without the adaptive bits.
#[derive(Debug)]
pub struct Always;
/// Linux 5.11 and later: writers spin, readers only steal once.
#[derive(Debug)]
pub struct Never;

/// A reader-spin policy of [`RwSem`](crate::RwSem): one of the types in this module.
pub trait ReaderSpin: sealed::Sealed + Send + Sync + 'static {
    /// Which policy this is.
    const POLICY: Policy;
}

mod sealed {
    pub trait Sealed {}
}

impl sealed::Sealed for Adaptive {}
impl sealed::Sealed for Always {}
impl sealed::Sealed for Never {}

impl ReaderSpin for Adaptive {
    const POLICY: Policy = Policy::Adaptive;
}
impl ReaderSpin for Always {
    const POLICY: Policy = Policy::Always;
}
impl ReaderSpin for Never {
    const POLICY: Policy = Policy::Never;
}
