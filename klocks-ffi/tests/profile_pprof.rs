//! `KLOCKS_PROFILE_FORMAT=pprof` (`tests/c/contention.c`, `tests/c/profile.c`): the
//! file decodes (gunzip, then the `profile.proto` messages the preload encodes with)
//! to Go's mutex-profile measures; its samples add up to the contentions and delay
//! the preload's counters hold, per lock to what the JSON report counts and what the
//! program measured of its own waits; its locations name the program's functions,
//! files and lines, and its mappings carry the modules' build IDs; it goes to
//! `KLOCKS_PROFILE_FILE` or a default file, never to stderr or a terminal, and at exit
//! only (a `SIGUSR2` report says so); `go tool pprof -top` reads it with no flags and
//! lists the hottest lock's waiting function first.

mod common;
#[path = "common/profile_report.rs"]
mod profile_report;
#[path = "../src/preload/profile/report/pprof_proto.rs"]
mod proto;

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use prost::Message;

use profile_report::profiled_binary;

fn contention() -> &'static PathBuf {
    static BINARY: OnceLock<PathBuf> = OnceLock::new();
    BINARY.get_or_init(|| common::compile("contention", false))
}

/// The line of `tests/c/contention.c` marked `SITE:<name>`.
fn contention_line(name: &str) -> usize {
    let marker = format!("/* SITE:{name} */");
    include_str!("c/contention.c")
        .lines()
        .position(|l| l.contains(&marker))
        .unwrap_or_else(|| panic!("no {marker} in contention.c"))
        + 1
}

/// A fresh directory for one test's files.
fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("pprof-{name}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The profile in the gzipped file at `path`.
fn decode(path: &Path) -> proto::Profile {
    let gzipped = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut bytes = Vec::new();
    flate2::read::GzDecoder::new(&gzipped[..])
        .read_to_end(&mut bytes)
        .unwrap_or_else(|e| panic!("gunzip {}: {e}", path.display()));
    proto::Profile::decode(&bytes[..]).unwrap_or_else(|e| panic!("decode {}: {e}", path.display()))
}

/// The profile's line on stderr: its contentions, delay in ns and file.
fn said(stderr: &str) -> (i64, i64, String) {
    let line = stderr
        .lines()
        .find_map(|l| l.strip_prefix("klocks: profile: "))
        .unwrap_or_else(|| panic!("no profile line: {stderr}"));
    let (contentions, rest) = line.split_once(" contentions, ").expect(line);
    let (delay, rest) = rest.split_once(" ns of delay, ").expect(line);
    let (_, path) = rest.split_once(" of pprof format: ").expect(line);
    let (path, _) = path.split_once(" (go tool pprof").expect(line);
    (
        contentions.parse().expect(line),
        delay.parse().expect(line),
        path.to_owned(),
    )
}

/// A sample's labels, by key.
fn labels(profile: &proto::Profile, sample: &proto::Sample) -> BTreeMap<String, String> {
    let text = |index: i64| profile.string_table[index as usize].clone();
    sample
        .label
        .iter()
        .map(|label| (text(label.key), text(label.str)))
        .collect()
}

/// The (function, file, line) of each line of a location, innermost first.
fn lines(profile: &proto::Profile, id: u64) -> Vec<(String, String, i64)> {
    let text = |index: i64| profile.string_table[index as usize].clone();
    let location = &profile.location[id as usize - 1];
    assert_eq!(location.id, id);
    location
        .line
        .iter()
        .map(|line| {
            let function = &profile.function[line.function_id as usize - 1];
            assert_eq!(function.id, line.function_id);
            (text(function.name), text(function.filename), line.line)
        })
        .collect()
}

/// The GNU build ID of the ELF file at `path`, in hex.
fn build_id(path: &Path) -> String {
    use object::Object;
    let data = std::fs::read(path).unwrap();
    let file = object::File::parse(&*data).unwrap();
    let id = file
        .build_id()
        .unwrap()
        .expect("the compiler writes a build ID");
    id.iter().map(|byte| format!("{byte:02x}")).collect()
}

/// The contention program under the pprof format: its samples add up to the
/// counters' totals and, per lock, to what a JSON run counts (the program's waits
/// are counted exactly: 20 per lock) and what the program measured; every location
/// of the program names its function, file and line, the waiting one with
/// `timed_lock` inlined in its caller; every mapping carries its module's build ID.
#[test]
fn the_profile_decodes_adds_up_and_names_functions_and_builds() {
    let dir = scratch("contention");
    let template = dir.join("contention-%p.pb.gz");
    let run = profiled_binary(
        contention(),
        &[],
        &[
            ("KLOCKS_PROFILE", "1"),
            ("KLOCKS_PROFILE_FORMAT", "pprof"),
            ("KLOCKS_PROFILE_FILE", template.to_str().unwrap()),
        ],
    );
    let (contentions, delay, path) = said(&run.stderr);
    assert_eq!(
        path,
        dir.join(format!("contention-{}.pb.gz", run.pid))
            .to_str()
            .unwrap()
    );
    assert_eq!(
        run.stderr.lines().count(),
        1,
        "only the profile's line: {}",
        run.stderr
    );
    let profile = decode(Path::new(&path));
    let text = |index: i64| profile.string_table[index as usize].as_str();
    assert_eq!(text(0), "");
    let types: Vec<_> = profile
        .sample_type
        .iter()
        .map(|t| (text(t.r#type), text(t.unit)))
        .collect();
    assert_eq!(types, [("contentions", "count"), ("delay", "nanoseconds")]);
    let period = profile.period_type.as_ref().expect("a period type");
    assert_eq!(
        (text(period.r#type), text(period.unit)),
        ("contentions", "count")
    );
    assert_eq!(profile.period, 1);
    assert!(profile.duration_nanos > 0 && profile.time_nanos > 0);

    // Totals: the samples' sums against the counters' (the delay within the
    // rounding of each sample to whole nanoseconds).
    let sum = |value: usize| profile.sample.iter().map(|s| s.value[value]).sum::<i64>();
    assert_eq!(sum(0), contentions, "{}", run.stderr);
    assert!(
        (sum(1) - delay).abs() <= profile.sample.len() as i64,
        "{} vs {delay}",
        sum(1)
    );

    // Per lock: against a JSON run of the same program and its own measures.
    let mut by_lock = BTreeMap::<String, (i64, i64)>::new();
    for sample in &profile.sample {
        let labels = labels(&profile, sample);
        assert_eq!(labels["kind"], "mutex", "{labels:?}");
        let total = by_lock.entry(labels["lock"].clone()).or_default();
        total.0 += sample.value[0];
        total.1 += sample.value[1];
    }
    let heap = format!(
        "initialised at contention.c:{} (main)",
        contention_line("heap")
    );
    let request = format!(
        "destroyed locks initialised at contention.c:{} (main)",
        contention_line("request")
    );
    let of = |name: &str| {
        by_lock
            .iter()
            .find(|(lock, _)| {
                lock.as_str() == name || (lock.starts_with("0x") && lock.ends_with(name))
            })
            .map(|(_, &total)| total)
            .unwrap_or_else(|| panic!("no samples of {name}: {by_lock:?}"))
    };
    let totals = [of("global_lock"), of(&heap), of(&request)];
    assert_eq!(by_lock.len(), 3, "{by_lock:?}");
    let json = json_contentions();
    assert_eq!(
        totals.map(|(contentions, _)| contentions),
        json,
        "{by_lock:?}"
    );
    assert_eq!(contentions, json.iter().sum::<i64>());
    for ((_, profiled), measured) in totals.into_iter().zip(measured(&run.stdout)) {
        let profiled = profiled as f64;
        assert!(
            profiled <= 1.01 * measured && measured - profiled <= 0.05 * measured + 2e6,
            "profiled {profiled} ns, the program measured {measured} ns"
        );
    }

    // Locations: the waiting call, inlined, then its callers, in the program.
    let binary = std::fs::canonicalize(contention()).unwrap();
    let program = profile
        .mapping
        .iter()
        .find(|m| text(m.filename) == binary.to_str().unwrap())
        .unwrap_or_else(|| panic!("no mapping of {}: {:?}", binary.display(), profile.mapping));
    assert_eq!(program.id, 1, "the program's mapping comes first");
    assert_eq!(text(program.build_id), build_id(&binary));
    assert!(program.has_functions && program.has_filenames && program.has_line_numbers);
    assert!(program.has_inline_frames);
    let wait = contention_line("wait") as i64;
    for (name, caller) in [
        ("global_lock", "serve_global"),
        (heap.as_str(), "serve_heap"),
        (request.as_str(), "serve_request"),
    ] {
        let sample = profile
            .sample
            .iter()
            .find(|s| {
                let lock = &labels(&profile, s)["lock"];
                lock == name || lock.ends_with(name)
            })
            .unwrap();
        let leaf = lines(&profile, sample.location_id[0]);
        assert_eq!(
            leaf,
            [
                ("timed_lock".into(), "contention.c".into(), wait),
                (caller.into(), String::new(), 0)
            ],
            "{name}"
        );
        let next = lines(&profile, sample.location_id[1]);
        assert_eq!(next.len(), 1, "{next:?}");
        assert_eq!(
            (next[0].0.as_str(), next[0].1.as_str()),
            ("waiter", "contention.c")
        );
        for &id in &sample.location_id[..2] {
            let location = &profile.location[id as usize - 1];
            assert_eq!(location.mapping_id, program.id, "{location:?}");
            assert!(
                (program.memory_start..program.memory_limit).contains(&location.address),
                "{location:?} outside {program:?}"
            );
        }
    }
    for mapping in &profile.mapping {
        let id = text(mapping.build_id);
        assert!(
            id.len() >= 16 && id.bytes().all(|b| b.is_ascii_hexdigit()),
            "{} has build ID {id:?}",
            text(mapping.filename)
        );
        assert!(mapping.memory_start < mapping.memory_limit, "{mapping:?}");
    }
    let libc = profile
        .mapping
        .iter()
        .find(|m| text(m.filename).contains("libc.so"))
        .expect("a mapping of the C library");
    assert_eq!(
        text(libc.build_id),
        build_id(Path::new(text(libc.filename)))
    );
}

/// What `contention` measured of its own waits: global, heap, request, in ns.
fn measured(stdout: &str) -> [f64; 3] {
    ["global", "heap", "request"].map(|name| {
        stdout
            .lines()
            .find_map(|l| l.strip_prefix(&format!("measured {name} ")))
            .and_then(|ns| ns.parse().ok())
            .unwrap_or_else(|| panic!("no measured {name}: {stdout}"))
    })
}

/// The contentions a JSON run of `contention` counts: the global lock's, the heap
/// lock's and the per-request locks' site's.
fn json_contentions() -> [i64; 3] {
    let run = profiled_binary(
        contention(),
        &[],
        &[("KLOCKS_PROFILE", "1"), ("KLOCKS_PROFILE_FORMAT", "json")],
    );
    let objects: Vec<serde_json::Value> = run
        .stderr
        .lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}")))
        .collect();
    let contended = |object: &serde_json::Value| {
        object["holds"]
            .as_array()
            .map_or(object["contended"].as_i64(), |holds| {
                holds.iter().map(|h| h["contended"].as_i64()).sum()
            })
            .unwrap()
    };
    let lock = |symbol: Option<&str>| {
        objects
            .iter()
            .find(|o| o["type"] == "lock" && o["symbol"].as_str() == symbol)
            .map(contended)
            .unwrap_or_else(|| panic!("no lock {symbol:?}: {}", run.stderr))
    };
    let site = objects
        .iter()
        .find(|o| o["type"] == "site" && o["destroyed"].as_i64() > Some(0))
        .map(contended)
        .unwrap_or_else(|| panic!("no site of destroyed locks: {}", run.stderr));
    [lock(Some("global_lock")), lock(None), site]
}

/// Unset `KLOCKS_PROFILE_FILE`, the profile goes to `klocks-PROGRAM-PID.pb.gz` in the
/// working directory, and stderr gets the one line that names it; a
/// `KLOCKS_PROFILE_FILE` that cannot be opened, or is a terminal (`/dev/ptmx` opens a
/// pseudo-terminal's master), is said, and passed over for that default.
#[test]
fn without_a_file_the_profile_goes_to_its_default_file_not_to_stderr() {
    let refused = [
        (None, ""),
        (Some("/nonexistent/dir/profile.pb.gz"), "errno 2"),
        (Some("/dev/ptmx"), "a terminal"),
    ];
    for (at, (file, why)) in refused.into_iter().enumerate() {
        let dir = scratch(&format!("default-{at}"));
        let mut command = Command::new(contention());
        command
            .current_dir(&dir)
            .env("LD_PRELOAD", common::library());
        for (var, _) in std::env::vars() {
            if var.starts_with("KLOCKS_") {
                command.env_remove(var);
            }
        }
        command
            .env("KLOCKS_PROFILE", "1")
            .env("KLOCKS_PROFILE_FORMAT", "pprof");
        if let Some(file) = file {
            command.env("KLOCKS_PROFILE_FILE", file);
        }
        let run = common::run(command);
        assert!(run.status.success(), "{}", run.stderr);
        let (contentions, _, path) = said(&run.stderr);
        let expected = format!("klocks-klocks-c-contention-{}.pb.gz", run.pid);
        assert_eq!(path, expected);
        let mut lines = run.stderr.lines();
        if let Some(file) = file {
            assert_eq!(
                lines.next(),
                Some(
                    format!(
                        "klocks: cannot write the pprof profile to KLOCKS_PROFILE_FILE={file:?} ({why}); writing it to the default file"
                    )
                    .as_str()
                ),
                "{}",
                run.stderr
            );
        }
        assert!(lines
            .next()
            .is_some_and(|l| l.starts_with("klocks: profile: ")));
        assert_eq!(lines.next(), None, "{}", run.stderr);
        let profile = decode(&dir.join(&expected));
        assert_eq!(
            profile.sample.iter().map(|s| s.value[0]).sum::<i64>(),
            contentions
        );
    }
}

/// `go tool pprof -top FILE`, no other flags and no binary: it reads the profile of
/// `profile ranks`, whose hottest lock is `held_long` (see `profile.rs`), and lists
/// the function that waits for it, `long_worker`, first. Skipped, with a note, where
/// Go is not installed.
#[test]
fn go_tool_pprof_lists_the_hottest_locks_waiting_function_first() {
    if Command::new("go").arg("version").output().is_err() {
        eprintln!("note: no `go` on PATH; go tool pprof's reading of the profile is not checked");
        return;
    }
    let dir = scratch("go");
    let file = dir.join("ranks.pb.gz");
    let binary = common::compile("profile", false);
    let run = profiled_binary(
        &binary,
        &["ranks"],
        &[
            ("KLOCKS_PROFILE", "1"),
            ("KLOCKS_PROFILE_FORMAT", "pprof"),
            ("KLOCKS_PROFILE_FILE", file.to_str().unwrap()),
        ],
    );
    assert!(said(&run.stderr).0 > 0, "{}", run.stderr);
    let output = Command::new("go")
        .args(["tool", "pprof", "-top"])
        .arg(&file)
        // Where pprof keeps what it fetches: this test's directory.
        .env("PPROF_TMPDIR", &dir)
        .output()
        .expect("run go tool pprof");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "go tool pprof failed: {stderr}{stdout}"
    );
    assert!(stdout.contains("Type: delay"), "{stdout}");
    let mut rows = stdout
        .lines()
        .skip_while(|l| !l.trim_start().starts_with("flat"))
        .skip(1);
    let first = rows.next().unwrap_or_else(|| panic!("no rows: {stdout}"));
    assert_eq!(
        first.split_whitespace().last(),
        Some("long_worker"),
        "{stdout}"
    );
}

/// `KLOCKS_PROFILE=sigusr2`: the report a signal asks for, made in the handler, cannot
/// build the profile (that allocates), so it is one line saying so; the profile is
/// written at exit.
#[test]
fn a_signal_is_told_the_profile_comes_at_exit() {
    let dir = scratch("signal");
    let file = dir.join("signal.pb.gz");
    let run = profiled_binary(
        &common::compile("profile", false),
        &["signal"],
        &[
            ("KLOCKS_PROFILE", "sigusr2"),
            ("KLOCKS_PROFILE_FORMAT", "pprof"),
            ("KLOCKS_PROFILE_FILE", file.to_str().unwrap()),
        ],
    );
    let lines: Vec<&str> = run.stderr.lines().collect();
    assert_eq!(lines.len(), 2, "{}", run.stderr);
    assert_eq!(
        lines[0],
        "klocks: profile: KLOCKS_PROFILE_FORMAT=pprof is written only at exit, with memory to resolve its stacks; nothing written now"
    );
    let (contentions, _, path) = said(lines[1]);
    assert_eq!(path, file.to_str().unwrap());
    let profile = decode(&file);
    assert_eq!(
        profile.sample.iter().map(|s| s.value[0]).sum::<i64>(),
        contentions
    );
}
