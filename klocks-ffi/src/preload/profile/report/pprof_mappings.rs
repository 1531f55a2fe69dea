//! The modules loaded at exit, for the pprof profile's mappings: each module's path,
//! its GNU build ID and its executable segments, read from the loader's list
//! (`dl_iterate_phdr`, the program first) and the modules' mapped program headers.
//! The build ID is read from the `NT_GNU_BUILD_ID` note in the module's `PT_NOTE`
//! segment, in memory: no file is opened, so a module deleted or replaced on disk
//! since it was loaded is still named by the build that ran. Allocates (at exit,
//! from the arena).

use object::elf;
use object::read::elf::NoteIterator;
use object::NativeEndian;

/// 64-bit ELF: the preload's object layouts are x86-64's.
type Elf = elf::FileHeader64<NativeEndian>;

/// One loaded module.
pub(super) struct Module {
    /// Its path as the loader has it; the program's is its executable's real path.
    pub(super) path: String,
    /// Its GNU build ID in lowercase hex; empty if it has none.
    pub(super) build_id: String,
    /// Its executable segments, each as `/proc/self/maps` shows it: page-aligned,
    /// with the file offset of its first byte.
    pub(super) segments: Vec<Segment>,
}

/// A mapped range of a module's file.
#[derive(Clone, Copy)]
pub(super) struct Segment {
    pub(super) start: u64,
    pub(super) limit: u64,
    pub(super) offset: u64,
}

/// Every loaded module that has executable code, the program first.
pub(super) fn loaded() -> Vec<Module> {
    extern "C" fn each(
        module: *mut libc::dl_phdr_info,
        _: usize,
        found: *mut libc::c_void,
    ) -> libc::c_int {
        // SAFETY: `found` is the vector `loaded` passes, borrowed for the iteration;
        // the loader calls back on the calling thread only.
        let found = unsafe { &mut *found.cast::<Vec<Module>>() };
        // SAFETY: the loader passes a valid entry for the call's duration.
        let module = unsafe { &*module };
        if let Some(read) = read(module, found.is_empty()) {
            found.push(read);
        }
        0
    }
    let mut found = Vec::<Module>::new();
    // SAFETY: the callback reads only the entries the loader passes, and `found`
    // outlives the call.
    unsafe { libc::dl_iterate_phdr(Some(each), (&raw mut found).cast()) };
    found
}

/// The page size, to align segments as the kernel maps them.
fn page() -> u64 {
    // SAFETY: no preconditions.
    match unsafe { libc::sysconf(libc::_SC_PAGESIZE) } {
        size if size > 0 => size as u64,
        _ => 4096,
    }
}

/// The module of one loader entry (`first`: the loader's first, the program); `None`
/// if it has no executable segment.
fn read(module: &libc::dl_phdr_info, first: bool) -> Option<Module> {
    let base = module.dlpi_addr;
    let page = page();
    // SAFETY: `dlpi_phnum` headers at `dlpi_phdr`, valid during the callback.
    let headers = unsafe { std::slice::from_raw_parts(module.dlpi_phdr, module.dlpi_phnum.into()) };
    let segments: Vec<Segment> = headers
        .iter()
        .filter(|header| header.p_type == libc::PT_LOAD && header.p_flags & libc::PF_X != 0)
        .map(|header| {
            let start = base + header.p_vaddr;
            let aligned = start & !(page - 1);
            Segment {
                start: aligned,
                limit: (start + header.p_memsz).next_multiple_of(page),
                offset: header.p_offset.saturating_sub(start - aligned),
            }
        })
        .collect();
    if segments.is_empty() {
        return None;
    }
    let name = if module.dlpi_name.is_null() {
        Default::default()
    } else {
        // SAFETY: a NUL-terminated string that lives while the module is loaded.
        unsafe { std::ffi::CStr::from_ptr(module.dlpi_name) }.to_string_lossy()
    };
    let path = if name.is_empty() && first {
        // The program's entry has no name: its executable, by its real path.
        std::fs::read_link("/proc/self/exe")
            .map(|path| path.to_string_lossy().into_owned())
            .unwrap_or_default()
    } else {
        name.into_owned()
    };
    let build_id = build_id(base, headers).unwrap_or_default();
    Some(Module {
        path,
        build_id,
        segments,
    })
}

/// The module's GNU build ID, from the `NT_GNU_BUILD_ID` note of a `PT_NOTE` segment
/// that lies in a loaded segment's file-backed bytes (so it is in memory), in
/// lowercase hex.
fn build_id(base: u64, headers: &[libc::Elf64_Phdr]) -> Option<String> {
    let mapped = |from: u64, to: u64| {
        headers.iter().any(|header| {
            header.p_type == libc::PT_LOAD
                && header.p_vaddr <= from
                && to <= header.p_vaddr + header.p_filesz
        })
    };
    for header in headers
        .iter()
        .filter(|header| header.p_type == libc::PT_NOTE)
    {
        if !mapped(header.p_vaddr, header.p_vaddr + header.p_memsz) {
            continue;
        }
        // SAFETY: the segment lies in a loaded segment's file-backed bytes (checked
        // above), mapped for as long as the module stays loaded: at least until the
        // loader's callback returns (it holds the lock `dlclose` takes).
        let notes: &[u8] = unsafe {
            std::slice::from_raw_parts(
                (base + header.p_vaddr) as *const u8,
                header.p_memsz as usize,
            )
        };
        let Ok(mut notes) = NoteIterator::<Elf>::new(NativeEndian, header.p_align, notes) else {
            continue;
        };
        while let Ok(Some(note)) = notes.next() {
            if note.name() == elf::ELF_NOTE_GNU
                && note.n_type(NativeEndian) == elf::NT_GNU_BUILD_ID
                && !note.desc().is_empty()
            {
                let hex = note.desc().iter().fold(String::new(), |mut hex, byte| {
                    use std::fmt::Write;
                    let _ = write!(hex, "{byte:02x}");
                    hex
                });
                return Some(hex);
            }
        }
    }
    None
}
