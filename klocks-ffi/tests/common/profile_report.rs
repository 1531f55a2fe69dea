// Each test executable uses part of this module.
#![allow(dead_code)]

//! Running a program under the profile and reading its text report: shared by the
//! profile's test files.

use std::path::PathBuf;
use std::process::Command;

use crate::common;

pub fn profiled_binary(binary: &PathBuf, args: &[&str], env: &[(&str, &str)]) -> common::Run {
    let mode = args.first().copied().unwrap_or("");
    let mut command = Command::new(binary);
    command.args(args).env("LD_PRELOAD", common::library());
    for (var, _) in std::env::vars() {
        if var.starts_with("KLOCKS_") {
            command.env_remove(var);
        }
    }
    command.envs(env.iter().copied());
    let run = common::run(command);
    assert!(
        run.status.success(),
        "profile {mode} failed: {}",
        run.stderr
    );
    run
}

/// One lock's rows of a report.
#[derive(Debug, Default)]
pub struct Lock {
    pub rank: usize,
    /// (held as, acquired, waited) per row: one for a mutex, read and write for an
    /// rwlock.
    pub rows: Vec<(String, u64, u64)>,
    pub wait_ns: f64,
    /// The line under the rows: the lock's symbol, if any, and its site.
    pub place: String,
    pub site: String,
    /// Its contention points: each stack's line ("waited N times, ...") and frames.
    pub stacks: Vec<(String, Vec<String>)>,
    pub advice: String,
}

/// A duration as the report prints it ("70.5 ms").
pub fn ns(value: &str, unit: &str) -> f64 {
    let scale = match unit {
        "ns" => 1.0,
        "µs" => 1e3,
        "ms" => 1e6,
        "s" => 1e9,
        _ => panic!("unit {unit:?}"),
    };
    value.parse::<f64>().unwrap() * scale
}

/// The locks of the report in `text` (from its first line on).
pub fn parse(text: &str) -> Vec<Lock> {
    let mut locks: Vec<Lock> = Vec::new();
    let mut lines = text
        .lines()
        .skip_while(|l| !l.starts_with("klocks profile of pid"))
        .skip_while(|l| !l.starts_with("  #  lock"))
        .skip(1);
    for line in lines.by_ref() {
        if line.starts_with("holds:") {
            break;
        }
        let words: Vec<&str> = line.split_whitespace().collect();
        if words[0] != "rw" && words[0].parse::<usize>().is_err() {
            let lock = locks.last_mut().unwrap();
            if let Some(stack) = line.strip_prefix("     waited ") {
                lock.stacks.push((stack.to_string(), Vec::new()));
                continue;
            }
            if let (Some(frame), Some(stack)) =
                (line.strip_prefix("         "), lock.stacks.last_mut())
            {
                stack.1.push(frame.to_string());
                continue;
            }
            if line.starts_with("       ") {
                // The place line, wrapped.
                lock.place.push(' ');
            } else {
                lock.place.clear();
            }
            lock.place.push_str(line.trim());
            lock.site = lock.place.split(" at ").nth(1).unwrap_or("").to_string();
            continue;
        }
        let (rank, rest) = if words[0] == "rw" {
            (None, &words[..])
        } else {
            (Some(words[0].parse::<usize>().unwrap()), &words[2..])
        };
        let (held_as, rest) = if rest[0] == "rw" {
            (format!("rw {}", rest[1]), &rest[2..])
        } else {
            (rest[0].to_string(), &rest[1..])
        };
        let row = (held_as, rest[0].parse().unwrap(), rest[1].parse().unwrap());
        match rank {
            Some(rank) => locks.push(Lock {
                rank,
                rows: vec![row],
                wait_ns: ns(rest[3], rest[4]),
                ..Lock::default()
            }),
            None => {
                let lock = locks.last_mut().unwrap();
                lock.rows.push(row);
                lock.wait_ns += ns(rest[3], rest[4]);
            }
        }
    }
    // Advice: "  N  text", wrapped lines indented by 7.
    let mut advising = None;
    for line in lines {
        let rank = line
            .get(..3)
            .and_then(|r| r.trim().parse::<usize>().ok())
            .filter(|_| line[3..].starts_with("  "));
        if let Some(rank) = rank {
            locks[rank - 1].advice = line[5..].to_string();
            advising = Some(rank);
        } else if let (Some(rank), Some(more)) = (advising, line.strip_prefix("       ")) {
            let advice = &mut locks[rank - 1].advice;
            advice.push(' ');
            advice.push_str(more);
        } else {
            advising = None;
        }
    }
    locks
}

/// The report's line (its wrapped parts joined) about the site `site` in its by-site
/// summary.
pub fn site_line(text: &str, site: &str) -> String {
    let mut joined: Vec<String> = Vec::new();
    for line in text.lines() {
        match (line.strip_prefix("       "), joined.last_mut()) {
            (Some(more), Some(last)) if last.contains(" locks (") => {
                last.push(' ');
                last.push_str(more.trim_start());
            }
            _ => joined.push(line.to_string()),
        }
    }
    joined
        .into_iter()
        .find(|l| l.contains(" locks (") && l.contains(&format!(" at {site} ")))
        .unwrap_or_else(|| panic!("no site line for {site}: {text}"))
}

/// The advice line of the site ranked `rank` (`s1  ...`), its wrapped parts joined.
pub fn site_advice(text: &str, rank: usize) -> String {
    let prefix = format!("{:>3}  ", format!("s{rank}"));
    // The site's line in the list of sites starts alike: its advice is the last such
    // line (frames, deeper, are no continuation).
    let mut advice = None;
    for line in text.lines().skip_while(|l| !l.starts_with("holds:")) {
        if let Some(first) = line.strip_prefix(&prefix) {
            advice = Some(first.to_string());
        } else if let (Some(advice), Some(more)) = (advice.as_mut(), line.strip_prefix("       ")) {
            if !more.starts_with(' ') {
                advice.push(' ');
                advice.push_str(more);
            }
        }
    }
    advice.unwrap_or_else(|| panic!("no advice for site s{rank}: {text}"))
}
