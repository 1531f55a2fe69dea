//! The contention profile's contention points and output formats
//! (`tests/c/contention.c`: a global lock, one on the heap and one made per request,
//! each waited for in its own function): the report ranks them, names the global,
//! shows the waiting function in each lock's stacks and agrees with the program's own
//! measure of its waits, in text, JSON lines and folded stacks; a condvar's
//! re-acquisition of its mutex is a timed wait where klocks runs the condvar; the
//! stack walk never allocates (the program aborts if it does).

mod common;
#[path = "common/profile_report.rs"]
mod profile_report;

use std::path::PathBuf;
use std::sync::OnceLock;

use profile_report::{ns, parse, profiled_binary, site_line};

/// `tests/c/contention.c`: three hot locks (a global, one on the heap, one per request
/// made and destroyed) waited for in known functions.
fn contention() -> &'static PathBuf {
    static BINARY: OnceLock<PathBuf> = OnceLock::new();
    BINARY.get_or_init(|| common::compile("contention", false))
}

/// The line of `tests/c/contention.c` marked `SITE:<name>`.
fn contention_site(name: &str) -> String {
    let source = include_str!("c/contention.c");
    let marker = format!("/* SITE:{name} */");
    let line = source
        .lines()
        .position(|l| l.contains(&marker))
        .unwrap_or_else(|| panic!("no {marker} in contention.c"));
    format!("contention.c:{}", line + 1)
}

/// `contention` under the profile with `format`, glibc's locks.
fn contention_run(format: &str) -> common::Run {
    profiled_binary(
        contention(),
        &[],
        &[("KLOCKS_PROFILE", "1"), ("KLOCKS_PROFILE_FORMAT", format)],
    )
}

/// What the program measured of its own waits: global, heap, request, in ns.
fn measured(run: &common::Run) -> [f64; 3] {
    ["global", "heap", "request"].map(|name| {
        run.stdout
            .lines()
            .find_map(|l| l.strip_prefix(&format!("measured {name} ")))
            .and_then(|ns| ns.parse().ok())
            .unwrap_or_else(|| panic!("no measured {name}: {}", run.stdout))
    })
}

/// The text report ranks the global lock (180 ms of waits) above the heap lock (60 ms)
/// above the per-request locks' site (20 ms), names the global, and shows under each
/// the stack its waits came from, the waiting function first.
#[test]
fn three_hot_locks_are_ranked_and_their_waits_placed_in_stacks() {
    let run = contention_run("text");
    let locks = parse(&run.stderr);
    assert_eq!(locks.len(), 2, "{}", run.stderr);
    let (global, heap) = (&locks[0], &locks[1]);
    assert!(
        global.place.starts_with("lock global_lock, "),
        "{global:#?}"
    );
    assert!(
        heap.place.starts_with(&format!(
            "initialised at {} (main)",
            contention_site("heap")
        )),
        "{heap:#?}"
    );
    assert_eq!(global.rows, [("mutex".into(), 40, 20)], "{}", run.stderr);
    assert_eq!(heap.rows, [("mutex".into(), 40, 20)], "{}", run.stderr);
    let request = site_line(&run.stderr, &contention_site("request"));
    assert!(
        request.contains("20 locks (20 destroyed): 40 acquired, 20 waited, "),
        "{request}"
    );
    let words: Vec<&str> = request.split_whitespace().collect();
    let at = words.iter().position(|&w| w == "waiting").unwrap();
    let request_wait = ns(words[at - 2], words[at - 1]);
    assert!(
        global.wait_ns > heap.wait_ns && heap.wait_ns > request_wait,
        "not ranked global > heap > request: {}",
        run.stderr
    );
    let wait = contention_site("wait");
    for (lock, function) in [(global, "serve_global"), (heap, "serve_heap")] {
        assert_eq!(lock.stacks.len(), 1, "{lock:#?}");
        let (counts, frames) = &lock.stacks[0];
        assert!(counts.starts_with("20 times, "), "{lock:#?}");
        assert_eq!(
            frames[0],
            format!("{wait} (timed_lock inlined in {function})"),
            "{lock:#?}"
        );
        assert!(frames[1].ends_with("(waiter)"), "{lock:#?}");
    }
    assert!(
        run.stderr.contains(&format!(
            "\n         {wait} (timed_lock inlined in serve_request)\n"
        )),
        "{}",
        run.stderr
    );
    for line in run.stderr.lines() {
        assert!(
            line.chars().count() <= 120,
            "wider than 120 columns: {line}"
        );
    }
}

/// `KLOCKS_PROFILE_FORMAT=json`: every line is a JSON object (the run, each lock, each
/// site, each stack); the locks are ranked and named as in the text, each stack's
/// frames name the waiting function, and the waits agree with what the program
/// measured of its own: the profile's is at most the program's (it is timed inside
/// the program's timing; 1% for the two clocks' calibration) and within 5% + 2 ms
/// of it.
#[test]
fn json_has_an_object_per_lock_and_stack_and_waits_agree_with_the_programs() {
    let run = contention_run("JSON");
    let objects: Vec<serde_json::Value> = run
        .stderr
        .lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}")))
        .collect();
    let of_type = |kind: &str| {
        objects
            .iter()
            .filter(|o| o["type"] == kind)
            .collect::<Vec<_>>()
    };
    assert_eq!(of_type("profile").len(), 1, "{}", run.stderr);
    assert_eq!(objects[0]["type"], "profile");
    assert_eq!(objects[0]["untracked_acquisitions"], 0);
    let locks = of_type("lock");
    assert_eq!(locks.len(), 2, "{}", run.stderr);
    assert_eq!(locks[0]["symbol"], "global_lock");
    assert!(locks[1]["symbol"].is_null());
    assert_eq!(locks[1]["site"]["function"], "main");
    assert_eq!(
        format!("contention.c:{}", locks[1]["site"]["line"]),
        contention_site("heap")
    );
    let sites = of_type("site");
    assert_eq!(sites[0]["destroyed"], 20, "{}", run.stderr);
    assert_eq!(
        format!("contention.c:{}", sites[0]["site"]["line"]),
        contention_site("request")
    );
    let stacks = of_type("stack");
    let stack_of = |owner: &str, rank: u64| {
        let found: Vec<_> = stacks.iter().filter(|s| s[owner] == rank).collect();
        assert_eq!(found.len(), 1, "{owner} {rank}: {}", run.stderr);
        found[0]
    };
    let wait_line: u64 = contention_site("wait")[13..].parse().unwrap();
    for (stack, function) in [
        (stack_of("lock_rank", 1), "serve_global"),
        (stack_of("lock_rank", 2), "serve_heap"),
        (stack_of("site_rank", 1), "serve_request"),
    ] {
        assert_eq!(stack["waits"], 20, "{stack}");
        let frame = &stack["frames"][0];
        assert_eq!(frame["function"], "timed_lock", "{stack}");
        assert_eq!(frame["inlined_into"], function, "{stack}");
        assert_eq!(frame["line"], wait_line, "{stack}");
        assert_eq!(stack["frames"][1]["function"], "waiter", "{stack}");
    }
    let profiled = [
        locks[0]["wait_ns"].as_f64().unwrap(),
        locks[1]["wait_ns"].as_f64().unwrap(),
        sites[0]["wait_ns"].as_f64().unwrap(),
    ];
    for (profiled, measured) in profiled.into_iter().zip(measured(&run)) {
        assert!(
            profiled <= 1.01 * measured && measured - profiled <= 0.05 * measured + 2e6,
            "profiled {profiled} ns, the program measured {measured} ns"
        );
    }
}

/// `KLOCKS_PROFILE_FORMAT=folded`: `frame;...;frame wait_ns` lines, outermost caller
/// first, the lock last, one per stack.
#[test]
fn folded_lines_are_stacks_and_a_wait() {
    let run = contention_run("folded");
    let mut ends = Vec::new();
    for line in run.stderr.lines() {
        let (stack, wait) = line
            .rsplit_once(' ')
            .unwrap_or_else(|| panic!("no count: {line}"));
        assert!(wait.parse::<u64>().is_ok_and(|ns| ns > 0), "{line}");
        let frames: Vec<&str> = stack.split(';').collect();
        assert!(
            frames.len() >= 4 && frames.iter().all(|f| !f.is_empty()),
            "{line}"
        );
        assert!(frames.last().unwrap().starts_with('['), "{line}");
        ends.push(frames[frames.len() - 4..].join(";"));
    }
    for expected in [
        "waiter;serve_global;timed_lock;[lock global_lock]",
        "waiter;serve_request;timed_lock;[destroyed lock from main]",
    ] {
        assert!(
            ends.iter().any(|e| e == expected),
            "{expected}: {}",
            run.stderr
        );
    }
    assert!(
        ends.iter()
            .any(|e| e.starts_with("waiter;serve_heap;timed_lock;[lock 0x")),
        "{}",
        run.stderr
    );
    assert_eq!(ends.len(), 3, "{}", run.stderr);
}

/// `KLOCKS_PROFILE_FORMAT` is read as `KLOCKS_LOCK` is: a misspelling gets one line
/// with the nearest name and the report is text; empty is unset.
#[test]
fn a_bad_format_is_said_once_and_the_report_is_text() {
    let run = contention_run(" jsn ");
    assert!(
        run.said().starts_with(
            "klocks: KLOCKS_PROFILE_FORMAT=\"jsn\" is not a report format; did you mean `json`? (use text, json, folded or pprof); writing text\nklocks profile of pid"
        ),
        "{}",
        run.stderr
    );
    let run = contention_run("");
    assert!(
        run.stderr.starts_with("klocks profile of pid"),
        "{}",
        run.stderr
    );
}

/// The mutex's re-acquisition after a condvar wait (`contention cond`: 10 times the
/// woken thread waits for the mutex its signaller holds 10 ms more): timed as a wait
/// for the lock where klocks runs the condvar, its stack starting at the program's
/// `pthread_cond_wait` call; counted, untimed, where glibc runs it (inside glibc).
#[test]
fn a_condvar_reacquisition_is_a_timed_wait_where_klocks_runs_the_condvar() {
    let cond_lock = |lock: &str| {
        let mut env = vec![("KLOCKS_PROFILE", "1"), ("KLOCKS_PROFILE_FORMAT", "json")];
        if !lock.is_empty() {
            env.push(("KLOCKS_LOCK", lock));
        }
        let run = profiled_binary(contention(), &["cond"], &env);
        let objects: Vec<serde_json::Value> = run
            .stderr
            .lines()
            .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}")))
            .collect();
        let lock = objects
            .iter()
            .find(|o| o["type"] == "lock" && o["symbol"] == "cond_lock")
            .unwrap_or_else(|| panic!("no cond_lock: {}", run.stderr))
            .clone();
        (lock, objects)
    };
    let (timed, objects) = cond_lock("default");
    let holds = &timed["holds"][0];
    assert!(holds["contended"].as_u64().unwrap() >= 10, "{timed}");
    assert!(timed["wait_ns"].as_f64().unwrap() >= 50e6, "{timed}");
    let stack = objects
        .iter()
        .find(|o| o["type"] == "stack" && o["lock"] == timed["address"])
        .unwrap();
    assert_eq!(stack["frames"][0]["function"], "cond_waiter", "{stack}");
    assert_eq!(
        timed["longest_wait_at"]["function"], "cond_waiter",
        "{timed}"
    );
    let (untimed, _) = cond_lock("");
    assert!(
        untimed["holds"][0]["acquisitions"].as_u64().unwrap() >= 30,
        "{untimed}"
    );
    assert!(untimed["wait_ns"].as_f64().unwrap() < 25e6, "{untimed}");
}
