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

impl super::sealed::Sealed for Adaptive {}
impl super::sealed::Sealed for Always {}
impl super::sealed::Sealed for Never {}

impl super::ReaderSpin for Adaptive {
    const POLICY: Policy = Policy::Adaptive;
}
impl super::ReaderSpin for Always {
    const POLICY: Policy = Policy::Always;
}
impl super::ReaderSpin for Never {
    const POLICY: Policy = Policy::Never;
}
