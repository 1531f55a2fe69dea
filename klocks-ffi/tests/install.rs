//! The installable library: its soname, `scripts/install-c`, the pkg-config file,
//! the static library, and the README's C quick start run exactly as written (its
//! first `sh` block in the repository, its C program as `app.c` and its second `sh`
//! block in a project directory), with `HOME` a fresh directory so that `~/.local`
//! is one too.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// The repository's root.
fn root() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
}

/// The fenced blocks of the README's "### C" subsection, as (language, text).
fn readme_c_blocks() -> Vec<(String, String)> {
    let readme = std::fs::read_to_string(root().join("README.md")).expect("read README.md");
    let start = readme
        .find("\n### C\n")
        .expect("README has a ### C subsection");
    let section = &readme[start + 1..];
    // Up to the next subsection (`#include` lines start with `#` too).
    let end = section[1..].find("\n### ").map_or(section.len(), |i| i + 1);
    let mut blocks = Vec::new();
    let mut lines = section[..end].lines();
    while let Some(line) = lines.next() {
        if let Some(language) = line.strip_prefix("```") {
            let text: Vec<&str> = lines.by_ref().take_while(|l| *l != "```").collect();
            blocks.push((language.to_string(), text.join("\n") + "\n"));
        }
    }
    blocks
}

/// A fresh directory under the test's temporary directory.
fn fresh_dir(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("create a temporary directory");
    dir
}

/// `bash -euo pipefail -c script` in `dir` with `HOME` set to `home`, and the cargo
/// that runs the tests first on the `PATH`.
fn bash(script: &str, dir: &Path, home: &Path) -> common::Run {
    let mut path = std::env::var_os("PATH").unwrap_or_default();
    if let Some(cargo_dir) = std::env::var_os("CARGO")
        .map(PathBuf::from)
        .and_then(|cargo| cargo.parent().map(Path::to_path_buf))
    {
        let mut dirs = vec![cargo_dir];
        dirs.extend(std::env::split_paths(&path));
        path = std::env::join_paths(dirs).expect("a PATH");
    }
    let mut command = Command::new("bash");
    command
        .args(["-euo", "pipefail", "-c", script])
        .current_dir(dir)
        .env("HOME", home)
        .env("PATH", path)
        .env_remove("PKG_CONFIG_PATH")
        .env_remove("LD_LIBRARY_PATH");
    common::run(command)
}

/// The README's quick start, run once: the `HOME` it installed into and the
/// project directory with `app.c` and the built `app`, whose run printed `output`.
struct QuickStart {
    home: PathBuf,
    project: PathBuf,
    output: String,
}

fn quick_start() -> &'static QuickStart {
    static DONE: OnceLock<QuickStart> = OnceLock::new();
    DONE.get_or_init(|| {
        let blocks = readme_c_blocks();
        let languages: Vec<&str> = blocks.iter().map(|(l, _)| l.as_str()).collect();
        assert_eq!(
            languages,
            ["sh", "c", "sh"],
            "the README's C quick start changed"
        );
        let home = fresh_dir("readme-home");
        let project = fresh_dir("readme-project");
        let install = bash(&blocks[0].1, root(), &home);
        assert!(install.status.success(), "install: {}", install.stderr);
        std::fs::write(project.join("app.c"), &blocks[1].1).expect("write app.c");
        let run = bash(&blocks[2].1, &project, &home);
        assert!(
            run.status.success(),
            "build and run:\n{}{}",
            run.stdout,
            run.stderr
        );
        QuickStart {
            home,
            project,
            output: run.stdout,
        }
    })
}

/// Programs linked with `-lklocks` ask for `libklocks.so.0`.
#[test]
fn the_library_has_a_versioned_soname() {
    let output = Command::new("readelf")
        .arg("-d")
        .arg(common::library())
        .output()
        .expect("run readelf (binutils)");
    let dynamic = String::from_utf8_lossy(&output.stdout);
    assert!(
        dynamic.contains(&format!("Library soname: [{}]", common::SONAME)),
        "{dynamic}"
    );
}

/// The README's C quick start builds and runs exactly as written, on the installed
/// library (not the build tree's), which it finds through the rpath.
#[test]
fn the_readme_c_quick_start_builds_and_runs() {
    let started = quick_start();
    let version = env!("CARGO_PKG_VERSION");
    assert_eq!(
        started.output.trim(),
        format!("klocks {version}: counter 1")
    );
    let lib = started.home.join(".local/lib");
    for (name, target) in [
        ("libklocks.so", common::SONAME.to_string()),
        (common::SONAME, format!("libklocks.so.{version}")),
    ] {
        let link = std::fs::read_link(lib.join(name)).expect("an installed link");
        assert_eq!(link, Path::new(&target), "{name}");
    }
    let dynamic = Command::new("readelf")
        .arg("-d")
        .arg(started.project.join("app"))
        .output()
        .expect("run readelf");
    let dynamic = String::from_utf8_lossy(&dynamic.stdout);
    assert!(
        dynamic.contains("Shared library: [libklocks.so.0]"),
        "{dynamic}"
    );
    assert!(
        dynamic.contains(&lib.display().to_string()),
        "rpath: {dynamic}"
    );
}

/// The installed `klocks.pc` names the prefix, the version and the header's
/// directory.
#[test]
fn pkg_config_describes_the_installed_library() {
    let started = quick_start();
    let pc_dir = started.home.join(".local/lib/pkgconfig");
    let query = |args: &[&str]| {
        let output = Command::new("pkg-config")
            .args(args)
            .arg("klocks")
            .env("PKG_CONFIG_PATH", &pc_dir)
            .output()
            .expect("run pkg-config");
        assert!(output.status.success(), "pkg-config {args:?}");
        String::from_utf8_lossy(&output.stdout).trim().to_string()
    };
    assert_eq!(query(&["--modversion"]), env!("CARGO_PKG_VERSION"));
    let prefix = started.home.join(".local");
    assert_eq!(
        query(&["--cflags"]),
        format!("-I{}/include", prefix.display())
    );
    assert!(prefix.join("include/klocks.h").exists());
    assert_eq!(
        query(&["--variable=libdir"]),
        format!("{}/lib", prefix.display())
    );
}

/// `libklocks.a` links into a program that needs no libklocks at run time, with
/// the libraries `klocks.pc` lists as private.
#[test]
fn the_static_library_links_and_runs() {
    let started = quick_start();
    let prefix = started.home.join(".local");
    let pc_dir = prefix.join("lib/pkgconfig");
    let script = format!(
        "export PKG_CONFIG_PATH={pc}\n\
         private=$(pkg-config --static --libs-only-l klocks | sed 's/-lklocks//')\n\
         cc app.c $(pkg-config --cflags klocks) {lib}/libklocks.a $private -o app-static\n\
         ./app-static\n\
         readelf -d app-static\n",
        pc = pc_dir.display(),
        lib = prefix.join("lib").display(),
    );
    let run = bash(&script, &started.project, &started.home);
    assert!(run.status.success(), "{}{}", run.stdout, run.stderr);
    assert!(run.stdout.contains(": counter 1"), "{}", run.stdout);
    assert!(!run.stdout.contains("libklocks.so"), "{}", run.stdout);
}
