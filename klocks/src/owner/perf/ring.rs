//! The `PerfSwitch` probe's kernel side: the context-switch event a watched thread
//! opens on itself, the read-only overwrite ring it is mapped as, the direction the
//! kernel writes that ring in (probed once per process), and the newest switch
//! record in it. `perf.rs`'s module doc ("The event") explains the choices; the
//! registry there decides whose ring is read, and when it may be.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::{
    AtomicU64,
    Ordering::{Acquire, Relaxed},
};

use super::super::tid::current_tid;
use crate::config::resolved::Resolved;

// The kernel ABI, from include/uapi/linux/perf_event.h.
const PERF_TYPE_SOFTWARE: u32 = 1;
const PERF_COUNT_SW_DUMMY: u64 = 9;
/// `sizeof` the first published `perf_event_attr`: every field we set is in it.
const PERF_ATTR_SIZE_VER0: u32 = 64;
const PERF_FLAG_FD_CLOEXEC: libc::c_ulong = 1 << 3;
const PERF_RECORD_SWITCH: u32 = 14;
const PERF_RECORD_MISC_SWITCH_OUT: u16 = 1 << 13;
/// Bits of the `perf_event_attr` flag word (`disabled` is bit 0).
const ATTR_EXCLUDE_KERNEL: u64 = 1 << 5;
const ATTR_EXCLUDE_HV: u64 = 1 << 6;
const ATTR_CONTEXT_SWITCH: u64 = 1 << 26;
const ATTR_WRITE_BACKWARD: u64 = 1 << 27;
/// Where `perf_event_mmap_page::data_head` sits in the header page.
const DATA_HEAD_OFFSET: usize = 1024;
/// `sizeof(struct perf_event_header)`, the whole of a switch record.
const SWITCH_RECORD_BYTES: u64 = 8;

/// `struct perf_event_attr` up to `PERF_ATTR_SIZE_VER0`; the kernel zero-extends it.
#[repr(C)]
struct PerfEventAttr {
    kind: u32,
    size: u32,
    config: u64,
    sample_period: u64,
    sample_type: u64,
    read_format: u64,
    flags: u64,
    wakeup_events: u32,
    bp_type: u32,
    bp_addr: u64,
}

const _: () = assert!(std::mem::size_of::<PerfEventAttr>() == PERF_ATTR_SIZE_VER0 as usize);

/// In which direction the kernel writes the rings of this process.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Direction {
    /// `write_backward`: the newest record starts at `data_head`.
    Backward,
    /// Plain overwrite ring: the newest record ends at `data_head`.
    Forward,
}

/// How this process's rings look, settled once.
#[derive(Clone, Copy, Debug)]
pub(super) struct RingLayout {
    pub(super) direction: Direction,
    /// The page size: the header page, and the one data page.
    pub(super) page: usize,
}

impl RingLayout {
    pub(super) fn map_len(&self) -> usize {
        2 * self.page
    }
}

/// The process's ring layout, probed once by opening and mapping an event on the
/// calling thread; the errno when perf refused (`EAGAIN` for a thread that asks
/// while another probes: it does not wait, see [`crate::config`]).
pub(super) fn layout() -> Result<RingLayout, i32> {
    settled_layout().unwrap_or(Err(libc::EAGAIN))
}

/// [`layout`], or `None` for a thread that asks while another probes.
pub(super) fn settled_layout() -> Option<Result<RingLayout, i32>> {
    static LAYOUT: Resolved = Resolved::new();
    let (code, settled) = LAYOUT.get(|| encode_layout(probe_layout()), 0);
    settled.then(|| decode_layout(code))
}

/// A layout result in one word: bit 63 set for a layout (bit 62 its direction, the
/// page size below), else the errno.
fn encode_layout(layout: Result<RingLayout, i32>) -> u64 {
    match layout {
        Ok(RingLayout { direction, page }) => {
            1 << 63 | u64::from(direction == Direction::Forward) << 62 | page as u64
        }
        Err(errno) => errno as u64,
    }
}

fn decode_layout(code: u64) -> Result<RingLayout, i32> {
    if code >> 63 == 0 {
        return Err(code as i32);
    }
    let direction = match code >> 62 & 1 {
        0 => Direction::Backward,
        _ => Direction::Forward,
    };
    Ok(RingLayout {
        direction,
        page: (code & ((1 << 62) - 1)) as usize,
    })
}

/// Opens and maps an event on the calling thread, backward if the kernel can.
fn probe_layout() -> Result<RingLayout, i32> {
    let errno = |err: &io::Error| err.raw_os_error().unwrap_or(libc::EINVAL);
    // SAFETY: sysconf has no preconditions.
    let page =
        usize::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) }).map_err(|_| libc::EINVAL)?;
    let tid = current_tid();
    let mut refused = libc::EINVAL;
    for direction in [Direction::Backward, Direction::Forward] {
        let layout = RingLayout { direction, page };
        match open_event(tid, direction) {
            Ok(fd) => {
                let ring = map_ring(&fd, &layout).map_err(|err| errno(&err))?;
                // SAFETY: `ring` was mapped just above with this layout and was
                // never shared.
                unsafe { unmap_ring(ring, &layout) };
                return Ok(layout);
            }
            // EINVAL for `write_backward`: a kernel before 4.7; try forward.
            Err(err) if direction == Direction::Backward && errno(&err) == libc::EINVAL => {}
            Err(err) => {
                refused = errno(&err);
                break;
            }
        }
    }
    Err(refused)
}

/// Whether this process can watch threads with perf rings (probes once).
pub(in crate::owner) fn check() -> io::Result<()> {
    layout().map(drop).map_err(io::Error::from_raw_os_error)
}

/// Opens a context-switch event on thread `tid` (one of ours).
pub(super) fn open_event(tid: u32, direction: Direction) -> io::Result<OwnedFd> {
    let mut flags = ATTR_EXCLUDE_KERNEL | ATTR_EXCLUDE_HV | ATTR_CONTEXT_SWITCH;
    if direction == Direction::Backward {
        flags |= ATTR_WRITE_BACKWARD;
    }
    let attr = PerfEventAttr {
        kind: PERF_TYPE_SOFTWARE,
        size: PERF_ATTR_SIZE_VER0,
        config: PERF_COUNT_SW_DUMMY,
        sample_period: 0,
        sample_type: 0,
        read_format: 0,
        flags,
        wakeup_events: 0,
        bp_type: 0,
        bp_addr: 0,
    };
    let pid = libc::pid_t::try_from(tid).map_err(|_| io::Error::from_raw_os_error(libc::ESRCH))?;
    // SAFETY: `attr` is a valid `perf_event_attr` of the size it declares and outlives
    // the call; pid = a thread, cpu = -1 (any), group_fd = -1 (no group).
    let fd = unsafe {
        libc::syscall(
            libc::SYS_perf_event_open,
            &attr as *const PerfEventAttr,
            pid,
            -1 as libc::c_int,
            -1 as libc::c_int,
            PERF_FLAG_FD_CLOEXEC,
        )
    };
    match libc::c_int::try_from(fd) {
        // SAFETY: the kernel just returned this fd to us; nobody else owns it.
        Ok(fd) if fd >= 0 => Ok(unsafe { OwnedFd::from_raw_fd(fd) }),
        _ => Err(io::Error::last_os_error()),
    }
}

/// Maps an event's header and data pages, read-only (an overwrite ring).
pub(super) fn map_ring(fd: &OwnedFd, layout: &RingLayout) -> io::Result<*mut u8> {
    // SAFETY: a fresh shared read-only mapping of a perf fd; it aliases nothing of ours.
    let ring = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            layout.map_len(),
            libc::PROT_READ,
            libc::MAP_SHARED,
            fd.as_raw_fd(),
            0,
        )
    };
    if ring == libc::MAP_FAILED {
        return Err(io::Error::last_os_error());
    }
    Ok(ring.cast())
}

/// Unmaps a ring.
///
/// # Safety
/// `ring` came from [`map_ring`] with `layout`, and nobody reads it any more.
pub(super) unsafe fn unmap_ring(ring: *mut u8, layout: &RingLayout) {
    // SAFETY: per the contract. munmap of a whole mapping only fails for bad
    // arguments, which the contract excludes.
    unsafe { libc::munmap(ring.cast(), layout.map_len()) };
}

/// Switch records the kernel has written into a ring since it was mapped: one per
/// switch in and one per switch out (the ring keeps only the last 512; this counts
/// them all).
///
/// # Safety
/// `ring` is a live mapping made by [`map_ring`] with `layout`, for the whole call.
pub(super) unsafe fn records_written(ring: *const u8, layout: &RingLayout) -> u64 {
    // SAFETY: as in `newest_switch`.
    let data_head = unsafe { &*ring.add(DATA_HEAD_OFFSET).cast::<AtomicU64>() };
    // Relaxed: a count; no record is read.
    let head = data_head.load(Relaxed);
    // Backward, the head starts at 0 and moves down by each record's size.
    let bytes = match layout.direction {
        Direction::Backward => head.wrapping_neg(),
        Direction::Forward => head,
    };
    bytes / SWITCH_RECORD_BYTES
}

/// What a ring says about its thread.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Seen {
    /// The newest record is a switch-in, or there is none yet.
    Running,
    /// The newest record is a switch-out.
    NotRunning,
    /// The ring holds something that is not a switch record.
    Unknown,
}

/// The newest switch record of a ring.
///
/// # Safety
/// `ring` is a live mapping made by [`map_ring`] with `layout`, for the whole call.
pub(super) unsafe fn newest_switch(ring: *const u8, layout: &RingLayout) -> Seen {
    // SAFETY: `data_head` is an aligned u64 inside the live header page; the kernel
    // writes it, so it is read atomically.
    let data_head = unsafe { &*ring.add(DATA_HEAD_OFFSET).cast::<AtomicU64>() };
    // Acquire: pairs with the kernel's smp_wmb() between writing a record and
    // publishing it in `data_head` (perf_output_put_handle), so the record at the
    // head is complete.
    let head = data_head.load(Acquire);
    if head == 0 {
        return Seen::Running;
    }
    let start = match layout.direction {
        Direction::Backward => head,
        Direction::Forward => head.wrapping_sub(SWITCH_RECORD_BYTES),
    };
    // The data area is one page, a power of two; records are 8-byte aligned, so a
    // header never wraps around its end.
    let offset = (start & (layout.page as u64 - 1)) as usize;
    // SAFETY: `offset + 8 <= page`, inside the live data page, 8-byte aligned. Read as
    // one atomic: the kernel may be overwriting this very slot if the thread
    // switched 512 times since the head was read, and then any whole record it
    // holds is a newer one.
    let header = unsafe { &*ring.add(layout.page + offset).cast::<AtomicU64>() };
    // Relaxed: ordered after the head by the Acquire above.
    let bytes = header.load(Relaxed).to_ne_bytes();
    // struct perf_event_header { u32 type; u16 misc; u16 size; }
    let kind = u32::from_ne_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]);
    let misc = u16::from_ne_bytes([bytes[4], bytes[5]]);
    let size = u16::from_ne_bytes([bytes[6], bytes[7]]);
    if kind != PERF_RECORD_SWITCH || u64::from(size) != SWITCH_RECORD_BYTES {
        return Seen::Unknown;
    }
    match misc & PERF_RECORD_MISC_SWITCH_OUT {
        0 => Seen::Running,
        _ => Seen::NotRunning,
    }
}
