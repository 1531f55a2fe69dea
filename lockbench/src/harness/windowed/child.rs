//! The parent's side of a cell's child process: spawn it, read its JSON lines with
//! timeouts, kill it when the drain cap runs out.

use std::io::{self, BufRead, BufReader};
use std::process::{Child, ChildStdout, Command, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::thread::{self, JoinHandle};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::plan::{CellLock, Spec, CELL_COMMAND, SETUP_CAP};
use crate::cells::Waits;
use crate::harness::rw::RwCounts;
use crate::harness::stats::Counts;
use crate::harness::Error;
use crate::machine;

/// One line of the child's stdout.
#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "kebab-case")]
pub(super) enum Report {
    /// The clock runs and the start gate is opening.
    Started,
    /// Every lock thread has returned (boxed: the waits make it far larger than
    /// `Started`).
    Finished(Box<Measured>),
}

/// What a cell process measured.
#[derive(Debug, Serialize, Deserialize)]
pub(super) struct Measured {
    /// The guarded counter once every thread returned (a mutex's cell; 0 for a
    /// reader-writer lock's, whose counters are in `rw`).
    pub(super) count: u64,
    /// Per thread: operations finished inside the window.
    pub(super) counted: Vec<u64>,
    /// All threads: operations finished after the stop flag.
    pub(super) late: u64,
    /// From opening the gate to raising the stop flag.
    pub(super) window_ns: u64,
    /// From raising the stop flag to the last thread returning.
    pub(super) drain_ns: u64,
    /// From opening the gate to the last thread passing it.
    #[serde(default)]
    pub(super) last_start_ns: u64,
    /// A reader-writer lock's cell: the data's counters and the roles' counts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) rw: Option<RwCounts>,
    /// The lock threads' waits.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) wait: Option<Waits>,
    /// `--stats`, a klocks lock: what it counted in this process.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) stats: Option<Counts>,
}

/// A cell's child process, killed (if still running) and reaped when dropped.
pub(super) struct CellProcess {
    child: Child,
    lines: Receiver<io::Result<String>>,
    reader: Option<JoinHandle<()>>,
    context: String,
}

impl CellProcess {
    /// Re-executes this binary on one run of `spec`. The child gets this process's
    /// pv spin budget, so that every cell spins the same and none calibrates under
    /// load.
    pub(super) fn spawn<L: CellLock>(spec: &Spec<L>, context: &str) -> Result<Self, Error> {
        let failed = |what: &str| {
            let what = format!("{context}: {what}");
            move |err| Error::Io(what, err)
        };
        let exe = std::env::current_exe().map_err(failed("finding lockbench's executable"))?;
        let mut child = Command::new(exe)
            .arg(CELL_COMMAND)
            .args([L::OPTION, spec.lock.name()])
            .args(["--threads", &spec.work.threads.to_string()])
            .args(["--readers", &spec.work.readers.to_string()])
            .args(["--inside", &spec.work.inside.to_string()])
            .args(["--outside", &spec.work.outside.to_string()])
            .args(["--hogs", &spec.work.hogs.to_string()])
            .args(["--window-ms", &spec.window.as_millis().to_string()])
            .args(["--wait-every", &spec.wait_every.to_string()])
            .args(spec.stats.then_some("--stats"))
            .env(
                klocks::config::SPIN_NS.name(),
                machine::pv_spin_ns().to_string(),
            )
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(failed("starting a cell process"))?;
        let (lines, reader) = read_lines(child.stdout.take());
        Ok(Self {
            child,
            lines,
            reader: Some(reader),
            context: context.to_owned(),
        })
    }

    /// Waits for the start, then for the result up to `cap` after it; `None` (and the
    /// child killed) when the cap runs out.
    pub(super) fn result(mut self, cap: Duration) -> Result<Option<Measured>, Error> {
        match self.next(SETUP_CAP)? {
            Some(Report::Started) => {}
            Some(Report::Finished(_)) => return Err(self.garbled("a result before the start")),
            None => {
                return Err(Error::Child(format!(
                    "{}: the cell process did not open its start gate within {} s",
                    self.context,
                    SETUP_CAP.as_secs()
                )))
            }
        }
        match self.next(cap)? {
            Some(Report::Finished(measured)) => {
                self.exited()?;
                Ok(Some(*measured))
            }
            Some(Report::Started) => Err(self.garbled("a second start")),
            None => Ok(None),
        }
    }

    /// The next report, or `None` if none came within `timeout`.
    fn next(&mut self, timeout: Duration) -> Result<Option<Report>, Error> {
        match self.lines.recv_timeout(timeout) {
            Ok(Ok(line)) => serde_json::from_str(&line)
                .map(Some)
                .map_err(|err| self.garbled(&format!("`{line}` ({err})"))),
            Ok(Err(err)) => Err(Error::Io(
                format!("{}: reading the cell process", self.context),
                err,
            )),
            Err(RecvTimeoutError::Timeout) => Ok(None),
            Err(RecvTimeoutError::Disconnected) => {
                self.exited()?;
                Err(self.garbled("no result"))
            }
        }
    }

    /// Reaps the child; an error unless it exited successfully.
    fn exited(&mut self) -> Result<(), Error> {
        let status = self.child.wait().map_err(|err| {
            Error::Io(
                format!("{}: waiting for the cell process", self.context),
                err,
            )
        })?;
        if status.success() {
            return Ok(());
        }
        Err(Error::Child(format!(
            "{}: the cell process failed ({status}; its message, if any, is above)",
            self.context
        )))
    }

    fn garbled(&self, what: &str) -> Error {
        Error::Child(format!(
            "{}: the cell process reported {what}",
            self.context
        ))
    }
}

impl Drop for CellProcess {
    fn drop(&mut self) {
        // Both fail harmlessly on a child that was already reaped.
        let _ = self.child.kill();
        let _ = self.child.wait();
        // The child is gone, so its stdout is at end of file and the reader returns.
        if let Some(reader) = self.reader.take() {
            let _ = reader.join();
        }
    }
}

/// Forwards the child's stdout (always piped, so always there) line by line, so the
/// parent can wait with a timeout.
fn read_lines(stdout: Option<ChildStdout>) -> (Receiver<io::Result<String>>, JoinHandle<()>) {
    let (send, lines) = mpsc::channel();
    let reader = thread::spawn(move || {
        for line in stdout
            .into_iter()
            .flat_map(|out| BufReader::new(out).lines())
        {
            if send.send(line).is_err() {
                return;
            }
        }
    });
    (lines, reader)
}
