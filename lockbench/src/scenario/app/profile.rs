//! `app --profile`: reading the preload's contention profile and printing it short.
//!
//! The program runs once under `KLOCKS_PROFILE=1 KLOCKS_PROFILE_FORMAT=json`, the
//! report going to a file. Its JSON Lines (written by klocks-ffi's
//! `preload/profile/report/json.rs`) are read here: the `profile` object (the run's
//! totals and the share of the threads' time spent waiting) and the `lock` objects
//! (one per listed lock: counts, name, site, the advice as text and, in `try`, the
//! setting it suggests) and the `site` objects (the sites of many or destroyed locks,
//! by their locks' total wait, each with its advice and `try` as a lock's: a lock
//! destroyed before exit is counted there only, and advised through its site).
//! `stack` objects are skipped. A program that
//! forks writes one report per process into the file, each opening with its
//! `profile` object; the one whose threads waited longest is shown.
//!
//! Printed: the headline (the share waited), the locks by wait time with their waits
//! counted, those listed only for being waited for most often, the sites, and the
//! advice. The
//! settings the advice suggests are what `--try` measures.

use serde::Deserialize;

use crate::cells::wrap;

/// The widest line printed; longer advice and headlines are wrapped, a site cut.
const COLUMNS: usize = 120;
/// The columns a lock's row takes before its site.
const ROW: usize = 89;
/// How much deeper than `wrap`'s own indent a continuation line goes.
const INDENT: usize = 4;

/// Below this share of the threads' time spent waiting for locks, the profile gives
/// no advice and `--try` runs no rounds (the preload's `NEGLIGIBLE_SHARE`).
pub const NEGLIGIBLE_SHARE: f64 = 0.01;

/// One process's report.
#[derive(Debug)]
pub struct Profile {
    pub run: Run,
    pub locks: Vec<Lock>,
    pub sites: Vec<Site>,
    /// How many processes wrote a report into the file.
    pub processes: usize,
}

/// The `profile` object: the run's totals.
#[derive(Debug, Deserialize)]
pub struct Run {
    pub pid: u32,
    pub program: Option<String>,
    pub elapsed_ns: u64,
    pub cpus: usize,
    pub wait_ns: f64,
    pub cpu_ns: f64,
    pub wait_share: f64,
    pub locks_seen: u64,
}

/// A `lock` object.
#[derive(Debug, Deserialize)]
pub struct Lock {
    /// By total wait; `None` for a lock listed only among the most often waited for.
    pub rank: Option<usize>,
    /// By number of waits, if in the top.
    pub waits_rank: Option<usize>,
    pub address: String,
    pub kind: String,
    pub symbol: Option<String>,
    pub wait_ns: f64,
    pub wait_share: f64,
    pub site: Option<Code>,
    pub holds: Vec<Hold>,
    pub advice: Option<String>,
    #[serde(rename = "try")]
    pub remedy: Option<Remedy>,
}

/// A `site` object: the locks made at one place, live and destroyed, summed, and
/// advised as one lock of those counts.
#[derive(Debug, Deserialize)]
pub struct Site {
    pub rank: usize,
    pub locks: u64,
    pub destroyed: u64,
    pub acquisitions: u64,
    pub contended: u64,
    pub wait_ns: f64,
    pub wait_share: f64,
    pub site: Option<Code>,
    pub advice: Option<String>,
    #[serde(rename = "try")]
    pub remedy: Option<Remedy>,
}

/// A place in the code.
#[derive(Debug, Deserialize)]
pub struct Code {
    pub address: String,
    pub function: Option<String>,
    pub file: Option<String>,
    pub line: Option<u32>,
    pub module: Option<String>,
    pub offset: Option<u64>,
}

/// One kind of hold of a lock (a mutex's, or an rwlock's reads or writes).
#[derive(Debug, Deserialize)]
pub struct Hold {
    pub acquisitions: u64,
    pub contended: u64,
}

/// The setting a lock's advice suggests: `variable=value`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Remedy {
    pub variable: String,
    pub value: String,
}

/// A line of the report, by its `type`.
#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "lowercase")]
enum Line {
    Profile(Run),
    Lock(Box<Lock>),
    Site(Site),
    #[serde(other)]
    Other,
}

/// Where a lock or site was initialised or first locked: file and line, else
/// function, else module and offset, else address.
fn place(code: Option<&Code>) -> String {
    let Some(code) = code else {
        return "?".to_owned();
    };
    match (&code.file, code.line, &code.function) {
        (Some(file), Some(line), Some(function)) => {
            let file = file.rsplit('/').next().unwrap_or(file);
            format!("{file}:{line} ({function})")
        }
        (Some(file), Some(line), None) => {
            format!("{}:{line}", file.rsplit('/').next().unwrap_or(file))
        }
        (_, _, Some(function)) => function.clone(),
        _ => match (&code.module, code.offset) {
            (Some(module), Some(offset)) => format!("{module}+{offset:#x}"),
            _ => code.address.clone(),
        },
    }
}

impl Lock {
    fn acquisitions(&self) -> u64 {
        self.holds.iter().map(|h| h.acquisitions).sum()
    }

    fn waits(&self) -> u64 {
        self.holds.iter().map(|h| h.contended).sum()
    }

    /// Its symbol, else its address.
    fn name(&self) -> &str {
        self.symbol.as_deref().unwrap_or(&self.address)
    }

    fn place(&self) -> String {
        place(self.site.as_ref())
    }
}

impl Profile {
    /// The report in `text` (JSON Lines); `Err` says what is wrong with it.
    pub fn parse(text: &str) -> Result<Profile, String> {
        let mut reports: Vec<(Run, Vec<Lock>, Vec<Site>)> = Vec::new();
        for (number, line) in text.lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            let parsed: Line = serde_json::from_str(line)
                .map_err(|e| format!("line {} of the profile: {e}: {line}", number + 1))?;
            match parsed {
                Line::Profile(run) => reports.push((run, Vec::new(), Vec::new())),
                Line::Lock(lock) => match reports.last_mut() {
                    Some((_, locks, _)) => locks.push(*lock),
                    None => return Err(format!("a lock before any profile line: {line}")),
                },
                Line::Site(site) => match reports.last_mut() {
                    Some((_, _, sites)) => sites.push(site),
                    None => return Err(format!("a site before any profile line: {line}")),
                },
                Line::Other => {}
            }
        }
        let processes = reports.len();
        let longest = reports
            .into_iter()
            .max_by(|(a, ..), (b, ..)| a.wait_ns.total_cmp(&b.wait_ns));
        let (run, locks, sites) = longest.ok_or("the profile is empty (did the program exit by `_exit` or a signal?)")?;
        Ok(Profile {
            run,
            locks,
            sites,
            processes,
        })
    }

    /// Whether locks cost too little for any setting to win back more.
    pub fn negligible(&self) -> bool {
        self.run.wait_share < NEGLIGIBLE_SHARE
    }

    /// The settings the advice suggests, each once, in the order of the locks, then
    /// of the sites.
    pub fn remedies(&self) -> Vec<Remedy> {
        let mut remedies: Vec<Remedy> = Vec::new();
        let of_locks = self.locks.iter().filter_map(|l| l.remedy.as_ref());
        let of_sites = self.sites.iter().filter_map(|s| s.remedy.as_ref());
        for remedy in of_locks.chain(of_sites) {
            if !remedies.contains(remedy) {
                remedies.push(remedy.clone());
            }
        }
        remedies
    }

    /// The report's lines: headline, the locks by wait time, those waited for most
    /// often beyond them, the sites, and the advice of the locks and of the sites.
    pub fn lines(&self) -> Vec<String> {
        let run = &self.run;
        let ms = |ns: f64| format!("{:.1} ms", ns / 1e6);
        let mut lines = vec![format!(
            "pid {} ({}), {} on {} CPUs{}",
            run.pid,
            run.program.as_deref().unwrap_or("?"),
            ms(run.elapsed_ns as f64),
            run.cpus,
            match self.processes {
                1 => String::new(),
                n => format!(" (the process that waited longest of the {n} profiled)"),
            }
        )];
        lines.push(format!(
            "threads spent {:.2}% of their time waiting for locks: {} waiting, {} on CPU",
            100.0 * run.wait_share,
            ms(run.wait_ns),
            ms(run.cpu_ns)
        ));
        if self.negligible() {
            lines.push(format!(
                "nothing to gain here: locks cost under {:.0}% of the threads' time, no other lock would win back more",
                100.0 * NEGLIGIBLE_SHARE
            ));
        }
        let row = |rank: String, lock: &Lock| {
            let acquired = lock.acquisitions();
            let waits = lock.waits();
            format!(
                "{rank:>4}  {:<24} {:<6} {:>11} {:>10} {:>5.1}% {:>11} {:>6.1}%  {}",
                truncate(lock.name(), 24),
                lock.kind,
                acquired,
                waits,
                100.0 * waits as f64 / acquired.max(1) as f64,
                ms(lock.wait_ns),
                100.0 * lock.wait_share,
                truncate(&lock.place(), COLUMNS - ROW)
            )
        };
        let header = format!(
            "{:>4}  {:<24} {:<6} {:>11} {:>17} {:>11} {:>7}  {}",
            "#", "lock", "kind", "acquired", "waited", "wait sum", "share", "site"
        );
        let by_time: Vec<&Lock> = self.locks.iter().filter(|l| l.rank.is_some()).collect();
        lines.push(format!(
            "the {} of {} locks that made threads wait longest (share: of all locks' wait):",
            by_time.len(),
            run.locks_seen
        ));
        lines.push(header);
        for lock in &by_time {
            lines.push(row(lock.rank.unwrap_or(0).to_string(), lock));
        }
        let often: Vec<&Lock> = self.locks.iter().filter(|l| l.rank.is_none()).collect();
        if !often.is_empty() {
            lines.push("most often waited for, beyond the list above (w#: rank by number of waits):".to_owned());
            for lock in often {
                let rank = lock.waits_rank.map_or("w?".to_owned(), |r| format!("w{r}"));
                lines.push(row(rank, lock));
            }
        }
        if !self.sites.is_empty() {
            lines.push(
                "sites of many or destroyed locks, by their locks' total wait (s#: rank among the sites):"
                    .to_owned(),
            );
            for site in &self.sites {
                lines.push(format!(
                    "{:>4}  {} locks ({} destroyed): {} acquired, {} waited, {} in all ({:.1}%), at {}",
                    format!("s{}", site.rank),
                    site.locks,
                    site.destroyed,
                    site.acquisitions,
                    site.contended,
                    ms(site.wait_ns),
                    100.0 * site.wait_share,
                    place(site.site.as_ref())
                ));
            }
        }
        let of_locks = by_time
            .iter()
            .filter_map(|l| Some((l.rank?.to_string(), l.advice.as_deref()?)));
        let of_sites = self
            .sites
            .iter()
            .filter_map(|s| Some((format!("s{}", s.rank), s.advice.as_deref()?)));
        let advised: Vec<_> = of_locks.chain(of_sites).collect();
        if !advised.is_empty() {
            lines.push(match self.sites.iter().any(|s| s.advice.is_some()) {
                true => "advice (s#: a site's, for its locks, live and destroyed, as one):".to_owned(),
                false => "advice:".to_owned(),
            });
            for (rank, advice) in advised {
                lines.push(format!("{rank:>4}  {advice}"));
            }
        }
        // Wrapped with the continuation lines under the text, not the rank.
        let mut wrapped = Vec::new();
        for line in lines {
            if line.chars().count() <= COLUMNS {
                wrapped.push(line);
                continue;
            }
            for (i, part) in wrap(&line, COLUMNS - INDENT).lines().enumerate() {
                match i {
                    0 => wrapped.push(part.to_owned()),
                    _ => wrapped.push(format!("{:INDENT$}{part}", "")),
                }
            }
        }
        wrapped
    }
}

/// `text` cut to `width` characters, its end marked.
fn truncate(text: &str, width: usize) -> String {
    if text.chars().count() <= width {
        return text.to_owned();
    }
    let kept: String = text.chars().take(width - 1).collect();
    format!("{kept}…")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Lines as the preload writes them (klocks-ffi's `report/json.rs`), a stack and a
    /// site among them; the CLI test `tests/app_profile.rs` reads a real one.
    const REPORT: &str = r#"{"type":"profile","pid":7,"program":"pairs","elapsed_ns":2000000000,"cpus":2,"wait_ns":500000000,"cpu_ns":1500000000,"wait_share":0.25,"locks_seen":3,"untracked_acquisitions":0}
{"type":"lock","rank":1,"waits_rank":2,"address":"0x10","kind":"mutex","symbol":"slow","symbol_offset":0,"wait_ns":400000000,"wait_share":0.8,"peak_waiters":1,"site":{"address":"0x1","function":"main","inlined_into":null,"file":"/src/pairs.c","line":12,"module":"pairs","offset":1},"site_is_init":true,"longest_wait_at":null,"holds":[{"held_as":"mutex","acquisitions":10,"contended":5,"wait_ns":400000000,"wait_max_ns":1,"timed_holds":5,"hold_ns":1,"hold_max_ns":1}],"other_stack_waits":0,"other_stack_wait_ns":0,"advice":"long holds: try KLOCKS_LOCK=default (unmeasured)","try":{"variable":"KLOCKS_LOCK","value":"default"}}
{"type":"stack","lock_rank":1,"lock":"0x10","waits":5,"wait_ns":4,"wait_max_ns":1,"frames":[]}
{"type":"lock","rank":null,"waits_rank":1,"address":"0x20","kind":"rwlock","symbol":null,"symbol_offset":null,"wait_ns":1000,"wait_share":0.2,"peak_waiters":1,"site":null,"site_is_init":false,"longest_wait_at":null,"holds":[{"held_as":"read","acquisitions":100,"contended":40,"wait_ns":500,"wait_max_ns":1,"timed_holds":0,"hold_ns":0,"hold_max_ns":0},{"held_as":"write","acquisitions":10,"contended":10,"wait_ns":500,"wait_max_ns":1,"timed_holds":0,"hold_ns":0,"hold_max_ns":0}],"other_stack_waits":0,"other_stack_wait_ns":0,"advice":"read-mostly: try KLOCKS_RWLOCK=default-rw","try":{"variable":"KLOCKS_RWLOCK","value":"default-rw"}}
{"type":"site","rank":1,"kind":"mutex","locks":2,"destroyed":2,"acquisitions":4,"contended":2,"wait_ns":10,"wait_share":0.1,"site":null,"site_is_init":true,"beyond_site_table":false,"advice":"holds of 30 µs: try KLOCKS_LOCK=futex (unmeasured)","try":{"variable":"KLOCKS_LOCK","value":"futex"}}
"#;

    #[test]
    fn a_report_is_read_and_printed_both_ways_ranked() {
        let profile = Profile::parse(REPORT).unwrap();
        assert_eq!(profile.processes, 1);
        assert!(!profile.negligible());
        assert_eq!(profile.locks.len(), 2);
        let lines = profile.lines();
        assert!(lines[1].starts_with("threads spent 25.00% of their time"), "{lines:#?}");
        let slow = lines.iter().find(|l| l.starts_with("   1  slow")).unwrap();
        assert!(slow.contains(" 5  50.0% ") && slow.ends_with("pairs.c:12 (main)"), "{slow}");
        let often = lines.iter().position(|l| l.starts_with("most often")).unwrap();
        assert!(lines[often + 1].starts_with("  w1  0x20"), "{lines:#?}");
        assert!(lines[often + 1].contains(" 110 ") && lines[often + 1].contains(" 50 "));
        let site = lines.iter().position(|l| l.starts_with("sites of many")).unwrap();
        assert!(lines[site + 1].starts_with("  s1  2 locks (2 destroyed): 4 acquired, 2 waited"));
        // The advice: the locks listed by wait time, then the sites (a destroyed
        // lock's is its site's).
        let advice = lines.iter().position(|l| l.starts_with("advice")).unwrap();
        assert_eq!(lines[advice + 1], "   1  long holds: try KLOCKS_LOCK=default (unmeasured)");
        assert_eq!(lines[advice + 2], "  s1  holds of 30 µs: try KLOCKS_LOCK=futex (unmeasured)");
        assert_eq!(lines.len(), advice + 3, "{lines:#?}");
        assert!(lines.iter().all(|l| l.chars().count() <= COLUMNS), "{lines:#?}");
        let remedies = profile.remedies();
        let values: Vec<&str> = remedies.iter().map(|r| r.value.as_str()).collect();
        assert_eq!(values, ["default", "default-rw", "futex"]);
    }

    #[test]
    fn of_several_processes_the_one_that_waited_longest_is_shown() {
        let quiet = r#"{"type":"profile","pid":8,"program":"sh","elapsed_ns":1,"cpus":2,"wait_ns":0,"cpu_ns":1,"wait_share":0.0,"locks_seen":0,"untracked_acquisitions":0}"#;
        let profile = Profile::parse(&format!("{quiet}\n{REPORT}{quiet}\n")).unwrap();
        assert_eq!((profile.processes, profile.run.pid), (3, 7));
        assert!(profile.lines()[0].contains("of the 3 profiled"));
        let alone = Profile::parse(quiet).unwrap();
        assert!(alone.negligible());
        assert!(alone.lines()[2].starts_with("nothing to gain here"));
    }

    #[test]
    fn a_broken_or_empty_report_is_an_error() {
        assert!(Profile::parse("").unwrap_err().contains("empty"));
        assert!(Profile::parse("{\"type\":\"profile\"}").unwrap_err().contains("line 1"));
        let lock = REPORT.lines().nth(1).unwrap();
        assert!(Profile::parse(lock).unwrap_err().contains("before any profile"));
    }
}
