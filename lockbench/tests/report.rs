//! `lockbench report` and `lockbench compare` on committed fixtures.
//!
//! The report test reads the SVG back as a user's eye would: the axes' tick labels
//! give the mapping from values to pixels, the legend gives each lock's colour, and
//! every finished cell of the fixture must be a dot of its lock's colour at its
//! threads and median; every unfinished cell a DNF mark.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use regex::Regex;
use serde_json::Value;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

fn lockbench(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_lockbench"))
        .args(args)
        .output()
        .expect("lockbench starts")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn scratch(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("{name}-{}", std::process::id()))
}

/// The report of the fixture, written once per test into its own directory.
fn report(name: &str) -> PathBuf {
    report_of(name, "report.json")
}

/// The report of fixture `file`, written into its own directory for test `name`.
fn report_of(name: &str, file: &str) -> PathBuf {
    let dir = scratch(name);
    let fixture = fixture(file);
    let out = lockbench(&[
        "report",
        fixture.to_str().unwrap(),
        "-o",
        dir.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains("index.html"),
        "{}",
        text(&out.stdout)
    );
    dir
}

fn cells() -> Vec<Value> {
    let json: Value =
        serde_json::from_str(&std::fs::read_to_string(fixture("report.json")).unwrap()).unwrap();
    json["cells"].as_array().unwrap().clone()
}

/// A tick label or a value: `2.5M` → 2.5e6.
fn parse_number(label: &str) -> Option<f64> {
    let (digits, scale) = match label.chars().last()? {
        'k' => (&label[..label.len() - 1], 1e3),
        'M' => (&label[..label.len() - 1], 1e6),
        'G' => (&label[..label.len() - 1], 1e9),
        _ => (label, 1.0),
    };
    digits.parse::<f64>().ok().map(|v| v * scale)
}

/// One axis read back from its tick labels: value ↦ pixel, linear or log.
struct Axis {
    ticks: Vec<(f64, f64)>,
    log: bool,
}

impl Axis {
    /// From (value, pixel) ticks: log if a linear fit through the outer two ticks
    /// misses an inner one.
    fn from_ticks(mut ticks: Vec<(f64, f64)>) -> Self {
        ticks.sort_by(|a, b| a.1.total_cmp(&b.1));
        ticks.dedup_by(|a, b| a.1 == b.1);
        assert!(
            ticks.len() >= 3,
            "an axis needs three ticks to be read: {ticks:?}"
        );
        let linear = Axis {
            ticks: ticks.clone(),
            log: false,
        };
        let log = Axis { ticks, log: true };
        let misses = |axis: &Axis| {
            axis.ticks
                .iter()
                .map(|&(v, px)| (axis.pixel(v) - px).abs())
                .fold(0.0, f64::max)
        };
        if misses(&linear) <= 1.0 {
            linear
        } else {
            assert!(
                misses(&log) <= 1.0,
                "ticks neither linear nor log: {:?}",
                log.ticks
            );
            log
        }
    }

    fn scale(&self, v: f64) -> f64 {
        if self.log {
            v.log10()
        } else {
            v
        }
    }

    /// The pixel of a value, through the outermost ticks.
    fn pixel(&self, value: f64) -> f64 {
        let (first, last) = (self.ticks[0], self.ticks[self.ticks.len() - 1]);
        let share =
            (self.scale(value) - self.scale(first.0)) / (self.scale(last.0) - self.scale(first.0));
        first.1 + share * (last.1 - first.1)
    }
}

/// The parts of a chart the test reads.
struct Chart {
    x: Axis,
    y: Axis,
    /// (cx, cy, fill) of every dot.
    dots: Vec<(f64, f64, String)>,
    /// Lock name → its colour, from the legend.
    colors: HashMap<String, String>,
    /// DNF marks: how many cells each says did not finish.
    marks: Vec<usize>,
}

fn read_chart(svg: &str) -> Chart {
    let texts = Regex::new(r##"<text x="(-?\d+)" y="(-?\d+)" dy="([^"]+)" text-anchor="(\w+)"[^>]*>\s*([^<]*?)\s*</text>"##).unwrap();
    let circles =
        Regex::new(r##"<circle cx="(-?\d+)" cy="(-?\d+)" r="3"[^>]*fill="(#[0-9A-F]{6})""##)
            .unwrap();
    let mut x_ticks = Vec::new();
    let mut y_ticks = Vec::new();
    let mut names = Vec::new();
    let mut marks: Vec<usize> = Vec::new();
    for t in texts.captures_iter(svg) {
        let (px, py): (f64, f64) = (t[1].parse().unwrap(), t[2].parse().unwrap());
        let label = t[5].to_owned();
        let count = label
            .strip_prefix("DNF (")
            .and_then(|rest| rest.strip_suffix(')'))
            .and_then(|n| n.parse().ok());
        match (&t[4], parse_number(&label), count) {
            ("end", Some(value), _) => y_ticks.push((value, py)),
            ("middle", Some(value), _) => x_ticks.push((value, px)),
            ("start", _, Some(count)) => marks.push(count),
            ("start", _, None) => names.push((label, px, py)),
            _ => {}
        }
    }
    let dots: Vec<(f64, f64, String)> = circles
        .captures_iter(svg)
        .map(|c| {
            (
                c[1].parse().unwrap(),
                c[2].parse().unwrap(),
                c[3].to_owned(),
            )
        })
        .collect();
    // A legend row: a dot 7 px below the top of its name, left of it.
    let colors = names
        .into_iter()
        .filter_map(|(name, px, py)| {
            let dot = dots.iter().find(|d| d.1 == py + 7.0 && d.0 < px)?;
            Some((name, dot.2.clone()))
        })
        .collect();
    Chart {
        x: Axis::from_ticks(x_ticks),
        y: Axis::from_ticks(y_ticks),
        dots,
        colors,
        marks,
    }
}

fn svg(dir: &Path, id: &str) -> String {
    std::fs::read_to_string(dir.join(format!("{id}.svg")))
        .unwrap_or_else(|err| panic!("{id}.svg: {err}"))
}

/// Every cell of `scenario` in the chart `id`: a dot at (threads, value) in its lock's
/// colour, or a DNF mark.
fn check_lines(dir: &Path, id: &str, scenario: &str, value: impl Fn(&Value) -> Option<f64>) {
    let chart = read_chart(&svg(dir, id));
    let mut unfinished = 0;
    for cell in cells().iter().filter(|c| c["scenario"] == scenario) {
        let lock = label(cell["lock"].as_str().unwrap());
        let Some(v) = value(cell) else {
            unfinished += 1;
            continue;
        };
        let threads = cell["threads"].as_f64().unwrap();
        let color = chart
            .colors
            .get(lock)
            .unwrap_or_else(|| panic!("{id}: {lock} is not in the legend"));
        let (px, py) = (chart.x.pixel(threads), chart.y.pixel(v));
        let found = chart.dots.iter().any(|(cx, cy, fill)| {
            fill == color && (cx - px).abs() <= 1.0 && (cy - py).abs() <= 1.5
        });
        assert!(
            found,
            "{id}: no {lock} dot at {threads} threads, {v} (pixel {px:.1}, {py:.1})"
        );
    }
    let marked: usize = chart.marks.iter().sum();
    assert_eq!(marked, unfinished, "{id}: DNF marks");
}

/// A lock's name in a chart: the default locks as users know them, and glibc's under
/// their current names (the fixtures predate them: `pthread` reads as `glibc`).
fn label(lock: &str) -> &str {
    match lock {
        "default" => "klocks::Mutex",
        "default-rw" => "klocks::RwLock",
        "pthread" => "glibc",
        "pthread-adaptive" => "glibc-adaptive",
        "pthread-rw" => "glibc-rw",
        "pthread-rw-writer" => "glibc-rw-writer",
        other => other,
    }
}

fn median(cell: &Value) -> Option<f64> {
    cell["summary"]["median"].as_f64()
}

#[test]
fn every_cell_is_drawn_where_its_value_is() {
    let dir = report("report-values");
    check_lines(&dir, "loop", "loop", median);
    check_lines(&dir, "mutex-load-10-pauses", "mutex-load", median);
    // Fairness: the median over runs of min ÷ mean.
    check_lines(
        &dir,
        "mutex-load-10-pauses-fairness",
        "mutex-load",
        |cell| {
            let mut ratios: Vec<f64> = cell["runs"]
                .as_array()?
                .iter()
                .map(|run| {
                    run["per_thread"]["min"].as_f64().unwrap()
                        / run["per_thread"]["mean"].as_f64().unwrap()
                })
                .collect();
            ratios.sort_by(f64::total_cmp);
            Some(ratios[ratios.len() / 2])
        },
    );
}

#[test]
fn unfinished_cells_are_marked_not_dropped() {
    let dir = report("report-dnf");
    let loop_svg = svg(&dir, "loop");
    assert_eq!(read_chart(&loop_svg).marks, [1]);
    assert!(
        loop_svg.contains("did not finish"),
        "the legend explains the mark"
    );
    // Two locks that did not finish at one thread count: one mark listing both.
    let mut json: Value =
        serde_json::from_str(&std::fs::read_to_string(fixture("report.json")).unwrap()).unwrap();
    for cell in json["cells"].as_array_mut().unwrap() {
        if cell["scenario"] == "loop" && cell["threads"] == 4 {
            cell["summary"] = Value::Null;
            cell["unfinished"] = serde_json::json!({
                "reason": "capped", "progress": 0.5, "after_secs": 1.0,
            });
        }
    }
    let file = scratch("report-dnf-two.json");
    std::fs::write(&file, json.to_string()).unwrap();
    let dir = scratch("report-dnf-two");
    let out = lockbench(&[
        "report",
        file.to_str().unwrap(),
        "-o",
        dir.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(
        read_chart(&svg(&dir, "loop")).marks,
        [2],
        "one mark per thread count"
    );
    let html = std::fs::read_to_string(dir.join("index.html")).unwrap();
    assert!(
        html.contains("did not finish (DNF): 4 threads: std, klocks::Mutex"),
        "the page lists them: {html}"
    );
}

/// A scenario measured at one thread count is drawn as bars, not as dots over each
/// other at one x.
#[test]
fn a_single_thread_count_is_drawn_as_bars() {
    let mut json: Value =
        serde_json::from_str(&std::fs::read_to_string(fixture("report.json")).unwrap()).unwrap();
    let cells = json["cells"].as_array_mut().unwrap();
    cells.retain(|cell| cell["scenario"] != "loop" || cell["threads"] == 2);
    let file = scratch("report-one-x.json");
    std::fs::write(&file, json.to_string()).unwrap();
    let dir = scratch("report-one-x");
    let out = lockbench(&[
        "report",
        file.to_str().unwrap(),
        "-o",
        dir.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let chart = svg(&dir, "loop");
    let dots = Regex::new(r##"<circle cx="(-?\d+)" cy="(-?\d+)" r="3""##).unwrap();
    assert_eq!(dots.find_iter(&chart).count(), 0, "no dots: {chart}");
    assert!(chart.contains("ms, 2 threads (lower is better)"), "{chart}");
    for lock in ["klocks::Mutex", "std"] {
        assert!(chart.contains(lock), "no {lock} bar: {chart}");
    }
}

/// Two files: one chart per panel, both files drawn on it, the second dashed.
#[test]
fn two_files_are_drawn_over_each_other() {
    let fixture = fixture("report.json");
    let dir = scratch("report-overlay");
    let path = fixture.to_str().unwrap();
    let out = lockbench(&["report", path, path, "-o", dir.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let single = report("report-overlay-single");
    let count = |dir: &Path| std::fs::read_dir(dir).unwrap().count();
    assert_eq!(
        count(&dir),
        count(&single),
        "as many charts as one file has"
    );
    let chart = svg(&dir, "loop");
    for name in [
        "klocks::Mutex · A",
        "klocks::Mutex · B",
        "std · A",
        "std · B",
    ] {
        assert!(chart.contains(name), "no {name} in the legend: {chart}");
    }
    assert!(
        chart.contains("stroke-dasharray") || chart.matches("<polyline").count() > 4,
        "{chart}"
    );
    let html = std::fs::read_to_string(dir.join("index.html")).unwrap();
    assert!(html.contains("<h2>A against B</h2>"), "{html}");
}

#[test]
fn bars_end_at_their_values() {
    let dir = report("report-bars");
    let chart = svg(&dir, "uncontended");
    let ticks = Regex::new(r##"<text x="(-?\d+)" y="(-?\d+)" dy="0.76em" text-anchor="middle"[^>]*>\s*([0-9.]+[kMG]?)\s*</text>"##).unwrap();
    let x = Axis::from_ticks(
        ticks
            .captures_iter(&chart)
            .map(|t| (parse_number(&t[3]).unwrap(), t[1].parse().unwrap()))
            .collect(),
    );
    let rects = Regex::new(
        r##"<rect x="(\d+)" y="\d+" width="(\d+)" height="\d+" opacity="1" fill="#[0-9A-F]{6}""##,
    )
    .unwrap();
    let ends: Vec<f64> = rects
        .captures_iter(&chart)
        .map(|r| r[1].parse::<f64>().unwrap() + r[2].parse::<f64>().unwrap())
        .collect();
    for cell in cells().iter().filter(|c| c["scenario"] == "uncontended") {
        let want = x.pixel(median(cell).unwrap());
        assert!(
            ends.iter().any(|end| (end - want).abs() <= 1.5),
            "no bar of {} ends at {want:.1}: {ends:?}",
            cell["lock"]
        );
    }
}

#[test]
fn a_starved_role_reaches_the_left_edge() {
    let dir = report("report-ranges");
    let chart = svg(&dir, "rw-fair-2-2");
    for row in [
        "klocks::RwLock readers",
        "klocks::RwLock writers",
        "glibc-rw-writer readers",
        "glibc-rw-writer writers",
    ] {
        assert!(chart.contains(row), "rw-fair has no row {row}");
    }
    // The starved readers' span starts where the axis does, at zero.
    let spans =
        Regex::new(r##"<rect x="(\d+)" y="\d+" width="(\d+)" height="\d+" opacity="0.55""##)
            .unwrap();
    let starts: Vec<u32> = spans
        .captures_iter(&chart)
        .map(|s| s[1].parse().unwrap())
        .collect();
    let edge = starts.iter().min().copied().unwrap();
    assert_eq!(
        starts.iter().filter(|&&s| s == edge).count(),
        1,
        "one starved row: {starts:?}"
    );
}

#[test]
fn the_page_is_self_contained_and_names_its_machine_and_command() {
    let dir = report("report-page");
    let html = std::fs::read_to_string(dir.join("index.html")).unwrap();
    for external in ["http://", "https://", " src=", "@import", "url("] {
        assert!(!html.contains(external), "the page refers to {external}");
    }
    for fact in [
        "Test CPU",
        "Linux 6.18 x86_64",
        "lockbench loop --json fixture.json",
        "2026-11-25T12:00:00Z",
        "31.0 ns one-way",
    ] {
        assert!(html.contains(fact), "the page does not show {fact}");
    }
    assert_eq!(
        html.matches("<svg").count(),
        std::fs::read_dir(&dir).unwrap().count() - 1,
        "one inline chart per SVG file"
    );
    // c2c has no chart: a table.
    assert!(html.contains("<h3>c2c</h3>"));
}

/// The page opens with the run's summary, as the run printed it last: a line per
/// scenario in which klocks::Mutex ran beside a peer, with its verdict counts, the
/// geometric mean and the lowest cell. Made from the cells, so a file from before
/// runs stored their verdicts shows it too.
#[test]
fn the_page_opens_with_the_summary_of_every_scenario() {
    let dir = report_of("report-summary", "default-run.json");
    let file = fixture("default-run.json");
    let html = std::fs::read_to_string(dir.join("index.html")).unwrap();
    let summary = html
        .find("summary: klocks::Mutex and klocks::RwLock against the fastest")
        .expect("the page shows the summary");
    let first_chart = html.find("<svg").expect("the page draws charts");
    assert!(summary < first_chart, "the summary comes before the charts");
    for header in ["faster/≈/slower", "geometric mean", "lowest", "fairness"] {
        assert!(
            html.contains(&format!("<th>{header}</th>")),
            "no column {header}"
        );
    }
    let run: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    let scenarios: std::collections::BTreeSet<&str> = run["cells"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|cell| cell["lock"] == "default" && cell["scenario"] != "preload")
        .filter_map(|cell| cell["scenario"].as_str())
        .collect();
    assert!(scenarios.len() >= 3, "{scenarios:?}");
    for scenario in scenarios {
        assert!(
            html.contains(&format!("<tr><td>{scenario}</td><td>klocks::Mutex</td>")),
            "no summary line for {scenario}"
        );
    }
}

#[test]
fn a_file_that_is_not_a_result_is_refused() {
    let out = lockbench(&[
        "report",
        "Cargo.toml",
        "-o",
        scratch("report-bad").to_str().unwrap(),
    ]);
    assert_eq!(
        out.status.code(),
        Some(2),
        "a file that is not a result is an input error"
    );
    assert!(
        text(&out.stderr).contains("not a lockbench --json file"),
        "{}",
        text(&out.stderr)
    );
    let out = lockbench(&["report"]);
    assert_eq!(out.status.code(), Some(2), "no file is a usage error");
    let fixture = fixture("report.json");
    let out = lockbench(&["report", fixture.to_str().unwrap(), "--locks", "std"]);
    assert_eq!(
        out.status.code(),
        Some(2),
        "a measuring option is a usage error"
    );
    let out = lockbench(&[
        "compare",
        fixture.to_str().unwrap(),
        fixture.to_str().unwrap(),
        "--fail-on-regression",
        "ten",
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
}

/// A result file that is missing, or not JSON, or JSON that is not a result, is an
/// input error (exit 2) for `compare` as for `report`: status 1 is kept for the
/// regression `--fail-on-regression` finds, so that a script gating on it does not
/// read a typo in a path as a regression.
#[test]
fn an_unreadable_result_file_is_an_input_error() {
    let malformed = scratch("malformed.json");
    std::fs::write(&malformed, "{\"cells\": [").unwrap();
    let good = fixture("compare-a.json");
    let good = good.to_str().unwrap();
    for bad in [
        "no/such/run.json",
        malformed.to_str().unwrap(),
        "Cargo.toml",
    ] {
        for args in [
            vec!["compare", good, bad],
            vec!["compare", bad, good, "--fail-on-regression", "10"],
            vec![
                "report",
                good,
                bad,
                "-o",
                scratch("report-unreadable").to_str().unwrap(),
            ],
        ] {
            let out = lockbench(&args);
            assert_eq!(
                out.status.code(),
                Some(2),
                "{args:?}: {}",
                text(&out.stderr)
            );
            assert!(text(&out.stderr).contains("lockbench: "), "{args:?}");
        }
    }
}

// The compare fixtures: 13 cells (loop in wall ms, mutex-load in ops/s, one loop cell
// that did not finish), 5 runs each with log-normal noise of σ = 0.05, the median
// spread of the committed results' cells, 6 in the mutex-load row at 10 threads (as
// adaptive repetition gives a row: at 5 runs a side no single cell can fail among
// 12 after Holm's correction, whose first step asks p ≤ 2.5%/12 = 0.0021, while 5+5
// runs give at best 1/252 = 0.0040; 6+6 give 1/924). compare-a.json and
// compare-noise.json are drawn from the same distributions with different seeds (an
// A/A pair); compare-regression.json is compare-noise.json with mutex-load pthread ×
// 10 threads at 0.6× the throughput; compare-drift.json is it with every cell 1.3×
// slower (the machine, not a lock).

fn compare(b: &str, extra: &[&str]) -> Output {
    let (a, b) = (fixture("compare-a.json"), fixture(b));
    let mut args = vec!["compare", a.to_str().unwrap(), b.to_str().unwrap()];
    args.extend(extra);
    lockbench(&args)
}

#[test]
fn compare_the_same_file_finds_no_change() {
    let out = compare("compare-a.json", &["--fail-on-regression", "0"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout)
            .contains("13 cells in both: B 0 faster, 12 no clear difference, 0 slower"),
        "{}",
        text(&out.stdout)
    );
}

#[test]
fn an_a_a_pair_is_no_regression_directly_or_relative_to_a_lock() {
    for extra in [
        &[][..],
        &["--relative-to", "std"],
        &["--relative-to", "pthread"],
    ] {
        let mut args = vec!["--fail-on-regression", "5"];
        args.extend(extra);
        let out = compare("compare-noise.json", &args);
        let stdout = text(&out.stdout);
        assert!(
            out.status.success(),
            "{extra:?}: {stdout}{}",
            text(&out.stderr)
        );
        assert!(stdout.contains(" 0 faster, "), "{extra:?}: {stdout}");
        assert!(stdout.contains(", 0 slower, "), "{extra:?}: {stdout}");
        assert!(!stdout.contains("× slower"), "{extra:?}: {stdout}");
    }
}

#[test]
fn compare_flags_a_real_regression_and_fails_on_it() {
    let out = compare("compare-regression.json", &["--absolute"]);
    assert!(out.status.success(), "without a limit, only a report");
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains("B 0 faster, 11 no clear difference, 1 slower"),
        "{stdout}"
    );
    let slower = stdout
        .lines()
        .find(|l| l.contains("× slower ["))
        .expect("a slower row");
    assert!(
        slower.contains("mutex-load") && slower.contains("glibc") && slower.contains(" 10 "),
        "{slower}"
    );
    // Directly and relative to the other locks of the cell (the default).
    for extra in [&["--absolute"][..], &[]] {
        for limit in ["5", "10"] {
            let mut args = vec!["--fail-on-regression", limit];
            args.extend(extra);
            let out = compare("compare-regression.json", &args);
            assert_eq!(out.status.code(), Some(1), "{limit} {extra:?}");
            let stderr = text(&out.stderr);
            assert!(
                stderr.contains(&format!(
                    "1 cell(s) slower by more than {limit}% on their own (Holm over 12 cells): \
                     mutex-load 10 pauses glibc 10"
                )),
                "{stderr}"
            );
        }
    }
    let out = compare("compare-regression.json", &["--fail-on-regression", "100"]);
    assert!(out.status.success(), "a 0.6× cell is not 2× slower");
}

#[test]
fn compare_relative_to_a_lock_cancels_a_machine_that_drifted() {
    // Every cell 1.3× slower: the machine, not a lock.
    let out = compare(
        "compare-drift.json",
        &["--absolute", "--fail-on-regression", "10"],
    );
    assert_eq!(
        out.status.code(),
        Some(1),
        "the drift alone looks like regressions"
    );
    let out = compare(
        "compare-drift.json",
        &["--absolute", "--relative-to", "std"],
    );
    assert_eq!(
        out.status.code(),
        Some(2),
        "one way to remove the drift at a time"
    );
    let out = compare(
        "compare-drift.json",
        &["--relative-to", "default", "--fail-on-regression", "10"],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains("7 cells in both: B 0 faster, 7 no clear difference, 0 slower"),
        "{stdout}"
    );
    assert!(
        stdout.contains("6 shared cells left out: default's own, or a run has no finished default cell beside them"),
        "{stdout}"
    );
    // A real regression survives the division.
    let out = compare(
        "compare-regression.json",
        &["--relative-to", "default", "--fail-on-regression", "10"],
    );
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stdout));
    let out = compare("compare-drift.json", &["--relative-to", "no-such-lock"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
}
