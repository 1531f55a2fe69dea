//! The probe under loom: small thread ids per model thread and an answer the model
//! sets, so the models explore both "owner running" and "not running".

//! The probe as loom models see it: every thread is observable, and the answer is
//! whatever a model thread last set.

use std::cell::Cell;

use crate::config::settings::ProbeKind;
use crate::sync::{AtomicU32, Ordering::Relaxed};

const UNKNOWN: u32 = 0;
const RUNNING: u32 = 1;
const NOT_RUNNING: u32 = 2;

loom::lazy_static! {
    static ref ANSWER: AtomicU32 = AtomicU32::new(UNKNOWN);
    static ref NEXT_TID: AtomicU32 = AtomicU32::new(1);
}

loom::thread_local! {
    static TID: Cell<u32> = Cell::new(0);
}

/// The model answers like a registration-based probe: anything.
pub fn probe_kind() -> ProbeKind {
    ProbeKind::PerfSwitch
}

/// A small id per model thread, stable for its life.
pub fn current_tid() -> u32 {
    TID.with(|tid| match tid.get() {
        0 => {
            // Relaxed: ids only need to be distinct, which the RMW guarantees.
            let fresh = NEXT_TID.fetch_add(1, Relaxed);
            tid.set(fresh);
            fresh
        }
        cached => cached,
    })
}

/// Nothing to register in the model.
pub fn watch_current() {}

/// A model never forks: no thread is a fork child's continuation.
pub fn forking_thread_in_parent() -> Option<u32> {
    None
}

/// Sets what every [`Watch`] answers from now on.
pub fn set_model_answer(answer: Option<bool>) {
    let code = match answer {
        None => UNKNOWN,
        Some(true) => RUNNING,
        Some(false) => NOT_RUNNING,
    };
    // Relaxed: the answer is a hint, as the real probes' are; loom explores every
    // value a Relaxed load may return.
    ANSWER.store(code, Relaxed);
}

/// A waiter's view of one owner (model).
#[derive(Debug)]
pub struct Watch(());

impl Watch {
    /// Watches thread `tid` (the model ignores it).
    pub fn new(_tid: u32) -> Watch {
        Watch(())
    }

    /// The answer a model thread set last, or any earlier one loom allows.
    pub fn owner_running(&mut self) -> Option<bool> {
        // Relaxed: see `set_model_answer`.
        match ANSWER.load(Relaxed) {
            RUNNING => Some(true),
            NOT_RUNNING => Some(false),
            _ => None,
        }
    }
}
