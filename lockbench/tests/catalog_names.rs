//! The catalog (`klocks::catalog`) is the one place that spells a lock's name: its
//! consumers, lockbench and klocks-ffi (the C API and the preload), take every name
//! from it, so that a lock added or renamed there is offered, listed, labelled and
//! chosen by default everywhere without a second edit. This test reads the non-test
//! code of both crates (each file's lines before its first `#[cfg(test)]`; the
//! `tests.rs` files are test-only) and fails on a string literal that spells a
//! catalog name.
//!
//! A literal that is a name fails. So does a longer literal that holds a name as a
//! word (help text, a title), except for the four names that are also words the
//! prose uses (`default`, `fair`, `futex`, `ticket`: "default type", "less fair",
//! "futex, no spinning"); a literal that is one of those alone still fails.

use std::path::{Path, PathBuf};

use klocks::catalog::{MutexKind, RwLockKind};

/// The catalog's names that are also English words of the prose, checked only as
/// whole literals.
const WORDS: [&str; 4] = ["default", "fair", "futex", "ticket"];

/// Every name of the catalog (lockbench builds klocks with every optional lock).
fn catalog_names() -> Vec<&'static str> {
    let mutexes = MutexKind::ALL.iter().map(|kind| kind.name());
    mutexes
        .chain(RwLockKind::ALL.iter().map(|kind| kind.name()))
        .collect()
}

/// The string literals of Rust source `text`, with their line numbers: comments
/// (doc comments too), char literals and lifetimes are skipped; raw strings are read.
fn string_literals(text: &str) -> Vec<(usize, String)> {
    let chars: Vec<char> = text.chars().collect();
    let (mut found, mut line, mut i) = (Vec::new(), 1, 0);
    let ident = |c: char| c.is_alphanumeric() || c == '_';
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        if c == '\n' {
            line += 1;
            i += 1;
        } else if c == '/' && next == Some('/') {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            let mut depth = 0;
            while i < chars.len() {
                match (chars[i], chars.get(i + 1).copied()) {
                    ('/', Some('*')) => (depth, i) = (depth + 1, i + 2),
                    ('*', Some('/')) => (depth, i) = (depth - 1, i + 2),
                    ('\n', _) => (line, i) = (line + 1, i + 1),
                    _ => i += 1,
                }
                if depth == 0 {
                    break;
                }
            }
        } else if c == 'r'
            && matches!(next, Some('#' | '"'))
            && (i == 0 || !ident(chars[i - 1]) || chars[i - 1] == 'b')
        {
            // A raw string: r"...", r#"..."#, br"...".
            let hashes = chars[i + 1..].iter().take_while(|&&c| c == '#').count();
            let start = i + 1 + hashes;
            if chars.get(start) != Some(&'"') {
                i += 1;
                continue;
            }
            let close: String = std::iter::once('"')
                .chain(std::iter::repeat_n('#', hashes))
                .collect();
            let rest: String = chars[start + 1..].iter().collect();
            let end = rest.find(&close).expect("a raw string closes");
            let body = &rest[..end];
            found.push((line, body.to_owned()));
            line += body.matches('\n').count();
            i = start + 1 + body.chars().count() + close.chars().count();
        } else if c == '"' {
            let (start_line, mut body) = (line, String::new());
            i += 1;
            while chars[i] != '"' {
                if chars[i] == '\\' {
                    body.push(chars[i]);
                    i += 1;
                }
                if chars[i] == '\n' {
                    line += 1;
                }
                body.push(chars[i]);
                i += 1;
            }
            found.push((start_line, body));
            i += 1;
        } else if c == '\'' {
            // A char literal ('x', '\n', '\u{..}') or a lifetime ('a).
            if next == Some('\\') {
                i += 3;
                while chars[i] != '\'' {
                    i += 1;
                }
                i += 1;
            } else if chars.get(i + 2) == Some(&'\'') {
                i += 3;
            } else {
                i += 1;
            }
        } else {
            i += 1;
        }
    }
    found
}

/// The catalog name `literal` spells, if any (see the module doc).
fn spelled<'a>(literal: &str, names: &[&'a str]) -> Option<&'a str> {
    let word = |c: char| c.is_ascii_alphanumeric() || c == '-' || c == '_';
    names.iter().copied().find(|&name| {
        literal == name
            || (!WORDS.contains(&name)
                && literal.split(|c: char| !word(c)).any(|token| token == name))
    })
}

/// A file's code outside its tests: the lines before its first `#[cfg(test)]` (or
/// `#[cfg(all(test, ...))]`); nothing for a test-only `tests.rs`.
fn non_test_part(path: &Path, text: &str) -> String {
    if path.file_name().is_some_and(|name| name == "tests.rs") {
        return String::new();
    }
    text.lines()
        .take_while(|line| !line.starts_with("#[cfg(test)]") && !line.starts_with("#[cfg(all(test"))
        .map(|line| format!("{line}\n"))
        .collect()
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|ext| ext == "rs") {
            out.push(path);
        }
    }
}

/// Where `src` (a crate's source directory) spells catalog names: `path:line: name`.
fn spellings(src: &Path, names: &[&str]) -> Vec<String> {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    files.sort();
    assert!(!files.is_empty(), "no Rust files under {}", src.display());
    let mut found = Vec::new();
    for path in files {
        let text = std::fs::read_to_string(&path).expect("a readable source file");
        for (line, literal) in string_literals(&non_test_part(&path, &text)) {
            if let Some(name) = spelled(&literal, names) {
                found.push(format!(
                    "{}:{line}: {name:?} in {literal:?}",
                    path.display()
                ));
            }
        }
    }
    found
}

#[test]
fn no_lock_name_is_spelled_outside_the_catalog() {
    let names = catalog_names();
    let lockbench = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut found = spellings(&lockbench.join("src"), &names);
    found.extend(spellings(&lockbench.join("../klocks-ffi/src"), &names));
    assert!(
        found.is_empty(),
        "lock names spelled outside klocks::catalog (take them from the catalog: \
         `MutexKind::Default.name()`, a field of the entry, a filter over `ALL`):\n{}",
        found.join("\n")
    );
}

/// The scanner finds what it must and skips comments, chars and tests.
#[test]
fn the_scan_sees_literals_not_comments_or_tests() {
    let names = ["default", "pvqspinlock", "default-rw"];
    let source = r##"
// "pvqspinlock" in a comment
/* "default" in a /* nested */ block */
fn f<'a>(x: &'a str) -> char {
    let quote = '"';
    let raw = r#"the "pvqspinlock" lock"#;
    match x { "default" => '\'', _ => 'x' }
}
const HELP: &str = "`default` is default-rw";
const PROSE: &str = "glibc's default type";
#[cfg(test)]
const IN_A_TEST: &str = "pvqspinlock";
"##;
    let path = Path::new("lib.rs");
    let found: Vec<(usize, &str)> = string_literals(&non_test_part(path, source))
        .into_iter()
        .filter_map(|(line, literal)| Some((line, spelled(&literal, &names)?)))
        .collect();
    assert_eq!(
        found,
        [(6, "pvqspinlock"), (7, "default"), (9, "default-rw")]
    );
    assert!(string_literals(&non_test_part(Path::new("tests.rs"), source)).is_empty());
}
