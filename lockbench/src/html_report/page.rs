//! The report: one self-contained HTML page (inline SVG and CSS, nothing fetched) and
//! one SVG file per chart, from any number of result files.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use super::figures::{self, Colors, Figure};
use super::RunFile;
use crate::cells::Cell;
use crate::cells::{num, si};
use crate::verdict::{self, Settings, Tally, FAIRNESS};

/// What was written.
#[derive(Debug)]
pub struct Written {
    /// The page.
    pub index: PathBuf,
    /// The SVG files, one per chart.
    pub charts: Vec<PathBuf>,
}

/// Writes `index.html` and the charts of `files` into `dir` (created if needed).
pub fn write(files: &[RunFile], dir: &Path) -> Result<Written, String> {
    let io = |path: &Path, err: std::io::Error| format!("writing {}: {err}", path.display());
    std::fs::create_dir_all(dir).map_err(|err| io(dir, err))?;
    let (html, svgs) = render(files)?;
    let mut charts = Vec::new();
    for (name, svg) in svgs {
        let path = dir.join(name);
        std::fs::write(&path, svg).map_err(|err| io(&path, err))?;
        charts.push(path);
    }
    let index = dir.join("index.html");
    std::fs::write(&index, html).map_err(|err| io(&index, err))?;
    Ok(Written { index, charts })
}

/// The page of `files` and its charts, each as (file name, SVG document).
fn render(files: &[RunFile]) -> Result<(String, Vec<(String, String)>), String> {
    let colors = Colors::of(files);
    let mut html = String::new();
    head(&mut html, files);
    let mut charts = Vec::new();
    let mut keep = |figures: &[Figure], prefix: &str| {
        for figure in figures {
            charts.push((format!("{prefix}{}.svg", figure.id), figure.svg.clone()));
        }
    };
    if let [a, b] = files {
        // Two files: each one's verdicts, machine and tables, then one chart per
        // panel with both drawn over each other on one scale.
        for (index, file) in files.iter().enumerate() {
            section(&mut html, file, &[], &figures::letter(index).to_string());
        }
        let figures = figures::overlay(&[a, b], &colors)?;
        let _ = write!(
            html,
            "<h2>A against B</h2>\n<p>A = {} (solid lines), B = {} (dashed lines): each \
             chart draws both files on one scale.</p>\n{CHARTS_NOTE}",
            escape(&a.name()),
            escape(&b.name())
        );
        charts_div(&mut html, &figures, "");
        keep(&figures, "");
    } else {
        for (index, file) in files.iter().enumerate() {
            let figures = figures::figures(file, &colors)?;
            let prefix = match files.len() {
                1 => String::new(),
                _ => format!("{}-{}-", index + 1, stem(file)),
            };
            section(&mut html, file, &figures, &prefix);
            keep(&figures, &prefix);
        }
    }
    html.push_str("</body>\n</html>\n");
    Ok((html, charts))
}

fn stem(file: &RunFile) -> String {
    file.source
        .file_stem()
        .map_or("run".to_owned(), |s| s.to_string_lossy().into_owned())
}

const STYLE: &str = "body{font-family:sans-serif;margin:24px;color:#222;max-width:1440px}\
h1{font-size:22px}h2{font-size:18px;margin-top:36px;border-bottom:1px solid #ccc}\
code{background:#f4f4f4;padding:1px 4px}table{border-collapse:collapse;margin:8px 0}\
td,th{border:1px solid #ddd;padding:3px 8px;text-align:right;font-size:13px}\
td:first-child,th:first-child{text-align:left}.charts{display:flex;flex-wrap:wrap;gap:12px}\
figure{margin:0}figcaption{font-size:12px;color:#555}\
.headline{border-left:4px solid #1f77b4;background:#f3f8fc;padding:4px 16px;margin:12px 0}\
.headline .choice{font-size:18px;font-weight:bold}.headline li{margin:4px 0}";

fn head(html: &mut String, files: &[RunFile]) {
    let _ = write!(
        html,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <title>lockbench report</title>\n<style>{STYLE}</style>\n</head>\n<body>\n\
         <h1>lockbench report</h1>\n<p>{} result file{}.</p>\n",
        files.len(),
        if files.len() == 1 { "" } else { "s" }
    );
}

/// How to read the charts, above them.
const CHARTS_NOTE: &str = "<p>Each chart shows the median of its runs with their min–max as \
    error bars; where cells did not finish, one cross on the top edge per thread count, \
    marked DNF with their number, and the locks listed under the chart; a scenario \
    measured at one thread count is drawn as bars. Each chart names the command that \
    measured it.</p>\n";

/// A file's heading, command, verdicts, machine, charts (`prefix` before their file
/// names) and the tables of its scenarios without charts; `figures` empty in an
/// overlay, whose heading names the file's letter (`prefix` there).
fn section(html: &mut String, file: &RunFile, figures: &[Figure], prefix: &str) {
    let letter = match figures.is_empty() && prefix.len() == 1 {
        true => format!("{prefix}: "),
        false => String::new(),
    };
    let _ = write!(
        html,
        "<h2>{letter}{}</h2>\n<p><code>{}</code>{}</p>\n",
        escape(&file.name()),
        escape(&file.command_line()),
        file.date
            .as_deref()
            .map(|d| format!(" · measured {}", escape(d)))
            .unwrap_or_default()
    );
    headline(html, file);
    verdicts(html, file);
    machine(html, file);
    if !figures.is_empty() {
        html.push_str(CHARTS_NOTE);
        charts_div(html, figures, prefix);
    }
    for scenario in file.scenarios() {
        if !figures::charted(scenario) {
            cells_table(html, scenario, &file.cells);
        }
    }
}

/// The charts, each with its title and a link to its SVG file (`prefix` + its id).
fn charts_div(html: &mut String, figures: &[Figure], prefix: &str) {
    html.push_str("<div class=\"charts\">\n");
    for figure in figures {
        let unfinished = match figure.unfinished.as_str() {
            "" => String::new(),
            list => format!("<br>did not finish (DNF): {}", escape(list)),
        };
        let _ = writeln!(
            html,
            "<figure>{}<figcaption>{}: <a href=\"{prefix}{}.svg\">{prefix}{}.svg</a>{unfinished}</figcaption></figure>",
            inline(&figure.svg),
            escape(&figure.title),
            figure.id,
            figure.id
        );
    }
    html.push_str("</div>\n");
}

/// Which lock to use, then a sentence per lock of ours ([`crate::sentence`]), the
/// first thing a reader of the file sees; nothing where neither of ours ran beside a
/// peer.
fn headline(html: &mut String, file: &RunFile) {
    let lines = crate::sentence::lines(&file.cells);
    let Some((headline, sentences)) = lines.split_first() else {
        return;
    };
    let _ = writeln!(
        html,
        "<div class=\"headline\">\n<p class=\"choice\">{}</p>\n<ul>",
        escape(headline)
    );
    for sentence in sentences {
        let _ = writeln!(html, "<li>{}</li>", escape(sentence));
    }
    html.push_str("</ul>\n</div>\n");
}

/// The run's verdicts (klocks::Mutex and klocks::RwLock against the fastest peer of
/// each cell): the summary the run printed last, a line per scenario, made again from
/// the file's cells (so a file written before runs stored their verdicts has it too);
/// then every cell, as the run judged it. Nothing where neither of ours ran beside a
/// peer.
fn verdicts(html: &mut String, file: &RunFile) {
    if let Some(summary) = crate::cells::summary::table(&file.cells) {
        summary_table(html, &summary);
    }
    if file.verdicts.is_empty() {
        return;
    }
    let settings = Settings::default();
    let _ = write!(
        html,
        "<h3>klocks::Mutex and klocks::RwLock against the fastest of std, parking_lot and \
         glibc in each cell</h3>\n<table>\n<tr><th>scenario</th><th>lock</th><th>cell</th>\
         <th>best peer</th><th>ours ÷ best peer, as throughput ({:.0}% interval)</th>\
         <th>ours against the fairest peer, slowest thread ÷ mean</th></tr>\n",
        settings.confidence * 100.0
    );
    for v in &file.verdicts {
        let fairness = v.fairness_judgement.map_or_else(
            || "-".to_owned(),
            |j| crate::verdict::ratio_worded(&j, FAIRNESS),
        );
        let _ = writeln!(
            html,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            escape(&v.scenario),
            escape(verdict::label(&v.lock)),
            escape(&v.row),
            escape(&v.best_peer),
            escape(&crate::verdict::ratio(&v.judgement)),
            escape(&fairness)
        );
    }
    let tally = Tally::of(file.verdicts.iter().map(|v| &v.judgement));
    let _ = writeln!(
        html,
        "</table>\n<p>{}</p>",
        escape(&tally.note(settings)).replace('\n', "<br>")
    );
    let fair = Tally::of(
        file.verdicts
            .iter()
            .filter_map(|v| v.fairness_judgement.as_ref()),
    );
    if fair.judged() + fair.too_few_runs > 0 {
        let note = fair.note_worded(settings, FAIRNESS);
        let _ = writeln!(
            html,
            "<p>fairness {}</p>",
            escape(&note).replace('\n', "<br>")
        );
    }
}

/// The run's summary table (`cells::summary::table`), with its title and notes.
fn summary_table(html: &mut String, table: &crate::cells::Table) {
    let (title, headers, rows, notes) = table.parts();
    let _ = write!(
        html,
        "<h3>{}</h3>\n<table class=\"summary\">\n<tr>",
        escape(title)
    );
    for header in headers {
        let _ = write!(html, "<th>{}</th>", escape(header));
    }
    html.push_str("</tr>\n");
    for row in rows {
        html.push_str("<tr>");
        for entry in row {
            let _ = write!(html, "<td>{}</td>", escape(entry));
        }
        html.push_str("</tr>\n");
    }
    html.push_str("</table>\n");
    for note in notes {
        let _ = writeln!(html, "<p>{}</p>", escape(note).replace('\n', "<br>"));
    }
}

/// An SVG document as an element of an HTML page (which needs no namespace).
fn inline(svg: &str) -> String {
    svg.replacen(" xmlns=\"http://www.w3.org/2000/svg\"", "", 1)
}

/// The machine metadata, and what the machine did around the cells: the c2c
/// placements seen, the steal, the cells marked noisy.
fn machine(html: &mut String, file: &RunFile) {
    let m = &file.machine;
    let mut placements: BTreeMap<&str, usize> = BTreeMap::new();
    let (mut steal_ms, mut noisy, mut watched) = (0.0, 0, 0);
    for conditions in file.cells.iter().filter_map(|c| c.conditions.as_ref()) {
        watched += 1;
        steal_ms += conditions.steal_ms;
        noisy += usize::from(conditions.noisy);
        for placement in [&conditions.placement_before, &conditions.placement_after]
            .into_iter()
            .flatten()
        {
            *placements.entry(placement.name()).or_default() += 1;
        }
    }
    let c2c = file
        .cells
        .iter()
        .find(|c| c.scenario == "c2c")
        .and_then(|c| c.summary)
        .map(|s| format!("{} ns one-way; ", num(s.median)))
        .unwrap_or_default();
    let placement = if placements.is_empty() {
        format!("{c2c}not probed")
    } else {
        let seen: Vec<String> = placements
            .iter()
            .map(|(p, n)| format!("{p} {n}×"))
            .collect();
        format!("{c2c}probes around the cells: {}", seen.join(", "))
    };
    let rows = [
        ("CPU", m.cpu_model.clone()),
        ("online CPUs", m.online_cpus.to_string()),
        ("kernel", m.kernel.clone()),
        ("glibc", m.glibc.clone()),
        ("compiler", m.rustc.clone()),
        ("pause", format!("{} ns", num(m.pause_ns))),
        (
            "pv spin budget",
            format!(
                "{} µs ({})",
                num(m.pv_spin_ns as f64 / 1e3),
                m.pv_spin_source
            ),
        ),
        ("owner probe", m.owner_probe.clone()),
        ("c2c placement", placement),
        (
            "steal",
            format!(
                "{} ms over {watched} watched cells; {noisy} marked noisy",
                num(steal_ms)
            ),
        ),
    ];
    html.push_str("<table>\n");
    for (name, value) in rows {
        let _ = writeln!(html, "<tr><th>{name}</th><td>{}</td></tr>", escape(&value));
    }
    html.push_str("</table>\n");
}

/// A scenario without a chart, as a table of its cells.
fn cells_table(html: &mut String, scenario: &str, cells: &[Cell]) {
    let _ = write!(
        html,
        "<h3>{}</h3>\n<table>\n<tr><th>lock</th><th>threads</th><th>layout</th>\
         <th>median</th><th>min</th><th>max</th><th>unit</th></tr>\n",
        escape(scenario)
    );
    for cell in cells.iter().filter(|c| c.scenario == scenario) {
        let values = match (&cell.summary, &cell.unfinished) {
            (Some(s), None) => [si(s.median), si(s.min), si(s.max)],
            (_, Some(unfinished)) => [unfinished.short(), String::new(), String::new()],
            (None, None) => ["-".to_owned(), String::new(), String::new()],
        };
        let _ = writeln!(
            html,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            escape(cell.lock),
            cell.threads,
            escape(cell.layout.unwrap_or("")),
            values[0],
            values[1],
            values[2],
            escape(cell.unit)
        );
    }
    html.push_str("</table>\n");
}

/// Text for HTML.
fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_verdicts_come_first_when_the_file_has_them() {
        let machine = serde_json::json!({
            "cpu_model": "cpu", "online_cpus": 2, "kernel": "6.1", "glibc": "2.36",
            "rustc": "1.88", "pause_ns": 30.0, "pv_spin_ns": 20000, "owner_probe": "perf",
        });
        let judgement = serde_json::json!({
            "ratio": 0.8, "low": 0.75, "high": 0.86, "confidence": 0.968,
            "verdict": "slower", "runs_x": 5, "runs_y": 5,
        });
        let file = RunFile::of_run(serde_json::json!({
            "machine": machine.clone(), "command": ["lockbench"], "cells": [],
            "verdicts": [{
                "scenario": "loop", "lock": "default", "row": "threads 4",
                "best_peer": "std", "judgement": judgement,
            }, {
                "scenario": "overcommit", "lock": "default", "row": "threads 32",
                "best_peer": "std", "judgement": judgement,
                "fairness_judgement": judgement,
            }],
        }))
        .expect("a file with verdicts loads");
        let mut html = String::new();
        section(&mut html, &file, &[], "");
        let verdicts = html.find("<td>klocks::Mutex</td><td>threads 4</td><td>std</td>");
        let row = verdicts.unwrap_or_else(|| panic!("{html}"));
        assert!(
            html[row..].contains("slower 0.80× [0.75–0.86]</td><td>-</td>"),
            "{html}"
        );
        // A verdict on fairness, where the file has one, in the fairness words.
        assert!(
            html.contains("slower 0.80× [0.75–0.86]</td><td>less fair 0.80× [0.75–0.86]</td>"),
            "{html}"
        );
        assert!(
            html.contains("fairness verdicts: fairer/less fair"),
            "{html}"
        );
        assert!(
            row < html.find("<th>CPU</th>").expect("the machine"),
            "{html}"
        );
        let mut without = String::new();
        let file = RunFile::of_run(serde_json::json!({
            "machine": machine, "command": ["lockbench"], "cells": [],
        }))
        .expect("a file without verdicts loads");
        section(&mut without, &file, &[], "");
        assert!(!without.contains("klocks::Mutex"), "{without}");
    }

    /// A five-run cell of `lock` at about `ops` ops/s.
    fn cell(scenario: &'static str, lock: &'static str, threads: usize, ops: f64) -> Cell {
        let runs = [0.99, 1.0, 1.01, 0.995, 1.005]
            .iter()
            .map(|jitter| {
                crate::cells::Run::timed(ops * jitter, std::time::Duration::from_secs(1), 1)
            })
            .collect();
        let layout = (scenario == "rw-mix").then_some("99.9% reads");
        Cell::of_runs(scenario, lock, threads, layout, "ops/s", runs)
    }

    #[test]
    fn the_first_screen_says_which_lock_to_use() {
        let cells = vec![
            cell("loop", "default", 2, 87.0),
            cell("loop", "std", 2, 100.0),
            cell("loop", "default", 4, 101.0),
            cell("loop", "std", 4, 100.0),
            cell("rw-mix", "default-rw", 2, 120.0),
            cell("rw-mix", "parking_lot-rw", 2, 100.0),
        ];
        let file = RunFile {
            source: PathBuf::new(),
            machine: super::super::MachineInfo {
                cpu_model: "cpu".to_owned(),
                online_cpus: 2,
                kernel: "6.1".to_owned(),
                glibc: "2.36".to_owned(),
                rustc: "1.88".to_owned(),
                pause_ns: 30.0,
                pv_spin_ns: 20_000,
                pv_spin_source: "calibrated".to_owned(),
                owner_probe: "perf".to_owned(),
            },
            command: vec!["lockbench".to_owned()],
            date: None,
            verdicts: crate::cells::summary::versus(&cells)
                .into_iter()
                .map(|v| super::super::VerdictData {
                    scenario: v.scenario.to_owned(),
                    lock: v.lock.to_owned(),
                    row: v.row,
                    best_peer: v.best_peer.to_owned(),
                    judgement: v.judgement,
                    fairness_judgement: v.fairness_judgement,
                })
                .collect(),
            cells,
        };
        let (html, charts) = render(&[file]).expect("the page renders");
        assert!(!charts.is_empty());
        let at = |text: &str| html.find(text).unwrap_or_else(|| panic!("{text}: {html}"));
        let headline = at(
            "<p class=\"choice\">Which lock to use, from this run: klocks::Mutex; \
                           klocks::RwLock.</p>",
        );
        let mutex = at(
            "<li>klocks::Mutex: faster than the best peer in 0 of 2 cells, no clear \
                        difference in 1, slower in 1 (worst: 0.87× in loop, threads 2).</li>",
        );
        let rwlock = at("<li>klocks::RwLock: faster than the best peer in 1 of 1 cell");
        // Above every table and chart: the first thing after the file's heading.
        let first_table = at("<table");
        let first_chart = at("<svg");
        for sentence in [headline, mutex, rwlock] {
            assert!(sentence < first_table && sentence < first_chart, "{html}");
        }
        // One convention everywhere: ours ÷ the best peer, the estimate beside every
        // interval, never a factor turned around.
        assert!(html.contains("slower 0.87× ["), "{html}");
        assert!(html.contains("≈ 1.01× ["), "{html}");
        assert!(
            !html.contains("× slower") && !html.contains("× faster"),
            "{html}"
        );
        assert!(!html.contains("≈ ["), "{html}");
    }
}
