#![cfg(not(loom))]
//! The committed results and their index: `docs/results/README.md` links to every file
//! of `docs/results/` and of `docs/results/archive/` (the older generations of a
//! result), and every result file the repository cites resolves, whether it is written
//! as a path (`docs/results/mutex-turns-2026-11-26.txt` in a code comment) or as a
//! relative markdown link (`[...](results/tuning.md)` in docs/design.md). A file moved
//! to the archive without its citations following it fails the second check.

use std::collections::BTreeSet;
use std::path::{Component, Path, PathBuf};

const INDEX: &str = "docs/results/README.md";
/// The folders whose files the index must name, relative to the workspace.
const RESULT_DIRS: &[&str] = &["docs/results", "docs/results/archive"];

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

/// The targets of the markdown links in `text` (`[label](target)`), without a
/// `#fragment`.
fn link_targets(text: &str) -> Vec<&str> {
    text.match_indices("](")
        .filter_map(|(at, _)| {
            let rest = &text[at + 2..];
            let end = rest.find(')')?;
            let target = rest[..end].split('#').next().unwrap();
            (!target.is_empty() && !target.contains("://") && !target.contains(' '))
                .then_some(target)
        })
        .collect()
}

/// The files of `dirs` (relative to `root`; subfolders are not entered) that `index`
/// (a file in `dirs[0]`) does not link to, as paths relative to `dirs[0]`.
fn unindexed(root: &Path, dirs: &[&str], index: &str) -> Vec<String> {
    let base = root.join(dirs[0]);
    let linked: BTreeSet<PathBuf> = link_targets(index)
        .into_iter()
        .map(|target| normalise(&base.join(target)))
        .collect();
    let mut missing = Vec::new();
    for dir in dirs {
        let mut files: Vec<PathBuf> = std::fs::read_dir(root.join(dir))
            .unwrap_or_else(|err| panic!("{dir}: {err}"))
            .map(|entry| entry.unwrap().path())
            .filter(|path| path.is_file() && path.file_name().unwrap() != "README.md")
            .collect();
        files.sort();
        for file in files {
            if !linked.contains(&normalise(&file)) {
                missing.push(file.strip_prefix(&base).unwrap().display().to_string());
            }
        }
    }
    missing
}

/// `a/b/../c/./d` -> `a/c/d`, without touching the file system.
fn normalise(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

/// Every `docs/results/<name>` that `text` writes as a path, without the ones that are
/// templates (`docs/results/{file}`, `docs/results/$1`, `aa-{1,2}.json`) or the folder
/// itself.
fn cited_paths(text: &str) -> Vec<&str> {
    const PREFIX: &str = "docs/results/";
    let is_path_char = |c: char| c.is_ascii_alphanumeric() || "._/-".contains(c);
    text.match_indices(PREFIX)
        .filter_map(|(at, _)| {
            let rest = &text[at + PREFIX.len()..];
            let end = rest.find(|c| !is_path_char(c)).unwrap_or(rest.len());
            let template = rest[end..].starts_with(['{', '$', '<', '*']);
            let name = rest[..end].trim_end_matches(['.', '/']);
            (!name.is_empty() && !template).then(|| &text[at..at + PREFIX.len() + name.len()])
        })
        .collect()
}

/// The citations of result files in `text` (the file `file`, relative to `root`) that
/// do not resolve: its `docs/results/...` paths, taken from the workspace root, and its
/// relative markdown links into docs/results, taken from the file's folder.
fn dangling(root: &Path, file: &Path, text: &str) -> Vec<String> {
    let mut dangling: Vec<String> = cited_paths(text)
        .into_iter()
        .filter(|cited| !root.join(cited).exists())
        .map(str::to_owned)
        .collect();
    if file.extension().is_some_and(|ext| ext == "md") {
        let results = root.join("docs/results");
        let dir = root.join(file).parent().unwrap().to_path_buf();
        for target in link_targets(text) {
            let resolved = normalise(&dir.join(target));
            if resolved.starts_with(&results) && !resolved.exists() {
                dangling.push(target.to_owned());
            }
        }
    }
    dangling
}

/// The `*.rs` and `*.md` files of the repository, relative to `root`: every folder but
/// hidden ones and build output.
fn sources(root: &Path, dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if path.is_dir() {
            let skipped =
                name.starts_with('.') || name.starts_with("target") || name == "lockbench-report";
            if !skipped {
                sources(root, &path, out);
            }
        } else if name.ends_with(".rs") || name.ends_with(".md") {
            out.push(path.strip_prefix(root).unwrap().to_path_buf());
        }
    }
}

#[test]
fn the_index_names_every_result_file() {
    let root = workspace();
    let index = std::fs::read_to_string(root.join(INDEX)).unwrap();
    let missing = unindexed(&root, RESULT_DIRS, &index);
    assert!(
        missing.is_empty(),
        "{INDEX} does not link to: {}",
        missing.join(", ")
    );
}

#[test]
fn every_cited_result_file_exists() {
    let root = workspace();
    let mut files = Vec::new();
    sources(&root, &root, &mut files);
    assert!(files.len() > 50, "{} source files", files.len());
    let mut citing = 0;
    let mut failures = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(root.join(&file)).unwrap();
        citing += usize::from(text.contains("docs/results/"));
        for cited in dangling(&root, &file, &text) {
            failures.push(format!("{}: {cited}", file.display()));
        }
    }
    assert!(citing > 10, "only {citing} files cite docs/results/");
    assert!(
        failures.is_empty(),
        "result files cited but absent:\n{}",
        failures.join("\n")
    );
}

/// The checks fail: an index without one file's link, a path to a file that moved to
/// the archive, and a relative link to it from another folder.
#[test]
fn a_missing_entry_and_a_dangling_citation_are_caught() {
    let root = workspace();
    let index = std::fs::read_to_string(root.join(INDEX)).unwrap();
    let without = index.replace("(tuning.md)", "(tuning.txt)");
    assert_eq!(unindexed(&root, RESULT_DIRS, &without), ["tuning.md"]);

    let archived = std::fs::read_dir(root.join("docs/results/archive"))
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .min()
        .expect("an archived file");
    let code = format!("// measured in docs/results/{archived}, see there.");
    assert_eq!(
        dangling(&root, Path::new("klocks/src/lib.rs"), &code),
        [format!("docs/results/{archived}")]
    );
    let moved = format!("docs/results/archive/{archived}");
    assert!(dangling(
        &root,
        Path::new("klocks/src/lib.rs"),
        &format!("// {moved}.")
    )
    .is_empty());

    let doc = format!("the [result](results/{archived}), and [this](results/archive/{archived}).");
    assert_eq!(
        dangling(&root, Path::new("docs/design.md"), &doc),
        [format!("results/{archived}")]
    );
    let templates =
        "`docs/results/{file}`, `docs/results/$1`, docs/results/aa-{1,2}.json, docs/results/";
    assert!(cited_paths(templates).is_empty());
}
