//! How a cell read back from a `--json` file fills the fields a measured cell holds:
//! names as `&'static str`, and what older files lack or wrote as `null`.
//!
//! Result files name their scenarios, locks, units and layouts from a small
//! vocabulary, so each distinct name read is leaked once and shared by every cell
//! that holds it: a cell read back is the same type as the cell a scenario measured.

use std::collections::BTreeSet;
use std::sync::{Mutex, PoisonError};

use serde::{Deserialize, Deserializer};

/// A name, leaked once per distinct text.
pub fn name<'de, D: Deserializer<'de>>(from: D) -> Result<&'static str, D::Error> {
    Ok(intern(String::deserialize(from)?))
}

/// A lock's name, an older one read as the current one ([`crate::locks::RENAMED`]):
/// files written before a rename compare with files written after it.
pub fn lock_name<'de, D: Deserializer<'de>>(from: D) -> Result<&'static str, D::Error> {
    let text = String::deserialize(from)?;
    Ok(crate::locks::renamed(&text).unwrap_or_else(|| intern(text)))
}

/// A lock's name as a `String` (a summary's verdicts), migrated as [`lock_name`].
pub fn lock_string<'de, D: Deserializer<'de>>(from: D) -> Result<String, D::Error> {
    lock_name(from).map(str::to_owned)
}

/// An optional name (`layout`).
pub fn optional_name<'de, D: Deserializer<'de>>(from: D) -> Result<Option<&'static str>, D::Error> {
    Ok(Option::<String>::deserialize(from)?.map(intern))
}

fn intern(text: String) -> &'static str {
    static NAMES: Mutex<BTreeSet<&'static str>> = Mutex::new(BTreeSet::new());
    let mut names = NAMES.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(&known) = names.get(text.as_str()) {
        return known;
    }
    let leaked: &'static str = Box::leak(text.into_boxed_str());
    names.insert(leaked);
    leaked
}

/// A run's value: JSON has no NaN, so a NaN was written as `null`, and files from
/// before lockbench wrote every run may lack it; both read back as NaN, which no
/// summary or verdict counts.
pub fn value<'de, D: Deserializer<'de>>(from: D) -> Result<f64, D::Error> {
    Ok(Option::<f64>::deserialize(from)?.unwrap_or(f64::NAN))
}

/// A run without a value (see [`value`]).
pub fn no_value() -> f64 {
    f64::NAN
}

/// A run without a `finished` field finished (older files wrote only finished runs).
pub fn finished() -> bool {
    true
}
