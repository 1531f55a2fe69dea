//! `KLOCKS_PROFILE_FORMAT=pprof`: where threads waited, as a gzipped `profile.proto`
//! ([`pprof_proto`](super::pprof_proto)) that `go tool pprof` and speedscope open with
//! no flags. Its measures are those of Go's mutex profile (`go test -mutexprofile`):
//! sample types `contentions/count` and `delay/nanoseconds`, period type
//! `contentions/count` with period 1 (every wait is counted, none sampled). A sample
//! is one kept stack of one lock (every live lock's and every site's destroyed
//! locks', as the folded stacks), its values the waits at that stack and their total
//! wait, its locations the stack's return addresses, innermost (the lock call's) first,
//! and its string labels `lock` (the lock's data symbol, else its address and site;
//! for destroyed locks, their site) and `kind` (`mutex` or `rwlock`). Waits kept in no
//! stack are a sample at the one location `[other stacks]`, so the samples add up to
//! every lock's waits and wait, destroyed ones included.
//!
//! A location carries its function (from the debug information with `-g`, else the
//! symbol table; in a stripped module, `module+offset`) and, with `-g`, its file and
//! line, inlined functions as extra lines;
//! the mappings are the loaded modules' executable segments with their paths and GNU
//! build IDs ([`pprof_mappings`](super::pprof_mappings)), marked as already
//! symbolized, so a viewer needs neither the binaries nor flags.
//!
//! Where it goes: `KLOCKS_PROFILE_FILE` (`%p` the process id), replaced rather than
//! appended to (two profiles in one file would not decode as two); where that is
//! unset, cannot be opened or is a terminal (binary must not reach one),
//! `klocks-PROGRAM-PID.pb.gz` in the working directory. A line on stderr names the
//! file and its totals.
//!
//! Written at exit only: building and compressing the message allocates, which the
//! report at exit does from the arena (`arena`), and a `SIGUSR2` report, made in a
//! signal handler, must not; a signal's report in this format is one line saying so.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::Write as _;
use std::sync::atomic::Ordering::Relaxed;

use prost::Message;

use super::super::stacks::{Stacks, STACKS};
use super::super::table::{self, sites};
use super::super::units::Buffer;
use super::out::{self, Out};
use super::pprof_mappings;
use super::pprof_proto as proto;
use super::summary::{program, Sites, Summary};
use super::symbols;
use crate::preload::settings::{PROFILE_FILE, PROFILE_FORMAT};

/// The frame standing for the waits kept in no stack.
const OTHER_STACKS: &str = "[other stacks]";

/// The profile being built, and its tables' indices.
struct Builder {
    profile: proto::Profile,
    strings: BTreeMap<String, i64>,
    /// By (name, file) index.
    functions: BTreeMap<(i64, i64), u64>,
    /// By address; 0 is [`OTHER_STACKS`].
    locations: BTreeMap<usize, u64>,
    /// Each mapping's range and index in `profile.mapping`.
    ranges: Vec<(u64, u64, usize)>,
    ns: f64,
}

impl Builder {
    fn new(summary: &Summary) -> Builder {
        let mut builder = Builder {
            profile: proto::Profile::default(),
            strings: BTreeMap::new(),
            functions: BTreeMap::new(),
            locations: BTreeMap::new(),
            ranges: Vec::new(),
            ns: summary.ns_per_tick,
        };
        builder.string("");
        let contentions = proto::ValueType {
            r#type: builder.string("contentions"),
            unit: builder.string("count"),
        };
        let delay = proto::ValueType {
            r#type: builder.string("delay"),
            unit: builder.string("nanoseconds"),
        };
        builder.profile.sample_type = vec![contentions.clone(), delay];
        builder.profile.period_type = Some(contentions);
        builder.profile.period = 1;
        let elapsed = i64::try_from(summary.elapsed).unwrap_or(i64::MAX);
        builder.profile.time_nanos = wall_clock_ns().saturating_sub(elapsed);
        builder.profile.duration_nanos = elapsed;
        // SAFETY: no preconditions.
        let pid = unsafe { libc::getpid() };
        let comments = [
            format!("klocks contention profile of pid {pid} ({})", program()),
            "contentions: waits for a lock; delay: their total wait".to_owned(),
            format!("labels: lock (its name), kind (mutex or rwlock); {OTHER_STACKS}: waits in none of the {STACKS} longest-waiting stacks a lock keeps"),
        ];
        for comment in comments {
            let index = builder.string(&comment);
            builder.profile.comment.push(index);
        }
        for module in pprof_mappings::loaded() {
            let (filename, build_id) = (
                builder.string(&module.path),
                builder.string(&module.build_id),
            );
            for segment in module.segments {
                let index = builder.profile.mapping.len();
                builder.profile.mapping.push(proto::Mapping {
                    id: index as u64 + 1,
                    memory_start: segment.start,
                    memory_limit: segment.limit,
                    file_offset: segment.offset,
                    filename,
                    build_id,
                    // Every address is resolved here, as far as the module allows:
                    // a viewer has nothing to add.
                    has_functions: true,
                    ..proto::Mapping::default()
                });
                builder.ranges.push((segment.start, segment.limit, index));
            }
        }
        builder
    }

    /// The index of `text` in the string table, added if new.
    fn string(&mut self, text: &str) -> i64 {
        if let Some(&index) = self.strings.get(text) {
            return index;
        }
        let index = self.profile.string_table.len() as i64;
        self.profile.string_table.push(text.to_owned());
        self.strings.insert(text.to_owned(), index);
        index
    }

    /// The id of the function `name` in `file` (empty: unknown), added if new.
    fn function(&mut self, name: &str, file: &str) -> u64 {
        let key = (self.string(name), self.string(file));
        if let Some(&id) = self.functions.get(&key) {
            return id;
        }
        let id = self.profile.function.len() as u64 + 1;
        self.profile.function.push(proto::Function {
            id,
            name: key.0,
            system_name: key.0,
            filename: key.1,
            start_line: 0,
        });
        self.functions.insert(key, id);
        id
    }

    /// The id of the location of the return address `address` (0: the frame
    /// [`OTHER_STACKS`]), resolved and added if new.
    fn location(&mut self, address: usize) -> u64 {
        if let Some(&id) = self.locations.get(&address) {
            return id;
        }
        let mut location = proto::Location {
            id: self.profile.location.len() as u64 + 1,
            address: address as u64,
            ..proto::Location::default()
        };
        if address == 0 {
            let function = self.function(OTHER_STACKS, "");
            location.line.push(proto::Line {
                function_id: function,
                ..proto::Line::default()
            });
        } else {
            let code = symbols::resolve(address);
            if code.function.len != 0 {
                let function = self.function(code.function.as_str(), code.file.as_str());
                location.line.push(proto::Line {
                    function_id: function,
                    line: code.line.into(),
                    column: 0,
                });
            } else if code.module.len != 0 {
                // A stripped module's code (no symbol covers it): named as the
                // folded stacks name it, so that a viewer shows more than an address.
                let name = format!("{}+{:#x}", code.module.as_str(), code.offset);
                let function = self.function(&name, "");
                location.line.push(proto::Line {
                    function_id: function,
                    ..proto::Line::default()
                });
            }
            if code.inlined_into.len != 0 {
                let function = self.function(code.inlined_into.as_str(), "");
                location.line.push(proto::Line {
                    function_id: function,
                    ..proto::Line::default()
                });
            }
            let at = address as u64;
            if let Some(&(_, _, index)) = self
                .ranges
                .iter()
                .find(|&&(start, limit, _)| start <= at && at < limit)
            {
                let mapping = &mut self.profile.mapping[index];
                location.mapping_id = mapping.id;
                mapping.has_filenames |= code.file.len != 0;
                mapping.has_line_numbers |= code.line != 0;
                mapping.has_inline_frames |= code.inlined_into.len != 0;
            }
        }
        let id = location.id;
        self.profile.location.push(location);
        self.locations.insert(address, id);
        id
    }

    /// One sample per stack of `stacks`, and one at [`OTHER_STACKS`] for the waits
    /// kept in none, each labelled `lock` and `kind`.
    fn samples(&mut self, stacks: &Stacks, lock: &str, rwlock: bool) {
        let labels = [
            ("lock", lock),
            ("kind", if rwlock { "rwlock" } else { "mutex" }),
        ]
        .map(|(key, value)| proto::Label {
            key: self.string(key),
            str: self.string(value),
            ..proto::Label::default()
        });
        let (others, others_wait) = stacks.others();
        let kept = stacks.ranked();
        let kept = kept
            .iter()
            .flatten()
            .map(|stack| (stack.frames().collect::<Vec<_>>(), stack.waits, stack.wait));
        let other = (others > 0).then(|| (vec![0], others, others_wait));
        for (frames, waits, ticks) in kept.chain(other) {
            let location_id = frames
                .into_iter()
                .map(|frame| self.location(frame))
                .collect();
            let waits = i64::try_from(waits).unwrap_or(i64::MAX);
            let delay = (ticks as f64 * self.ns).round() as i64;
            self.profile.sample.push(proto::Sample {
                location_id,
                value: vec![waits, delay],
                label: labels.to_vec(),
            });
        }
    }
}

/// Now on the wall clock, in nanoseconds since the epoch.
fn wall_clock_ns() -> i64 {
    let mut now = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: writes a timespec on this stack.
    unsafe { libc::clock_gettime(libc::CLOCK_REALTIME, &mut now) };
    now.tv_sec
        .saturating_mul(1_000_000_000)
        .saturating_add(now.tv_nsec)
}

/// The profile of every lock's waits (module doc).
fn build(summary: &Summary) -> proto::Profile {
    let mut builder = Builder::new(summary);
    for lock in table::in_use() {
        let entry = lock.entry;
        let mut name = String::new();
        if symbols::write_data_symbol(&mut name, lock.address) != Ok(true) {
            name.clear();
            // Relaxed, here and below: a snapshot for the report.
            let (site, is_init) = (entry.site.load(Relaxed), entry.site_is_init.load(Relaxed));
            let _ = write!(name, "{:#x}, ", lock.address);
            let _ = symbols::write_site(&mut name, site, is_init, Sites::Resolved);
        }
        let name = name.strip_prefix("lock ").unwrap_or(&name).to_owned();
        builder.samples(&entry.stacks, &name, entry.rwlock.load(Relaxed));
    }
    for site in sites::all() {
        let mut name = "destroyed locks ".to_owned();
        if sites::is_other(site) {
            name.push_str("of other sites");
        } else {
            let _ = symbols::write_site(
                &mut name,
                site.address(),
                site.is_init.load(Relaxed),
                Sites::Resolved,
            );
        }
        builder.samples(&site.stacks, &name, site.rwlock.load(Relaxed));
    }
    builder.profile
}

/// Every lock's contended acquisitions, destroyed ones' included, from their
/// counters (not their stacks: the samples must add up to it).
fn contentions() -> u64 {
    sites::all()
        .map(|site| site.destroyed().contended + site.live().contended)
        .sum()
}

/// `bytes` gzipped.
fn gzip(bytes: &[u8]) -> std::io::Result<Vec<u8>> {
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    encoder.write_all(bytes)?;
    encoder.finish()
}

/// The file the profile goes to, open, and its path: `KLOCKS_PROFILE_FILE`, else the
/// default name (module doc); `Err` holds the default's errno. Says on stderr why a
/// `KLOCKS_PROFILE_FILE` is passed over.
fn open(note: &mut Out) -> Result<(libc::c_int, Buffer<4096>), libc::c_int> {
    if let Some(template) = out::file_template() {
        let why = match out::expand(template) {
            None => "too long".to_owned(),
            Some(path) => match out::create(&path, libc::O_TRUNC) {
                Err(errno) => format!("errno {errno}"),
                // SAFETY: an open descriptor of ours; isatty only asks the kernel.
                Ok(fd) if unsafe { libc::isatty(fd) } == 1 => {
                    // SAFETY: our descriptor, closed once.
                    unsafe { libc::syscall(libc::SYS_close, fd) };
                    "a terminal".to_owned()
                }
                Ok(fd) => return Ok((fd, path)),
            },
        };
        let _ = writeln!(
            note,
            "klocks: cannot write the pprof profile to {PROFILE_FILE}={template:?} ({why}); writing it to the default file"
        );
    }
    // SAFETY: no preconditions.
    let pid = unsafe { libc::getpid() };
    let default = format!("klocks-{}-{pid}.pb.gz", program().replace('/', "_"));
    let path = out::expand(&default).ok_or(libc::ENAMETOOLONG)?;
    let fd = out::create(&path, libc::O_TRUNC)?;
    Ok((fd, path))
}

/// Writes all of `bytes` to `fd` with the raw system call; whether all were written.
fn write_all(fd: libc::c_int, bytes: &[u8]) -> bool {
    let mut done = 0;
    while done < bytes.len() {
        let rest = &bytes[done..];
        // SAFETY: writes bytes of a live buffer to our descriptor.
        let wrote = unsafe { libc::syscall(libc::SYS_write, fd, rest.as_ptr(), rest.len()) };
        if wrote <= 0 {
            return false;
        }
        done += wrote as usize;
    }
    true
}

/// Writes the profile (module doc), and the line on stderr that names its file and
/// totals.
pub(super) fn write(summary: &Summary, sites: Sites) {
    let mut note = Out::stderr();
    // One line, unwrapped, that a script can read.
    note.columns = usize::MAX;
    if sites == Sites::Raw {
        let _ = writeln!(
            note,
            "klocks: profile: {PROFILE_FORMAT}=pprof is written only at exit, with memory to resolve its stacks; nothing written now"
        );
        return;
    }
    let profile = build(summary);
    let gzipped = match gzip(&profile.encode_to_vec()) {
        Ok(gzipped) => gzipped,
        Err(error) => {
            let _ = writeln!(
                note,
                "klocks: profile: could not compress the pprof profile ({error}); nothing written"
            );
            return;
        }
    };
    let (fd, path) = match open(&mut note) {
        Ok(opened) => opened,
        Err(errno) => {
            let _ = writeln!(note, "klocks: profile: could not create the pprof profile's file (errno {errno}); nothing written");
            return;
        }
    };
    let complete = write_all(fd, &gzipped);
    // SAFETY: our descriptor, closed once.
    unsafe { libc::syscall(libc::SYS_close, fd) };
    let path = path.as_str();
    if complete {
        let _ = writeln!(
            note,
            "klocks: profile: {} contentions, {:.0} ns of delay, in {} samples of pprof format: {path} (go tool pprof -top {path})",
            contentions(),
            summary.ns(summary.all_wait),
            profile.sample.len(),
        );
    } else {
        let _ = writeln!(
            note,
            "klocks: profile: could not write all of the pprof profile to {path}"
        );
    }
}
