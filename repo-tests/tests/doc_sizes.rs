#![cfg(not(loom))]
//! The lock tables of the documentation against the catalog: docs/design.md's "All
//! the locks" is the full table and names every catalog lock; README.md's and the
//! crate doc's tables are short subsets of it; every size they state, and the sizes
//! table of docs/design.md, is `size_of` of the lock.

use std::mem::size_of;

use klocks::catalog::{
    CatalogMutex, CatalogRwLock, MutexKind, MutexVisitor, RwLockKind, RwLockVisitor,
};
use klocks::Padded;

const DESIGN: &str = include_str!("../../docs/design.md");
const README: &str = include_str!("../../README.md");
const CRATE_DOC: &str = include_str!("../../klocks/src/lib.rs");

/// A lock the docs name, with its sizes: bare, and in [`Padded`].
#[derive(Debug)]
struct Lock {
    name: String,
    bytes: usize,
    padded: usize,
}

struct Sizes;

impl MutexVisitor for Sizes {
    type Output = (usize, usize);
    fn visit<L: CatalogMutex>(self) -> (usize, usize) {
        (size_of::<L>(), size_of::<Padded<L>>())
    }
}

impl RwLockVisitor for Sizes {
    type Output = (usize, usize);
    fn visit<L: CatalogRwLock>(self) -> (usize, usize) {
        (size_of::<L>(), size_of::<Padded<L>>())
    }
}

/// `crate::RwSem < crate::reader_spin::Always >` -> `RwSem`.
fn short_name(type_path: &str) -> String {
    let base = type_path.split('<').next().unwrap();
    base.rsplit("::").next().unwrap().trim().to_owned()
}

/// Every lock of the catalog by its type's name, and the typed names of the default
/// pair (`klocks::Mutex` is a `RawMutex`).
fn catalog() -> Vec<Lock> {
    let mut locks: Vec<Lock> = MutexKind::ALL
        .iter()
        .map(|&kind| (kind.type_path(), kind.visit(Sizes)))
        .chain(
            RwLockKind::ALL
                .iter()
                .map(|&kind| (kind.type_path(), kind.visit(Sizes))),
        )
        .map(|(path, (bytes, padded))| Lock {
            name: short_name(path),
            bytes,
            padded,
        })
        .collect();
    let alias = |alias: &str, of: &str, locks: &[Lock]| {
        let of = locks.iter().find(|lock| lock.name == of).unwrap();
        Lock {
            name: alias.to_owned(),
            bytes: of.bytes,
            padded: of.padded,
        }
    };
    for (typed, raw) in [
        ("klocks::Mutex", "RawMutex"),
        ("Mutex", "RawMutex"),
        ("klocks::RwLock", "RawRwLock"),
        ("RwLock", "RawRwLock"),
    ] {
        let lock = alias(typed, raw, &locks);
        locks.push(lock);
    }
    locks
}

/// The names in backticks (or in rustdoc's `[`...`]`) of `text`, without generics.
fn names_in(text: &str) -> Vec<String> {
    text.split('`')
        .skip(1)
        .step_by(2)
        .map(short_generic)
        .collect()
}

/// `RwSem<P>` -> `RwSem`; `Padded<L>` -> `Padded`.
fn short_generic(name: &str) -> String {
    name.split('<').next().unwrap().to_owned()
}

/// The rows of the markdown table that follows the line `header` in `doc` (rustdoc's
/// `//! ` prefix removed), as cells.
fn table(doc: &str, header: &str) -> Vec<Vec<String>> {
    let lines: Vec<&str> = doc
        .lines()
        .map(|line| line.strip_prefix("//! ").unwrap_or(line))
        .collect();
    let start = lines
        .iter()
        .position(|line| line.starts_with(header))
        .unwrap_or_else(|| panic!("no table headed {header:?}"));
    lines[start + 2..]
        .iter()
        .take_while(|line| line.starts_with('|'))
        .map(|line| {
            line.trim_matches('|')
                .split(" | ")
                .map(|cell| cell.trim().to_owned())
                .collect()
        })
        .collect()
}

/// The first lock a row is about: its first cell's first name.
fn row_lock(row: &[String]) -> String {
    names_in(&row[0]).into_iter().next().unwrap_or_default()
}

/// Every `N bytes` and `N B` in `text`, with the text before it.
fn byte_claims(text: &str) -> Vec<(usize, &str)> {
    let mut claims = Vec::new();
    for unit in [" bytes", " B"] {
        for (at, _) in text.match_indices(unit) {
            let after = &text[at + unit.len()..];
            if after.starts_with(|c: char| c.is_alphanumeric()) {
                continue;
            }
            let before = &text[..at];
            let digits = before.len() - before.trim_end_matches(|c: char| c.is_ascii_digit()).len();
            if digits == 0 {
                continue;
            }
            let number = before[before.len() - digits..].parse().unwrap();
            claims.push((number, &before[..before.len() - digits]));
        }
    }
    claims
}

/// `N and M bytes` at the start of `text`, as "are N and M bytes".
fn pair_claim(text: &str) -> Option<String> {
    fn number(text: &str) -> Option<(&str, &str)> {
        let digits = text.len() - text.trim_start_matches(|c: char| c.is_ascii_digit()).len();
        (digits > 0).then(|| text.split_at(digits))
    }
    let (first, rest) = number(text)?;
    let (second, rest) = number(rest.strip_prefix(" and ")?)?;
    rest.starts_with(" bytes")
        .then(|| format!("are {first} and {second} bytes"))
}

/// Locks that the docs name but this build leaves out: this crate builds klocks with
/// `x86-byte-store`, which adds `QSpinLockByteStore` on x86-64 only.
const NOT_BUILT: &[&str] = if cfg!(target_arch = "x86_64") {
    &[]
} else {
    &["QSpinLockByteStore"]
};

fn lock<'a>(locks: &'a [Lock], name: &str) -> Option<&'a Lock> {
    locks.iter().find(|lock| lock.name == name)
}

/// A catalog entry as the lock table shows it: name, type, bytes, use it when, do
/// not use it when.
fn catalog_rows() -> Vec<[String; 5]> {
    let mutexes = MutexKind::ALL.iter().map(|&kind| {
        let (bytes, _) = kind.visit(Sizes);
        (
            kind.name(),
            kind.type_path(),
            bytes,
            kind.use_when(),
            kind.avoid_when(),
        )
    });
    let rwlocks = RwLockKind::ALL.iter().map(|&kind| {
        let (bytes, _) = kind.visit(Sizes);
        (
            kind.name(),
            kind.type_path(),
            bytes,
            kind.use_when(),
            kind.avoid_when(),
        )
    });
    mutexes
        .chain(rwlocks)
        .map(|(name, path, bytes, use_when, avoid_when)| {
            [
                name.to_owned(),
                type_in_docs(path),
                bytes.to_string(),
                use_when.to_owned(),
                avoid_when.to_owned(),
            ]
        })
        .collect()
}

/// `$crate :: RwSem < $crate :: reader_spin :: Always >` -> `RwSem<reader_spin::Always>`.
fn type_in_docs(type_path: &str) -> String {
    type_path
        .replace(' ', "")
        .replace("$crate::", "")
        .replace("crate::", "")
}

/// The lock table's rows that name a catalog lock (the others name `-`), as the
/// catalog would: name, first type named, bytes, use it when, do not use it when.
fn table_rows(doc: &str) -> Vec<[String; 5]> {
    table(doc, "| lock | name | bytes | kernel design |")
        .into_iter()
        .filter(|row| row[1] != "-")
        .map(|row| {
            [
                row[1].trim_matches('`').to_owned(),
                row[0].split('`').nth(1).unwrap_or_default().to_owned(),
                row[2].clone(),
                row[4].clone(),
                row[5].clone(),
            ]
        })
        .collect()
}

/// The rows of `doc`'s lock table for the locks of this build, sorted by name.
fn built_rows(doc: &str) -> Vec<[String; 5]> {
    let mut rows: Vec<[String; 5]> = table_rows(doc)
        .into_iter()
        .filter(|row| !NOT_BUILT.contains(&short_generic(&row[1]).as_str()))
        .collect();
    rows.sort();
    rows
}

/// The catalog's rows, sorted by name.
fn sorted_catalog_rows() -> Vec<[String; 5]> {
    let mut rows = catalog_rows();
    rows.sort();
    rows
}

/// docs/design.md's lock table has one row per catalog lock (in the order the docs
/// choose), with its name, its type, its size (`size_of`) and the catalog's words for
/// when to use it and when not.
#[test]
fn the_lock_table_is_the_catalog() {
    assert_eq!(
        built_rows(DESIGN),
        sorted_catalog_rows(),
        "docs/design.md's lock table"
    );
}

/// The lock table's check sees a lock missing, a lock too many, changed words and a
/// wrong size.
#[test]
fn a_lock_table_that_disagrees_is_caught() {
    let ticket = DESIGN
        .lines()
        .find(|line| line.starts_with("| `TicketLock` |"))
        .unwrap();
    for changed in [
        DESIGN.replacen(&format!("{ticket}\n"), "", 1),
        DESIGN.replacen(ticket, &format!("{ticket}\n{ticket}"), 1),
        DESIGN.replacen(ticket, &ticket.replace("many CPUs", "some CPUs"), 1),
        DESIGN.replacen(ticket, &ticket.replace(" | 4 | ", " | 8 | "), 1),
    ] {
        assert_ne!(built_rows(&changed), sorted_catalog_rows());
    }
}

/// README.md and the crate doc link to the lock table instead of copying it.
#[test]
fn the_readme_and_crate_doc_link_to_the_table() {
    for (file, doc) in [("README.md", README), ("klocks/src/lib.rs", CRATE_DOC)] {
        assert!(
            doc.contains("design.md#all-the-locks") || doc.contains("\"All the locks\""),
            "{file} does not point to the lock table"
        );
        for row in doc.lines().map(|l| l.strip_prefix("//! ").unwrap_or(l)) {
            if row.starts_with("| ") {
                let named = short_generic(&row_lock(&[row.to_owned()]));
                assert!(
                    lock(&catalog(), &named).is_none(),
                    "{file} copies a row of the lock table: {row}"
                );
            }
        }
    }
}

/// Every catalog lock is 128 bytes in [`Padded`], as docs/design.md says once for all.
#[test]
fn padded_is_the_size_the_docs_state() {
    let stated = "in `Padded<L>` every lock of the table is 128 bytes";
    assert!(
        DESIGN.contains(stated),
        "docs/design.md no longer says {stated:?}"
    );
    for lock in catalog() {
        assert_eq!(lock.padded, 128, "{}", lock.name);
    }
}

/// Every size the prose and the tables state for a lock: "they are 8 and 16 bytes"
/// (the default pair), and in a table row the lock's own size, or another's where
/// the row says "`Other` is N".
#[test]
fn every_stated_size_is_size_of() {
    let locks = catalog();
    let size = |name: &str| lock(&locks, name).unwrap().bytes;
    let pair = format!("are {} and {} bytes", size("RawMutex"), size("RawRwLock"));
    let mut checked = 0;
    for (file, doc) in [
        ("README.md", README),
        ("docs/design.md", DESIGN),
        ("klocks/src/lib.rs", CRATE_DOC),
    ] {
        let text = doc.replace("\n//! ", " ").replace('\n', " ");
        for (at, _) in text.match_indices("are ") {
            if let Some(claim) = pair_claim(&text[at + 4..]) {
                assert_eq!(claim, pair, "{file}");
                checked += 1;
            }
        }
        for line in doc.lines() {
            let line = line.strip_prefix("//! ").unwrap_or(line);
            if !line.starts_with("| ") {
                continue;
            }
            let Some(row) = lock(&locks, &short_generic(&row_lock(&[line.to_owned()]))) else {
                continue;
            };
            for (number, before) in byte_claims(line) {
                let other = before
                    .rsplit_once("` is ")
                    .filter(|(_, gap)| gap.is_empty())
                    .and_then(|(named, _)| named.rsplit('`').next())
                    .map(|name| lock(&locks, name).unwrap());
                let about = other.unwrap_or(row);
                assert_eq!(number, about.bytes, "{file}: {} in {line}", about.name);
                checked += 1;
            }
        }
    }
    assert!(checked >= 6, "found {checked} size claims");
}
