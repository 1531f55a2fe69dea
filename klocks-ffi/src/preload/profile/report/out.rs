//! Where the report goes, and how, without allocating: [`Out`] writes to a file
//! descriptor (stderr, or `KLOCKS_PROFILE_FILE`) with the raw `write` system call, a
//! fixed buffer at a time, and wraps each line at [`COLUMNS`] as it ends (never for
//! the machine formats); it works in a signal handler.

use std::ffi::c_int;
use std::fmt::{self, Write};
use std::sync::atomic::{AtomicI32, AtomicU64, Ordering::Relaxed};
use std::sync::OnceLock;

use crate::preload::settings::PROFILE_FILE;

use super::super::units::Buffer;

/// The widest line the report writes; a longer one is wrapped at spaces, its
/// continuation indented by [`INDENT`], or by two more than the line's own indent
/// where that is deeper (a frame of a stack).
const COLUMNS: usize = 120;
const INDENT: usize = 7;
const SPACES: &str = "                ";
/// `KLOCKS_PROFILE_FILE`, if set.
static FILE: OnceLock<String> = OnceLock::new();
/// A copy of stderr made at start (programs such as coreutils close fd 2 at exit,
/// before the report), -1 if none; and the file it refers to, to check that it was
/// not closed and the number reused for another file since.
static STDERR_COPY: AtomicI32 = AtomicI32::new(-1);
static STDERR_FILE: AtomicU64 = AtomicU64::new(0);
/// Where the copy is made: above the descriptors programs use by number.
const STDERR_COPY_FROM: c_int = 100;
/// A number that names the open file behind `fd` (its device and inode), if open.
fn file_id(fd: c_int) -> Option<u64> {
    if fd < 0 {
        return None;
    }
    // SAFETY: a zeroed stat is valid to write; fstat is async-signal-safe.
    let mut stat: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    if unsafe { libc::fstat(fd, &mut stat) } != 0 {
        return None;
    }
    Some((stat.st_dev as u64).rotate_left(32) ^ stat.st_ino as u64)
}

/// Where "stderr" is at report time: the copy made at start if it still names the
/// same file, else fd 2.
fn stderr() -> c_int {
    // Relaxed: see `set_destination`.
    let copy = STDERR_COPY.load(Relaxed);
    if copy >= 0 && file_id(copy) == Some(STDERR_FILE.load(Relaxed)) {
        copy
    } else {
        2
    }
}

/// Where the report goes: a file descriptor, written a buffer at a time, each line
/// wrapped at [`COLUMNS`] as it ends.
pub(super) struct Out {
    fd: c_int,
    owned: bool,
    /// Where lines wrap: [`COLUMNS`] for text, never for the machine formats.
    pub(super) columns: usize,
    buffer: Buffer<4096>,
    line: Buffer<2048>,
}

impl Out {
    /// Stderr (the copy made at start, see [`stderr`]).
    pub(super) fn stderr() -> Out {
        Out {
            fd: stderr(),
            owned: false,
            columns: COLUMNS,
            buffer: Buffer::new(),
            line: Buffer::new(),
        }
    }

    /// `KLOCKS_PROFILE_FILE` (appended to, `%p` replaced by the process id), or
    /// stderr if unset or if it cannot be opened (said on stderr).
    pub(super) fn open() -> Out {
        let stderr = Out::stderr();
        let Some(template) = FILE.get() else {
            return stderr;
        };
        let Some(path) = expand(template) else {
            return stderr.complain(template, "too long");
        };
        match create(&path, libc::O_APPEND) {
            Ok(fd) => Out {
                fd,
                owned: true,
                columns: COLUMNS,
                buffer: Buffer::new(),
                line: Buffer::new(),
            },
            Err(errno) => {
                let mut why = Buffer::<64>::new();
                let _ = write!(why, "errno {errno}");
                stderr.complain(path.as_str(), why.as_str())
            }
        }
    }

    fn complain(mut self, path: &str, why: &str) -> Out {
        let _ = writeln!(
            self,
            "klocks: cannot open {PROFILE_FILE}={path:?} ({why}); the profile follows on stderr"
        );
        self
    }

    fn flush(&mut self) {
        let mut done = 0;
        while done < self.buffer.len {
            let rest = &self.buffer.bytes[done..self.buffer.len];
            // SAFETY: writes bytes of a live buffer; the raw system call (see `say`).
            let wrote =
                unsafe { libc::syscall(libc::SYS_write, self.fd, rest.as_ptr(), rest.len()) };
            if wrote <= 0 {
                break;
            }
            done += wrote as usize;
        }
        self.buffer.len = 0;
    }
}

impl Out {
    /// Writes `text` to the descriptor's buffer as it is.
    fn emit(&mut self, mut text: &str) {
        while !text.is_empty() {
            if self.buffer.len == self.buffer.bytes.len() {
                self.flush();
            }
            let before = self.buffer.len;
            let _ = self.buffer.write_str(text);
            let taken = self.buffer.len - before;
            if taken == 0 {
                // A character that does not fit in what is left of the buffer.
                self.flush();
                continue;
            }
            text = &text[taken..];
        }
    }

    /// Writes the line gathered so far, wrapped at spaces to [`COLUMNS`] (a word
    /// longer than a line stays whole).
    fn end_line(&mut self) {
        let line = self.line;
        self.line.len = 0;
        let mut rest = line.as_str();
        let mut room = self.columns;
        let own_indent = line.as_str().len() - line.as_str().trim_start().len();
        let indent = INDENT.max(own_indent + 2).min(SPACES.len());
        while rest.chars().count() > room {
            let limit = rest
                .char_indices()
                .nth(room)
                .map_or(rest.len(), |(at, _)| at);
            let lead = rest.len() - rest.trim_start().len();
            let cut = if rest[limit..].starts_with(' ') {
                Some(limit)
            } else {
                rest[..limit].rfind(' ').filter(|&at| at > lead)
            };
            let Some(cut) = cut.or_else(|| rest[limit..].find(' ').map(|at| at + limit)) else {
                break;
            };
            self.emit(rest[..cut].trim_end());
            self.emit("\n");
            self.emit(&SPACES[..indent]);
            rest = rest[cut..].trim_start();
            room = COLUMNS - indent;
        }
        self.emit(rest);
        self.emit("\n");
    }
}

impl Write for Out {
    fn write_str(&mut self, text: &str) -> fmt::Result {
        let mut lines = text.split('\n');
        let mut part = lines.next().unwrap_or("");
        for next in lines {
            self.push(part);
            self.end_line();
            part = next;
        }
        self.push(part);
        Ok(())
    }
}

impl Out {
    /// Adds to the current line; a line longer than its buffer is written out in parts.
    fn push(&mut self, mut text: &str) {
        while !text.is_empty() {
            if self.line.len == self.line.bytes.len() {
                let line = self.line;
                self.line.len = 0;
                self.emit(line.as_str());
            }
            let before = self.line.len;
            let _ = self.line.write_str(text);
            let taken = self.line.len - before;
            if taken == 0 {
                // A character cut at the buffer's end: start a fresh buffer.
                let line = self.line;
                self.line.len = 0;
                self.emit(line.as_str());
                continue;
            }
            text = &text[taken..];
        }
    }
}

impl Drop for Out {
    fn drop(&mut self) {
        if self.line.len > 0 {
            self.end_line();
        }
        self.flush();
        if self.owned {
            // SAFETY: our descriptor, closed once.
            unsafe { libc::syscall(libc::SYS_close, self.fd) };
        }
    }
}

/// `KLOCKS_PROFILE_FILE` as set, `%p` not yet replaced; `None` if unset.
pub(super) fn file_template() -> Option<&'static str> {
    FILE.get().map(String::as_str)
}

/// `template` with `%p` replaced by the process id, NUL-terminated after its `len`
/// bytes; `None` if it does not fit.
pub(super) fn expand(template: &str) -> Option<Buffer<4096>> {
    let mut path = Buffer::<4096>::new();
    let mut parts = template.split("%p");
    let _ = path.write_str(parts.next().unwrap_or(""));
    for part in parts {
        // SAFETY: no preconditions.
        let _ = write!(path, "{}{part}", unsafe { libc::getpid() });
    }
    if path.len == path.bytes.len() {
        return None;
    }
    path.bytes[path.len] = 0;
    Some(path)
}

/// Opens the file at `path` (as [`expand`] made it) for writing, created if missing,
/// with `mode` (`O_APPEND` or `O_TRUNC`); `Err` holds the errno.
pub(super) fn create(path: &Buffer<4096>, mode: c_int) -> Result<c_int, c_int> {
    // SAFETY: a NUL-terminated path in a live buffer (`expand`); the raw system call
    // (not a cancellation point, and async-signal-safe).
    let fd = unsafe {
        libc::syscall(
            libc::SYS_openat,
            libc::AT_FDCWD,
            path.bytes.as_ptr(),
            libc::O_WRONLY | libc::O_CREAT | mode | libc::O_CLOEXEC,
            0o644,
        )
    };
    if fd < 0 {
        // SAFETY: the calling thread's errno.
        return Err(unsafe { *libc::__errno_location() });
    }
    Ok(fd as c_int)
}

/// Sets where the report goes (`None`: stderr), and copies stderr (from the
/// library's constructor).
pub(super) fn set_destination(file: Option<&str>) {
    if let Some(file) = file {
        let _ = FILE.set(file.to_owned());
    }
    // SAFETY: duplicates fd 2 (if open) to a new close-on-exec descriptor.
    let copy = unsafe { libc::fcntl(2, libc::F_DUPFD_CLOEXEC, STDERR_COPY_FROM) };
    if let Some(id) = file_id(copy) {
        // Relaxed: set before the profile is switched on, whose Release publishes
        // them.
        STDERR_FILE.store(id, Relaxed);
        STDERR_COPY.store(copy, Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What `Out` writes when given `text`, to a file, without wrapping.
    fn written(text: &str) -> String {
        let path = std::env::temp_dir().join(format!("klocks-out-{}", std::process::id()));
        let file = std::fs::File::create(&path).unwrap();
        let mut out = Out {
            fd: std::os::fd::IntoRawFd::into_raw_fd(file),
            owned: true,
            columns: usize::MAX,
            buffer: Buffer::new(),
            line: Buffer::new(),
        };
        out.write_str(text).unwrap();
        drop(out);
        let back = std::fs::read_to_string(&path).unwrap();
        std::fs::remove_file(&path).unwrap();
        back
    }

    /// A character that straddles the end of the write buffer goes whole into the next
    /// one (it once spun for ever: no byte fitted, and a buffer not full was not
    /// flushed).
    #[test]
    fn a_character_at_the_buffers_end_is_written_whole() {
        for before in 4090..4097 {
            let text = format!("{}\n{}µs\n", "a".repeat(before - 1), "b".repeat(before % 7));
            assert_eq!(written(&text), text);
        }
    }
}
