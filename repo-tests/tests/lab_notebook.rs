#![cfg(not(loom))]
//! The lab notebook stays out of the library's code: klocks' module docs (`//!`) say what
//! a lock does and why, and cite a decision record in `docs/decisions/` for what was
//! measured, tried or changed; they cite no result file and no machine. Every decision a
//! comment cites by file and name (`docs/decisions/raw-rwlock.md`: writer-turns) exists
//! as a heading of that file.

use std::fs;
use std::path::{Path, PathBuf};

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

fn library_sources() -> Vec<(PathBuf, String)> {
    let mut files = Vec::new();
    rust_files(&workspace().join("klocks/src"), &mut files);
    files.sort();
    files
        .into_iter()
        .map(|path| {
            let text = fs::read_to_string(&path).unwrap();
            (path, text)
        })
        .collect()
}

/// Phrases that mark a lab-notebook entry in a module doc: a result file cited, the
/// machine it was measured on.
const NOTEBOOK: &[&str] = &["docs/results/", "development VM", "measured here"];

#[test]
fn module_docs_cite_decisions_not_results() {
    let mut found = Vec::new();
    for (path, text) in library_sources() {
        for (n, line) in text.lines().enumerate() {
            let doc = line.trim_start();
            if !doc.starts_with("//!") {
                continue;
            }
            for phrase in NOTEBOOK {
                if doc.contains(phrase) {
                    found.push(format!("{}:{}: {}", path.display(), n + 1, doc));
                }
            }
        }
    }
    assert!(
        found.is_empty(),
        "module docs that hold the lab notebook (move the figures to docs/decisions/ and cite the decision):\n{}",
        found.join("\n")
    );
}

/// `(file, name)` for every "`docs/decisions/FILE.md`: NAME" or "`docs/decisions/FILE.md`, NAME" in `text`.
fn cited_decisions(text: &str) -> Vec<(String, String)> {
    let mut cited = Vec::new();
    for (at, _) in text.match_indices("docs/decisions/") {
        let rest = &text[at + "docs/decisions/".len()..];
        let Some(end) = rest.find(".md") else {
            continue;
        };
        let file = rest[..end].to_string();
        let after = rest[end + 3..].trim_start_matches('`');
        let Some(after) = after.strip_prefix(':').or_else(|| after.strip_prefix(',')) else {
            cited.push((file, String::new()));
            continue;
        };
        // The name may run onto the next comment line.
        let after = after.trim_start_matches(|c: char| c.is_whitespace() || c == '/' || c == '!');
        let name: String = after
            .chars()
            .take_while(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '-')
            .collect();
        cited.push((file, name));
    }
    cited
}

#[test]
fn every_cited_decision_exists() {
    let decisions = workspace().join("docs/decisions");
    let mut missing = Vec::new();
    let mut cited_any = false;
    for (path, text) in library_sources() {
        for (file, name) in cited_decisions(&text) {
            cited_any = true;
            let record = decisions.join(format!("{file}.md"));
            let Ok(body) = fs::read_to_string(&record) else {
                missing.push(format!(
                    "{}: {} does not exist",
                    path.display(),
                    record.display()
                ));
                continue;
            };
            if !name.is_empty() && !body.lines().any(|l| l.trim() == format!("## {name}")) {
                missing.push(format!(
                    "{}: no decision `{name}` in {}",
                    path.display(),
                    record.display()
                ));
            }
        }
    }
    assert!(
        cited_any,
        "no decision cited: the parser no longer reads the citations"
    );
    assert!(missing.is_empty(), "{}", missing.join("\n"));
}

#[test]
fn the_citation_parser_reads_both_forms() {
    let text = "(`docs/decisions/waiting.md`: pv-steal-streak) and `docs/decisions/raw-rwlock.md`,\n//! bias-inhibit and docs/decisions/x.md.";
    assert_eq!(
        cited_decisions(text),
        [
            ("waiting".to_string(), "pv-steal-streak".to_string()),
            ("raw-rwlock".to_string(), "bias-inhibit".to_string()),
            ("x".to_string(), String::new()),
        ]
    );
}
