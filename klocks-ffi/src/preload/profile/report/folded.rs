//! `KLOCKS_PROFILE_FORMAT=folded`: where threads waited, as the folded-stacks text
//! that flame-graph tools read (Brendan Gregg's `flamegraph.pl`, `inferno`,
//! speedscope): one line per stack, `frame;frame;frame wait_ns`, the outermost
//! caller first, then the lock call's function, then the lock as a last frame
//! (`[lock NAME]`, by its data symbol or address, or `[destroyed lock from FUNCTION]`
//! for the locks a site made and destroyed), and the stack's total wait in
//! nanoseconds. Every live lock's stacks are written and every site's destroyed
//! locks' stacks, not only the listed ones; waits kept in no stack are one line with
//! the frame `[other stacks]`, so the lines add up to all locks' wait.
//!
//! Folded text needs no encoder: the `SIGUSR2` report writes it from fixed buffers
//! without allocating, which the pprof profile (`pprof.rs`, written at exit only)
//! cannot do; and it is one line per stack that a script can also read.

use std::fmt::{self, Write};

use super::super::stacks::Stacks;
use super::super::table::{self, sites};
use super::super::units::Buffer;
use super::out::Out;
use super::summary::{Sites, Summary};
use super::symbols;

/// Writes one frame: the function (as two frames, `outer;inner`, when one was
/// inlined into another), else `module+offset`, else the address (always the address
/// when `sites` is [`Sites::Raw`]); a `;` in a name becomes `:`.
fn frame(out: &mut Out, address: usize, sites: Sites) -> fmt::Result {
    let mut name = Buffer::<512>::new();
    if sites == Sites::Resolved {
        let code = symbols::resolve(address);
        if code.function.len != 0 {
            if code.inlined_into.len != 0 {
                write!(name, "{}\u{1}", code.inlined_into.as_str())?;
            }
            name.write_str(code.function.as_str())?;
        } else if code.module.len != 0 {
            write!(name, "{}+{:#x}", code.module.as_str(), code.offset)?;
        }
    }
    if name.len == 0 {
        write!(name, "{address:#x}")?;
    }
    for c in name.as_str().chars() {
        out.write_char(match c {
            ';' => ':',
            '\u{1}' => ';',
            c if c.is_control() => ' ',
            c => c,
        })?;
    }
    Ok(())
}

/// The lines of one lock's (or site's) stacks, each ended by the frame `leaf` writes.
fn lines(
    out: &mut Out,
    stacks: &Stacks,
    summary: &Summary,
    mut leaf: impl FnMut(&mut Out) -> fmt::Result,
    sites: Sites,
) -> fmt::Result {
    for stack in stacks.ranked().iter().flatten() {
        let ns = summary.ns(stack.wait).round();
        if ns < 1.0 {
            continue;
        }
        for address in stack.frames().rev() {
            frame(out, address, sites)?;
            out.write_char(';')?;
        }
        leaf(out)?;
        writeln!(out, " {ns:.0}")?;
    }
    let (_, others_wait) = stacks.others();
    let ns = summary.ns(others_wait).round();
    if ns >= 1.0 {
        out.write_str("[other stacks];")?;
        leaf(out)?;
        writeln!(out, " {ns:.0}")?;
    }
    Ok(())
}

pub(super) fn write(out: &mut Out, summary: &Summary, sites: Sites) -> fmt::Result {
    for lock in table::in_use() {
        let address = lock.address;
        let mut symbol = None;
        lines(
            out,
            &lock.entry.stacks,
            summary,
            |out| {
                let named = symbol.get_or_insert_with(|| {
                    (sites == Sites::Resolved)
                        .then(|| symbols::data_symbol(address))
                        .flatten()
                });
                match named {
                    Some((name, 0)) => write!(out, "[lock {}]", name.replace(';', ":")),
                    Some((name, offset)) => {
                        write!(out, "[lock {}+{offset:#x}]", name.replace(';', ":"))
                    }
                    None => write!(out, "[lock {address:#x}]"),
                }
            },
            sites,
        )?;
    }
    for site in sites::all() {
        let address = if sites::is_other(site) {
            0
        } else {
            site.address()
        };
        lines(
            out,
            &site.stacks,
            summary,
            |out| {
                out.write_str("[destroyed lock from ")?;
                match address {
                    0 => out.write_str("unknown sites")?,
                    _ => frame(out, address, sites)?,
                }
                out.write_char(']')
            },
            sites,
        )?;
    }
    Ok(())
}
