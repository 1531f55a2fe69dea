//! `KLOCKS_PROFILE_FORMAT=json`: the report as JSON Lines, one object a line, each
//! with a `type`: `profile` (the run: time, CPUs, all locks' wait and its share of the
//! threads' time, untracked acquisitions), then per listed lock a `lock` (its counts
//! per kind of hold, name, sites, its `rank` by wait time and `waits_rank` by number
//! of waits, each `null` beyond the top, its suggestion as text in `advice` and the
//! setting it suggests in `try`: `{"variable":"KLOCKS_LOCK","value":"default"}` or
//! `null`) followed by its `stack`s; the locks by wait time first, then those of the
//! "most often waited for" list (`rank` `null`); then per
//! site of many or destroyed locks a `site` (its `rank`, `kind`, counts, `advice`
//! and `try` as a lock's, for its locks as one) followed by its destroyed locks'
//! `stack`s. Times are whole nanoseconds; a place in the code is an object with its
//! `address` and, in the report at exit, its `function` (the innermost inlined one),
//! `inlined_into`, `file`, `line`, `module` and `offset` (`null` where unknown). One object a line, so a reader can stream it
//! and a report appended to a file stays parseable line by line.
//!
//! Written by hand, as the text is, into the same fixed buffers: the `SIGUSR2` report
//! must not allocate, so no JSON value tree is built.

use std::fmt::{self, Write};
use std::sync::atomic::Ordering::Relaxed;

use super::super::advice::{advise, Remedy, Shape};
use super::super::stacks::Stacks;
use super::super::table::sites;
use super::super::table::Counters;
use super::out::Out;
use super::summary::{
    lock_shape, program, site_shape, total_wait, Row, Sites, Summary, NEGLIGIBLE_SHARE,
};
use super::symbols;

/// Writes text as the inside of a JSON string: quotes, backslashes and control
/// characters escaped.
struct Escaped<'a>(&'a mut Out);

impl Write for Escaped<'_> {
    fn write_str(&mut self, text: &str) -> fmt::Result {
        for c in text.chars() {
            match c {
                '"' => self.0.write_str("\\\"")?,
                '\\' => self.0.write_str("\\\\")?,
                c if (c as u32) < 0x20 => write!(self.0, "\\u{:04x}", c as u32)?,
                c => self.0.write_char(c)?,
            }
        }
        Ok(())
    }
}

/// A JSON string, or `null` when empty.
fn string(out: &mut Out, text: &str) -> fmt::Result {
    if text.is_empty() {
        return out.write_str("null");
    }
    out.write_char('"')?;
    Escaped(out).write_str(text)?;
    out.write_char('"')
}

/// A place in the code (a return address): see the module doc.
fn code(out: &mut Out, address: usize, sites: Sites) -> fmt::Result {
    write!(out, "{{\"address\":\"{address:#x}\"")?;
    if sites == Sites::Resolved && address != 0 {
        let code = symbols::resolve(address);
        out.write_str(",\"function\":")?;
        string(out, code.function.as_str())?;
        out.write_str(",\"inlined_into\":")?;
        string(out, code.inlined_into.as_str())?;
        out.write_str(",\"file\":")?;
        string(out, code.file.as_str())?;
        match code.line {
            0 => out.write_str(",\"line\":null")?,
            line => write!(out, ",\"line\":{line}")?,
        }
        out.write_str(",\"module\":")?;
        string(out, code.module.as_str())?;
        match code.module.len {
            0 => out.write_str(",\"offset\":null")?,
            _ => write!(out, ",\"offset\":{}", code.offset)?,
        }
    }
    out.write_char('}')
}

/// `"name":{code}`, or `"name":null` for an unknown place.
fn code_field(out: &mut Out, name: &str, address: usize, sites: Sites) -> fmt::Result {
    write!(out, ",\"{name}\":")?;
    match address {
        0 => out.write_str("null"),
        _ => code(out, address, sites),
    }
}

/// One `stack` object per stack kept; `owner` is the fields naming whose they are.
fn stacks(
    out: &mut Out,
    stacks: &Stacks,
    owner: fmt::Arguments<'_>,
    summary: &Summary,
    sites: Sites,
) -> fmt::Result {
    for stack in stacks.ranked().iter().flatten() {
        write!(
            out,
            "{{\"type\":\"stack\",{owner},\"waits\":{},\"wait_ns\":{:.0},\"wait_max_ns\":{:.0},\"frames\":[",
            stack.waits,
            summary.ns(stack.wait),
            summary.ns(stack.wait_max),
        )?;
        for (i, frame) in stack.frames().enumerate() {
            if i > 0 {
                out.write_char(',')?;
            }
            code(out, frame, sites)?;
        }
        writeln!(out, "]}}")?;
    }
    Ok(())
}

/// A number, or `null` for `None`.
struct Number(Option<usize>);

impl fmt::Display for Number {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Some(n) => write!(f, "{n}"),
            None => f.write_str("null"),
        }
    }
}

/// One `lock` object and its `stack`s; `rank` by wait time, `None` for a lock of
/// the "most often waited for" list only.
fn lock(
    out: &mut Out,
    summary: &Summary,
    rank: Option<usize>,
    row: &Row,
    sites: Sites,
) -> fmt::Result {
    let (address, entry) = (row.seen.address, row.seen.entry);
    // Relaxed, here and below: a snapshot for the report.
    let rwlock = entry.rwlock.load(Relaxed);
    write!(
        out,
        "{{\"type\":\"lock\",\"rank\":{},\"waits_rank\":{},\"address\":\"{address:#x}\",\"kind\":\"{}\",\"symbol\":",
        Number(rank),
        Number(summary.waits_rank(address)),
        if rwlock { "rwlock" } else { "mutex" },
    )?;
    match (sites == Sites::Resolved)
        .then(|| symbols::data_symbol(address))
        .flatten()
    {
        Some((name, offset)) => {
            string(out, &name)?;
            write!(out, ",\"symbol_offset\":{offset}")?;
        }
        None => out.write_str("null,\"symbol_offset\":null")?,
    }
    let wait = total_wait(entry);
    write!(
        out,
        ",\"wait_ns\":{:.0},\"wait_share\":{},\"peak_waiters\":{}",
        summary.ns(wait),
        wait as f64 / summary.all_wait.max(1) as f64,
        entry.peak_waiting.load(Relaxed),
    )?;
    code_field(out, "site", entry.site.load(Relaxed), sites)?;
    write!(
        out,
        ",\"site_is_init\":{}",
        entry.site_is_init.load(Relaxed)
    )?;
    let get = |counter| Counters::get(counter);
    let longest = if get(&entry.shared.wait_max) > get(&entry.exclusive.wait_max) {
        &entry.shared
    } else {
        &entry.exclusive
    };
    code_field(
        out,
        "longest_wait_at",
        longest.wait_site.load(Relaxed),
        sites,
    )?;
    let parts: &[(&str, &Counters)] = if rwlock {
        &[("read", &entry.shared), ("write", &entry.exclusive)]
    } else {
        &[("mutex", &entry.exclusive)]
    };
    out.write_str(",\"holds\":[")?;
    for (i, (held_as, counters)) in parts.iter().enumerate() {
        if i > 0 {
            out.write_char(',')?;
        }
        write!(
            out,
            "{{\"held_as\":\"{held_as}\",\"acquisitions\":{},\"contended\":{},\"wait_ns\":{:.0},\"wait_max_ns\":{:.0},\"timed_holds\":{},\"hold_ns\":{:.0},\"hold_max_ns\":{:.0}}}",
            get(&counters.acquisitions),
            get(&counters.contended),
            summary.ns(get(&counters.wait_total)),
            summary.ns(get(&counters.wait_max)),
            get(&counters.timed_holds),
            summary.ns(get(&counters.hold_total)),
            summary.ns(get(&counters.hold_max)),
        )?;
    }
    let (others, others_wait) = entry.stacks.others();
    write!(
        out,
        "],\"other_stack_waits\":{others},\"other_stack_wait_ns\":{:.0}",
        summary.ns(others_wait)
    )?;
    out.write_char(',')?;
    advice(out, summary, &lock_shape(entry, summary))?;
    stacks(
        out,
        &entry.stacks,
        format_args!("\"lock_rank\":{},\"lock\":\"{address:#x}\"", Number(rank)),
        summary,
        sites,
    )
}

/// `"advice":text,"try":{setting}}` ending the object, each `null` when the share is
/// negligible or no other lock is suggested.
fn advice(out: &mut Out, summary: &Summary, shape: &Shape) -> fmt::Result {
    out.write_str("\"advice\":")?;
    let mut remedy = None;
    if summary.share >= NEGLIGIBLE_SHARE {
        out.write_char('"')?;
        remedy = advise(shape, summary.in_use, &mut Escaped(out))?;
        out.write_char('"')?;
    } else {
        out.write_str("null")?;
    }
    match remedy {
        Some(Remedy { variable, value }) => writeln!(
            out,
            ",\"try\":{{\"variable\":\"{variable}\",\"value\":\"{value}\"}}}}"
        ),
        None => writeln!(out, ",\"try\":null}}"),
    }
}

pub(super) fn write(out: &mut Out, summary: &Summary, sites: Sites) -> fmt::Result {
    // SAFETY: no preconditions.
    let pid = unsafe { libc::getpid() };
    write!(out, "{{\"type\":\"profile\",\"pid\":{pid},\"program\":")?;
    string(out, program())?;
    writeln!(
        out,
        ",\"elapsed_ns\":{},\"cpus\":{},\"wait_ns\":{:.0},\"cpu_ns\":{:.0},\"wait_share\":{},\"locks_seen\":{},\"untracked_acquisitions\":{}}}",
        summary.elapsed,
        summary.cpus,
        summary.ns(summary.all_wait),
        summary.cpu_ns,
        summary.share,
        summary.seen,
        summary.untracked,
    )?;
    for (rank, row) in summary.rows.iter().enumerate() {
        lock(out, summary, Some(rank + 1), row, sites)?;
    }
    for (_, row) in summary.often() {
        lock(out, summary, None, row, sites)?;
    }
    for (rank, site) in summary
        .sites
        .iter()
        .flat_map(|sites| sites.iter())
        .enumerate()
    {
        let rank = rank + 1;
        let tally = site.tally;
        write!(
            out,
            "{{\"type\":\"site\",\"rank\":{rank},\"kind\":\"{}\",\"locks\":{},\"destroyed\":{},\"acquisitions\":{},\"contended\":{},\"wait_ns\":{:.0},\"wait_share\":{}",
            if site.rwlock() { "rwlock" } else { "mutex" },
            tally.locks,
            site.destroyed,
            tally.acquisitions,
            tally.contended,
            summary.ns(tally.wait),
            tally.wait as f64 / summary.all_wait.max(1) as f64,
        )?;
        let other = sites::is_other(site.site);
        let address = if other { 0 } else { site.site.address() };
        code_field(out, "site", address, sites)?;
        write!(
            out,
            ",\"site_is_init\":{},\"beyond_site_table\":{other},",
            site.site.is_init.load(Relaxed)
        )?;
        advice(out, summary, &site_shape(site, summary))?;
        stacks(
            out,
            &site.site.stacks,
            format_args!("\"site_rank\":{rank}"),
            summary,
            sites,
        )?;
    }
    Ok(())
}
