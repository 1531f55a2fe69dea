#![cfg(not(loom))]
//! No two source files of the library import each other. A file imports another
//! when one of its paths resolves to a module that the other file holds: in a `use`
//! (`use super::Word`, `use crate::owner::{self, Owner}`) or written inline in code
//! (`crate::testing::contend(..)`, `super::park::wait(..)`, `state::Word::new()` where
//! `state` is a child module). A path resolves to the innermost module it names, so
//! `crate::Padded` is an import of lib.rs (which re-exports it) and
//! `crate::padded::Padded` one of padded.rs. Test modules count: a child's tests may
//! use its parent, but a parent's tests must not use a child that uses the parent.
//!
//! The scan reads the sources as tokens (comments, strings and attributes' contents
//! are not paths), maps each file under `src` to the module its path names (so the
//! modules a macro declares are found too), and keeps `mod name { .. }` blocks as
//! modules of the file they are written in. Paths into other crates (`std::`,
//! `lock_api::`) are not imports of a file.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

#[derive(Debug, Clone, PartialEq)]
enum Token {
    Ident(String),
    /// `::`
    PathSep,
    Punct(char),
}

/// The tokens of Rust source `text` that can take part in a path: identifiers
/// (`$crate` and `r#name` included), `::` and single punctuation. Comments,
/// string, byte-string and character literals, numbers and lifetimes are dropped.
fn tokens(text: &str) -> Vec<Token> {
    let chars: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    let at = |i: usize| chars.get(i).copied().unwrap_or('\0');
    while i < chars.len() {
        let c = chars[i];
        if c.is_whitespace() {
            i += 1;
        } else if c == '/' && at(i + 1) == '/' {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && at(i + 1) == '*' {
            let mut depth = 0;
            loop {
                if at(i) == '/' && at(i + 1) == '*' {
                    depth += 1;
                    i += 2;
                } else if at(i) == '*' && at(i + 1) == '/' {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else if i >= chars.len() {
                    break;
                } else {
                    i += 1;
                }
            }
        } else if (c == 'r' || (c == 'b' && at(i + 1) == 'r'))
            && matches!(at(i + 1 + usize::from(c == 'b')), '"' | '#')
            && raw_string_end(&chars, i + 1 + usize::from(c == 'b')).is_some()
        {
            i = raw_string_end(&chars, i + 1 + usize::from(c == 'b')).unwrap();
        } else if c == '"' || (c == 'b' && at(i + 1) == '"') {
            i += if c == 'b' { 2 } else { 1 };
            while i < chars.len() && chars[i] != '"' {
                i += if chars[i] == '\\' { 2 } else { 1 };
            }
            i += 1;
        } else if c == '\'' || (c == 'b' && at(i + 1) == '\'') {
            // A character literal ('x', '\n', '\u{..}', b'x') or a lifetime ('a).
            let start = i + if c == 'b' { 2 } else { 1 };
            if at(start) == '\\' {
                i = start + 2;
                while i < chars.len() && chars[i] != '\'' {
                    i += 1;
                }
                i += 1;
            } else if at(start + 1) == '\'' {
                i = start + 2;
            } else {
                i = start;
                while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                    i += 1;
                }
            }
        } else if c.is_ascii_digit() {
            while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
        } else if c.is_alphabetic() || c == '_' || (c == '$' && at(i + 1).is_alphabetic()) {
            let start = i;
            i += 1;
            while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
            let mut word: String = chars[start..i].iter().collect();
            if word == "r" && at(i) == '#' && at(i + 1).is_alphabetic() {
                let start = i + 1;
                i = start;
                while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                    i += 1;
                }
                word = chars[start..i].iter().collect();
            }
            out.push(Token::Ident(word));
        } else if c == ':' && at(i + 1) == ':' {
            out.push(Token::PathSep);
            i += 2;
        } else {
            out.push(Token::Punct(c));
            i += 1;
        }
    }
    out
}

/// Where the raw string whose `#`s or quote start at `from` ends, if it is one.
fn raw_string_end(chars: &[char], from: usize) -> Option<usize> {
    let hashes = chars[from..].iter().take_while(|&&c| c == '#').count();
    let mut i = from + hashes;
    if chars.get(i) != Some(&'"') {
        return None;
    }
    i += 1;
    while i < chars.len() {
        if chars[i] == '"' && chars[i + 1..].iter().take_while(|&&c| c == '#').count() >= hashes {
            return Some(i + 1 + hashes);
        }
        i += 1;
    }
    Some(chars.len())
}

/// A module path inside one crate: `["owner", "model"]`; the root is empty.
type ModPath = Vec<String>;

/// Every module of a crate, with the file it is written in.
struct Crate {
    modules: BTreeMap<ModPath, PathBuf>,
}

/// The module that file `file` (relative to its crate's `src`) holds:
/// `owner/model.rs` and `owner/model/mod.rs` hold `owner::model`, `lib.rs` the root.
fn file_module(file: &Path) -> ModPath {
    let mut module: ModPath = file
        .with_extension("")
        .iter()
        .map(|part| part.to_str().unwrap().to_owned())
        .collect();
    if matches!(
        module.last().map(String::as_str),
        Some("mod" | "lib" | "main")
    ) {
        module.pop();
    }
    module
}

/// Calls `visit(index, inline modules around it)` for every token of `t` outside
/// attributes (`#[..]`), and `declare(inline modules around it, name)` for every
/// `mod name { .. }` block.
fn walk(
    t: &[Token],
    mut visit: impl FnMut(usize, &[String]),
    mut declare: impl FnMut(&[String], &str),
) {
    // The inline modules around the current token, each with the brace depth at
    // which it closes.
    let mut inline: Vec<(String, usize)> = Vec::new();
    let mut depth = 0;
    let mut i = 0;
    while i < t.len() {
        if t[i] == Token::Punct('#') {
            let open = i + 1 + usize::from(t.get(i + 1) == Some(&Token::Punct('!')));
            if t.get(open) == Some(&Token::Punct('[')) {
                i = skip_group(t, open);
                continue;
            }
        }
        let names: Vec<String> = inline.iter().map(|(name, _)| name.clone()).collect();
        match &t[i] {
            Token::Punct('{') => depth += 1,
            Token::Punct('}') => {
                depth -= 1;
                if inline.last().is_some_and(|&(_, close)| close == depth) {
                    inline.pop();
                }
            }
            Token::Ident(word) if word == "mod" => {
                if let (Some(Token::Ident(name)), Some(Token::Punct('{'))) =
                    (t.get(i + 1), t.get(i + 2))
                {
                    declare(&names, name);
                    inline.push((name.clone(), depth));
                }
            }
            _ => {}
        }
        visit(i, &names);
        i += 1;
    }
}

/// The index after the group that opens at `open` (`[`, `(` or `{`).
fn skip_group(t: &[Token], open: usize) -> usize {
    let mut depth = 0;
    let mut i = open;
    while i < t.len() {
        match t[i] {
            Token::Punct('[' | '(' | '{') => depth += 1,
            Token::Punct(']' | ')' | '}') => {
                depth -= 1;
                if depth == 0 {
                    return i + 1;
                }
            }
            _ => {}
        }
        i += 1;
    }
    t.len()
}

/// One source file of a crate: its path relative to the crate's `src`, its tokens.
struct Source {
    file: PathBuf,
    tokens: Vec<Token>,
}

/// The modules of the crate made of `sources`: one per file, and the inline
/// `mod name { .. }` blocks, which live in the file they are written in. Files are
/// mapped to modules by their paths, so modules that a macro declares are found too.
fn modules(sources: &[Source]) -> Crate {
    let mut modules = BTreeMap::new();
    for source in sources {
        let module = file_module(&source.file);
        modules.insert(module.clone(), source.file.clone());
        walk(
            &source.tokens,
            |_, _| {},
            |inline, name| {
                let mut path = module.clone();
                path.extend(inline.iter().cloned());
                path.push(name.to_owned());
                modules.insert(path, source.file.clone());
            },
        );
    }
    Crate { modules }
}

/// An import of one file by another: the path as written, resolved.
#[derive(Debug, Clone)]
struct Import {
    from: PathBuf,
    to: PathBuf,
    written: String,
}

impl Crate {
    /// The file of the innermost module that `segments` names, seen from module
    /// `here`; `None` for paths into other crates or unknown names.
    fn resolve(&self, here: &[String], segments: &[String]) -> Option<&PathBuf> {
        let mut module: ModPath = here.to_vec();
        let mut rest = segments;
        match rest.first().map(String::as_str) {
            Some("crate" | "$crate") => {
                module.clear();
                rest = &rest[1..];
            }
            Some("self") => rest = &rest[1..],
            Some("super") => {
                while rest.first().map(String::as_str) == Some("super") {
                    module.pop()?;
                    rest = &rest[1..];
                }
            }
            Some(first) => {
                let mut child = module.clone();
                child.push(first.to_owned());
                if !self.modules.contains_key(&child) {
                    return None;
                }
            }
            None => return None,
        }
        for segment in rest {
            let mut child = module.clone();
            child.push(segment.clone());
            if !self.modules.contains_key(&child) {
                break;
            }
            module = child;
        }
        self.modules.get(&module)
    }

    /// Every import of one file by another in the crate made of `sources`.
    fn imports(&self, sources: &[Source]) -> Vec<Import> {
        let mut imports = Vec::new();
        for source in sources {
            let (file, module, t) = (&source.file, file_module(&source.file), &source.tokens);
            let mut paths: Vec<(ModPath, Vec<String>)> = Vec::new();
            let mut use_until = 0;
            walk(
                t,
                |i, inline| {
                    let mut here = module.clone();
                    here.extend(inline.iter().cloned());
                    if i < use_until {
                        return;
                    }
                    match &t[i] {
                        Token::Ident(word) if word == "use" => {
                            let end = (i..t.len())
                                .find(|&j| t[j] == Token::Punct(';'))
                                .unwrap_or(t.len());
                            for path in use_tree(&t[i + 1..end]) {
                                paths.push((here.clone(), path));
                            }
                            use_until = end;
                        }
                        // `pub(in crate::x)` names a module without importing it.
                        Token::Ident(word)
                            if word == "pub" && t.get(i + 1) == Some(&Token::Punct('(')) =>
                        {
                            use_until = skip_group(t, i + 1);
                        }
                        Token::Ident(word)
                            if t.get(i + 1) == Some(&Token::PathSep)
                                && (i == 0 || t[i - 1] != Token::PathSep) =>
                        {
                            let mut path = vec![word.clone()];
                            let mut j = i + 1;
                            while t.get(j) == Some(&Token::PathSep) {
                                match t.get(j + 1) {
                                    Some(Token::Ident(next)) => path.push(next.clone()),
                                    _ => break,
                                }
                                j += 2;
                            }
                            paths.push((here.clone(), path));
                            use_until = j;
                        }
                        _ => {}
                    }
                },
                |_, _| {},
            );
            for (here, path) in paths {
                if let Some(to) = self.resolve(&here, &path) {
                    if to != file {
                        imports.push(Import {
                            from: file.clone(),
                            to: to.clone(),
                            written: path.join("::"),
                        });
                    }
                }
            }
        }
        imports
    }
}

/// The paths of a use tree (the tokens between `use` and `;`), `as` renames dropped
/// and a trailing `self` folded into its prefix.
fn use_tree(t: &[Token]) -> Vec<Vec<String>> {
    fn tree(t: &[Token], i: &mut usize, prefix: &[String], out: &mut Vec<Vec<String>>) {
        let mut path = prefix.to_vec();
        while *i < t.len() {
            match &t[*i] {
                Token::Ident(word) if word == "as" => *i += 2,
                Token::Ident(word) if word == "self" && !path.is_empty() => *i += 1,
                Token::Ident(word) => {
                    path.push(word.clone());
                    *i += 1;
                }
                Token::PathSep => *i += 1,
                Token::Punct('*') => *i += 1,
                Token::Punct('{') => {
                    *i += 1;
                    loop {
                        tree(t, i, &path, out);
                        match t.get(*i) {
                            Some(Token::Punct(',')) => *i += 1,
                            _ => break,
                        }
                        if t.get(*i) == Some(&Token::Punct('}')) {
                            break;
                        }
                    }
                    *i += 1;
                    return;
                }
                _ => break,
            }
        }
        if path.len() > prefix.len() || path.is_empty() {
            out.push(path);
        } else {
            out.push(prefix.to_vec());
        }
    }
    let mut out = Vec::new();
    let mut i = 0;
    tree(t, &mut i, &[], &mut out);
    out
}

/// The pairs of files that import each other, each with one path written either way,
/// in the crates whose `src` directories are given with their files' texts.
fn two_file_cycles(crates: &[(PathBuf, Vec<(PathBuf, String)>)]) -> Vec<String> {
    let mut edges: BTreeMap<(PathBuf, PathBuf), BTreeSet<String>> = BTreeMap::new();
    for (src, files) in crates {
        let sources: Vec<Source> = files
            .iter()
            .map(|(file, text)| Source {
                file: file.clone(),
                tokens: tokens(text),
            })
            .collect();
        for import in modules(&sources).imports(&sources) {
            edges
                .entry((src.join(import.from), src.join(import.to)))
                .or_default()
                .insert(import.written);
        }
    }
    let mut cycles = Vec::new();
    for ((from, to), written) in &edges {
        if from < to {
            if let Some(back) = edges.get(&(to.clone(), from.clone())) {
                let list = |paths: &BTreeSet<String>| {
                    paths
                        .iter()
                        .map(|p| format!("`{p}`"))
                        .collect::<Vec<_>>()
                        .join(", ")
                };
                cycles.push(format!(
                    "{} <-> {}: the first writes {}; the second {}",
                    from.display(),
                    to.display(),
                    list(written),
                    list(back),
                ));
            }
        }
    }
    cycles
}

/// Every `.rs` file under `dir`, relative to `src`, with its text.
fn rust_files(src: &Path, dir: &Path, out: &mut Vec<(PathBuf, String)>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(src, &path, out);
        } else if path.extension().is_some_and(|ext| ext == "rs") {
            let text = std::fs::read_to_string(&path).unwrap();
            out.push((path.strip_prefix(src).unwrap().to_path_buf(), text));
        }
    }
}

/// The crates held to the rule, by their `src` directories relative to the workspace.
const CRATES: &[&str] = &["klocks/src", "klocks-ffi/src", "lockbench/src"];

#[test]
fn no_two_files_import_each_other() {
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let crates: Vec<(PathBuf, Vec<(PathBuf, String)>)> = CRATES
        .iter()
        .map(|src| {
            let mut files = Vec::new();
            rust_files(&workspace.join(src), &workspace.join(src), &mut files);
            assert!(files.len() > 5, "{src}: {} files", files.len());
            (PathBuf::from(src), files)
        })
        .collect();
    let cycles = two_file_cycles(&crates);
    assert!(
        cycles.is_empty(),
        "files that import each other:\n{}",
        cycles.join("\n")
    );
}

/// The cycles of a one-crate workspace made of `files` (path under `src`, text).
fn cycles_of(files: &[(&str, &str)]) -> Vec<String> {
    let files = files
        .iter()
        .map(|&(path, text)| (PathBuf::from(path), text.to_owned()))
        .collect();
    two_file_cycles(&[(PathBuf::from("src"), files)])
}

/// The scan sees a child that reaches back into its parent through a `use` or a path
/// written inline, and only then: not in comments or strings, not from the child's
/// own tests module, not between files that import in one direction.
#[test]
fn a_parent_and_child_that_import_each_other_are_caught() {
    let lib = "mod owner;\nmod sync;\npub use owner::Watch;\npub struct Root;\n";
    let owner = "mod model;\npub use model::*;\npub struct Kind;\n";
    let one_way = [
        ("lib.rs", lib),
        ("owner.rs", owner),
        (
            "owner/model.rs",
            "use crate::sync::Word; // crate::Root\nconst S: &str = \"super::Kind\";\n\
             pub struct Watch;\n#[cfg(test)]\nmod tests {\n    use super::*;\n}\n",
        ),
        ("sync.rs", "pub struct Word;\n"),
    ];
    assert_eq!(cycles_of(&one_way), Vec::<String>::new());
    for (file, text) in [
        ("owner/model.rs", "use super::Kind;\npub struct Watch;\n"),
        ("owner/model.rs", "pub struct Watch(crate::owner::Kind);\n"),
        (
            "owner/model.rs",
            "use super::{self as owner};\npub struct Watch;\n",
        ),
        (
            "owner.rs",
            "mod model;\npub use model::*;\nfn f() { crate::Root; }\n",
        ),
        (
            "sync.rs",
            "pub struct Word;\n#[cfg(test)]\nmod tests { use crate::owner::model::Watch; }\n",
        ),
    ] {
        let changed: Vec<(&str, &str)> = one_way
            .iter()
            .map(|&(path, old)| (path, if path == file { text } else { old }))
            .collect();
        let cycles = cycles_of(&changed);
        assert_eq!(cycles.len(), 1, "{file}: {text:?}: {cycles:?}");
    }
}
