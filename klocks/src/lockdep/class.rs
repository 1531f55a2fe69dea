//! Classes, and the table that gives each lock its class.
//!
//! A class is keyed by one word: the code address of its site (an `init` call, or a
//! lock's first use), the address of the global a lock lies in, a lock's own
//! address (a Rust lock outside any global), or a hash of its name with the top bit
//! set (no user-space address has it). [`INDEX`] maps keys to class ids (dense,
//! from 1) by open addressing; a key is claimed with a cmpxchg and its id published
//! after the class's fields, so a thread that finds the key waits (briefly, never
//! in a system call) for the id.
//!
//! The lock table maps a lock's address to its class, also by open addressing, at
//! most [`PROBES`] slots from the address's hash. `destroy` marks the slot [`DEAD`];
//! an insertion reuses the first dead slot on its probe path, so a program that
//! makes and destroys locks at new addresses for ever stays within [`MAX_LOCKS`]
//! slots as long as at most that many live at once (in practice far fewer: a
//! probe path that finds neither a dead nor an empty slot is the bound reached).

use std::sync::atomic::{
    AtomicU32, AtomicU8, AtomicUsize,
    Ordering::{Acquire, Relaxed, Release},
};

use super::state::{stop, MAX_CLASSES, MAX_LOCKS};

/// How many bytes of a class's name are kept.
pub const NAME_BYTES: usize = 32;
/// How far from its hash a lock's slot may lie.
const PROBES: usize = 64;
/// A lock table slot whose lock was destroyed.
const DEAD: u32 = u32::MAX;
/// The index's size: twice the classes, so probe paths stay short.
const INDEX: usize = 2 * MAX_CLASSES;

/// What keys a class.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClassKind {
    /// The `init` call site of its locks.
    Initialised,
    /// The site of the first use of a lock that no `init` call made (a static
    /// initialiser on the heap or a stack).
    FirstUse,
    /// A global: the address of the lock, named by the symbol it lies in.
    Global,
    /// One lock, by its address (a Rust lock outside any global, unnamed).
    Address,
    /// A name given through the API.
    Named,
}

impl ClassKind {
    fn from_raw(raw: u8) -> ClassKind {
        match raw {
            1 => ClassKind::Initialised,
            2 => ClassKind::FirstUse,
            3 => ClassKind::Global,
            4 => ClassKind::Address,
            _ => ClassKind::Named,
        }
    }

    fn raw(self) -> u8 {
        match self {
            ClassKind::Initialised => 1,
            ClassKind::FirstUse => 2,
            ClassKind::Global => 3,
            ClassKind::Address => 4,
            ClassKind::Named => 5,
        }
    }
}

/// One class (index `id - 1` of [`Tables::classes`]).
struct Class {
    kind: AtomicU8,
    /// The site or address that keys it (0 for a named class).
    site: AtomicUsize,
    name: [AtomicU8; NAME_BYTES],
}

/// A slot of the key index.
struct IndexSlot {
    key: AtomicUsize,
    /// 0 until published.
    id: AtomicU32,
}

/// A slot of the lock table: 0 address, free; class 0, being filled; [`DEAD`],
/// destroyed.
struct LockSlot {
    lock: AtomicUsize,
    class: AtomicU32,
}

struct Tables {
    classes: &'static [Class],
    index: &'static [IndexSlot],
    locks: &'static [LockSlot],
}

static TABLES: std::sync::OnceLock<Tables> = std::sync::OnceLock::new();
/// Classes made so far.
static COUNT: AtomicU32 = AtomicU32::new(0);
/// Lock table slots in use.
static LIVE: AtomicUsize = AtomicUsize::new(0);

/// Maps `count` zeroed `T`s for the life of the process (address space reserved,
/// pages backed as touched); `None` if the mapping fails.
///
/// `T` must be valid when all its bytes are zero (atomics and arrays of them).
pub(super) fn map<T>(count: usize) -> Option<&'static [T]> {
    let bytes = count * std::mem::size_of::<T>();
    // SAFETY: a fresh private anonymous mapping, touching no existing memory.
    let base = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            bytes,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
            -1,
            0,
        )
    };
    if base == libc::MAP_FAILED {
        return None;
    }
    // SAFETY: `bytes` of zeroed memory, page-aligned, mapped for ever; the callers'
    // `T`s are valid all-zero (contract above).
    Some(unsafe { std::slice::from_raw_parts(base.cast::<T>(), count) })
}

/// Maps the tables (once).
pub(super) fn start() -> bool {
    if TABLES.get().is_some() {
        return true;
    }
    let (Some(classes), Some(index), Some(locks)) = (
        map::<Class>(MAX_CLASSES),
        map::<IndexSlot>(INDEX),
        map::<LockSlot>(MAX_LOCKS),
    ) else {
        return false;
    };
    let _ = TABLES.set(Tables {
        classes,
        index,
        locks,
    });
    true
}

#[inline(always)]
fn tables() -> Option<&'static Tables> {
    TABLES.get()
}

/// A word's hash, for both tables (Fibonacci hashing of the address bits that vary).
#[inline(always)]
fn hash(word: usize) -> usize {
    ((word as u64 ^ (word as u64 >> 29)).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 20) as usize
}

/// The class keyed by `key` (made `kind` at `site`, named `name`, if new); 0 past
/// the bound (the validator stops).
fn class_for(key: usize, kind: ClassKind, site: usize, name: &[u8]) -> u32 {
    let Some(tables) = tables() else { return 0 };
    let start = hash(key);
    for probe in 0..INDEX {
        let slot = &tables.index[(start + probe) % INDEX];
        // Acquire: pairs with the Release of the claim below, and of the id.
        let mut found = slot.key.load(Acquire);
        if found == 0 {
            // Acquire: as above, when another thread claimed it first.
            match slot.key.compare_exchange(0, key, Acquire, Acquire) {
                Ok(_) => return make(tables, slot, kind, site, name),
                Err(other) => found = other,
            }
        }
        if found == key {
            loop {
                // Acquire: pairs with the Release in `make`: the class's fields.
                let id = slot.id.load(Acquire);
                if id != 0 {
                    return id;
                }
                std::hint::spin_loop();
            }
        }
    }
    stop_at_bound();
    0
}

fn stop_at_bound() {
    stop("lockdep: the class table is full (4096 classes); validation stopped");
}

/// Makes the class of the index slot just claimed.
fn make(tables: &Tables, slot: &IndexSlot, kind: ClassKind, site: usize, name: &[u8]) -> u32 {
    // Relaxed: a unique number; the class is published by the id's Release.
    let id = COUNT.fetch_add(1, Relaxed) + 1;
    if id as usize > MAX_CLASSES {
        stop_at_bound();
        return 0;
    }
    let class = &tables.classes[id as usize - 1];
    // Relaxed, the fields: published by the Release below.
    class.kind.store(kind.raw(), Relaxed);
    class.site.store(site, Relaxed);
    for (byte, &from) in class.name.iter().zip(name) {
        byte.store(from, Relaxed);
    }
    // Release: pairs with the Acquire of the threads that find the key.
    slot.id.store(id, Release);
    id
}

/// Where `lock`'s slot is, or the slot it may take: `(found, claimable)`.
fn find(tables: &Tables, lock: usize) -> (Option<&LockSlot>, Option<&LockSlot>) {
    let start = hash(lock);
    let mut claimable = None;
    for probe in 0..PROBES {
        let slot = &tables.locks[(start + probe) % MAX_LOCKS];
        // Relaxed: the address alone is the key; its class is read with Acquire.
        let at = slot.lock.load(Relaxed);
        if at == lock {
            return (Some(slot), claimable);
        }
        if at == 0 {
            return (None, claimable.or(Some(slot)));
        }
        // Relaxed: a hint; the claim is a cmpxchg on the address.
        if claimable.is_none() && slot.class.load(Relaxed) == DEAD {
            claimable = Some(slot);
        }
    }
    (None, claimable)
}

/// Gives `lock` the class `class`.
fn set(lock: usize, class: u32) {
    let Some(tables) = tables() else { return };
    if class == 0 {
        return;
    }
    let (found, claimable) = find(tables, lock);
    if let Some(slot) = found {
        // Release: pairs with the Acquire in `of`.
        if slot.class.swap(class, Release) == DEAD {
            // Relaxed: a count for `usage`.
            LIVE.fetch_add(1, Relaxed);
        }
        return;
    }
    let Some(slot) = claimable else {
        return stop("lockdep: the lock table is full (1048576 live locks); validation stopped");
    };
    // Relaxed: the claim orders nothing; the class is published below.
    let old = slot.lock.load(Relaxed);
    if slot
        .lock
        .compare_exchange(old, lock, Relaxed, Relaxed)
        .is_ok()
    {
        // Relaxed: a count for `usage`.
        LIVE.fetch_add(1, Relaxed);
        // Release: pairs with the Acquire in `of`.
        slot.class.store(class, Release);
    } else {
        // Another lock took the slot at the same moment: look again.
        set(lock, class);
    }
}

/// `init` of `lock` at `site`: the site's class, or the global's if the lock is one
/// (a global is its own class, named by its symbol, wherever it is initialised).
pub(super) fn initialised(lock: usize, site: usize) {
    let class = if in_a_module(lock) {
        class_for(lock, ClassKind::Global, lock, &[])
    } else if site != 0 {
        class_for(site, ClassKind::Initialised, site, &[])
    } else {
        return;
    };
    set(lock, class);
}

/// Names `lock`'s class.
pub(super) fn name(lock: usize, name: &str) {
    let bytes = &name.as_bytes()[..name.len().min(NAME_BYTES)];
    let mut key = 0xCBF2_9CE4_8422_2325u64;
    for &byte in bytes {
        key = (key ^ u64::from(byte)).wrapping_mul(0x0000_0100_0000_01B3);
    }
    let key = (key as usize) | (1 << (usize::BITS - 1));
    let class = class_for(key, ClassKind::Named, 0, bytes);
    set(lock, class);
}

/// `lock` was destroyed.
pub(super) fn forget(lock: usize) {
    let Some(tables) = tables() else { return };
    if let (Some(slot), _) = find(tables, lock) {
        // Relaxed: the slot's next claim is a cmpxchg on its address; nobody reads a
        // destroyed lock's class.
        if slot.class.swap(DEAD, Relaxed) != DEAD {
            // Relaxed: a count.
            LIVE.fetch_sub(1, Relaxed);
        }
    }
}

/// `lock`'s class, made on its first use from `site` if no `init` gave it one; 0 if
/// the validator stopped.
#[inline]
pub(super) fn of(lock: usize, site: usize) -> u32 {
    let Some(tables) = tables() else { return 0 };
    let slot = &tables.locks[hash(lock) % MAX_LOCKS];
    // Relaxed: the key; Acquire: pairs with the Release in `set`.
    if slot.lock.load(Relaxed) == lock {
        let class = slot.class.load(Acquire);
        if class != 0 && class != DEAD {
            return class;
        }
    }
    of_slow(tables, lock, site)
}

#[cold]
fn of_slow(tables: &Tables, lock: usize, site: usize) -> u32 {
    if let (Some(slot), _) = find(tables, lock) {
        // Acquire: as in `of`.
        let class = slot.class.load(Acquire);
        if class != 0 && class != DEAD {
            return class;
        }
    }
    let class = if in_a_module(lock) {
        class_for(lock, ClassKind::Global, lock, &[])
    } else if site != 0 {
        class_for(site, ClassKind::FirstUse, site, &[])
    } else {
        class_for(lock, ClassKind::Address, lock, &[])
    };
    set(lock, class);
    class
}

/// Whether `address` lies in a loaded module (a global or static), as the loader
/// knows it (its own lock, not a pthread one).
fn in_a_module(address: usize) -> bool {
    // SAFETY: a zeroed Dl_info is valid; dladdr only reads the loader's tables.
    let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    unsafe { libc::dladdr(address as *const libc::c_void, &mut info) != 0 }
}

/// Classes made.
pub(super) fn count() -> usize {
    // Relaxed: a count.
    (COUNT.load(Relaxed) as usize).min(MAX_CLASSES)
}

/// Lock table slots in use.
pub(super) fn live_locks() -> usize {
    // Relaxed: a count.
    LIVE.load(Relaxed)
}

/// The class `id`'s kind, site and name.
pub(super) fn info(id: u32) -> (ClassKind, usize, String) {
    let Some(class) = tables().and_then(|t| t.classes.get((id as usize).wrapping_sub(1))) else {
        return (ClassKind::Address, 0, String::new());
    };
    // Relaxed: the class was published before its id was handed out.
    let kind = ClassKind::from_raw(class.kind.load(Relaxed));
    let name: Vec<u8> = class
        .name
        .iter()
        .map(|byte| byte.load(Relaxed))
        .take_while(|&byte| byte != 0)
        .collect();
    (
        kind,
        class.site.load(Relaxed),
        String::from_utf8_lossy(&name).into_owned(),
    )
}

/// The class `id`'s name into `out` (no allocation), its length.
pub(super) fn name_into(id: u32, out: &mut [u8; NAME_BYTES]) -> usize {
    let Some(class) = tables().and_then(|t| t.classes.get((id as usize).wrapping_sub(1))) else {
        return 0;
    };
    let mut len = 0;
    for (to, byte) in out.iter_mut().zip(&class.name) {
        // Relaxed: published before the id.
        *to = byte.load(Relaxed);
        if *to == 0 {
            break;
        }
        len += 1;
    }
    len
}

/// The class `id`'s kind and site, without allocating.
pub(super) fn kind_and_site(id: u32) -> (ClassKind, usize) {
    let Some(class) = tables().and_then(|t| t.classes.get((id as usize).wrapping_sub(1))) else {
        return (ClassKind::Address, 0);
    };
    // Relaxed: published before the id.
    (
        ClassKind::from_raw(class.kind.load(Relaxed)),
        class.site.load(Relaxed),
    )
}
