//! Names for addresses, at exit: a return address as `file:line (function)` from the
//! debug information, else `module+offset (function)` with the function from the
//! module's symbol table (or the dynamic symbols `dladdr` reads); a lock's address as
//! the data symbol it lies in. Everything here allocates (it reads modules' files), so
//! only the report at exit resolves; the one a signal asks for prints addresses.

use std::ffi::{c_void, CStr};
use std::fmt::{self, Write};

use object::read::ReadCache;

use super::super::units::Buffer;
use super::summary::Sites;

/// What is known of one return address.
pub(super) struct Resolved {
    /// The function, demangled; empty if unknown. With inlining, the innermost
    /// inlined function whose code this is.
    pub(super) function: Buffer<256>,
    /// The function `function` was inlined into (the one the machine code belongs
    /// to); empty if none.
    pub(super) inlined_into: Buffer<256>,
    /// The source file's name (no directory) and line; empty and 0 without debug
    /// information.
    pub(super) file: Buffer<256>,
    pub(super) line: u32,
    /// The module's file name (no directory) and the address's offset in it; empty if
    /// the address is in no loaded module.
    pub(super) module: Buffer<128>,
    pub(super) offset: usize,
}

/// Resolves the return address `site` (the call instruction just before it).
pub(super) fn resolve(site: usize) -> Resolved {
    let mut resolved = Resolved {
        function: Buffer::new(),
        inlined_into: Buffer::new(),
        file: Buffer::new(),
        line: 0,
        module: Buffer::new(),
        offset: 0,
    };
    let call = site.wrapping_sub(1) as *mut c_void;
    let mut named = Buffer::<256>::new();
    // The symbols come innermost inlined function first, the real function last.
    let mut outermost = Buffer::<256>::new();
    let mut symbols = 0;
    backtrace::resolve(call, |symbol| {
        symbols += 1;
        if let Some(function) = symbol.name() {
            outermost.len = 0;
            let _ = write!(outermost, "{function:#}");
        }
        if resolved.line == 0 {
            if let (Some(file), Some(line)) = (symbol.filename(), symbol.lineno()) {
                let name = file.file_name().map_or(file.as_os_str(), |n| n);
                let _ = write!(resolved.file, "{}", name.to_string_lossy());
                resolved.line = line;
                if let Some(function) = symbol.name() {
                    let _ = write!(resolved.function, "{function:#}");
                }
            }
        }
        if named.len == 0 {
            if let Some(function) = symbol.name() {
                let _ = write!(named, "{function:#}");
            }
        }
    });
    if resolved.function.len == 0 {
        resolved.function = named;
    }
    if symbols > 1 && outermost.as_str() != resolved.function.as_str() {
        resolved.inlined_into = outermost;
    }
    // SAFETY: a zeroed Dl_info is valid; dladdr only reads the loader's tables.
    let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    if unsafe { libc::dladdr(site as *const c_void, &mut info) } != 0 && !info.dli_fname.is_null() {
        // SAFETY: dladdr's strings are NUL-terminated and live while the object is
        // loaded.
        let module = unsafe { CStr::from_ptr(info.dli_fname) }.to_string_lossy();
        let _ = resolved
            .module
            .write_str(module.rsplit('/').next().unwrap_or("?"));
        resolved.offset = site - info.dli_fbase as usize;
        if resolved.function.len == 0 && !info.dli_sname.is_null() {
            // SAFETY: as above.
            let symbol = unsafe { CStr::from_ptr(info.dli_sname) }.to_string_lossy();
            let _ = resolved.function.write_str(&symbol);
        }
    }
    resolved
}

/// Prints where a lock was initialised (`is_init`) or first locked.
pub(super) fn write_site(
    out: &mut impl Write,
    site: usize,
    is_init: bool,
    sites: Sites,
) -> fmt::Result {
    if site == 0 {
        return out.write_str("(site unknown)");
    }
    let how = if is_init {
        "initialised at"
    } else {
        "first locked at"
    };
    write!(out, "{how} ")?;
    write_code(out, site, sites)
}

/// Prints the place in the code a call returns to: `file:line (function)`, or
/// `module+offset (function)` without line information (a program's own functions
/// are named from its symbol table, so no `-rdynamic` is needed); the bare address if
/// `sites` is [`Sites::Raw`] or the address is in no module.
pub(super) fn write_code(out: &mut impl Write, site: usize, sites: Sites) -> fmt::Result {
    if sites == Sites::Raw {
        return write!(out, "{site:#x}");
    }
    let code = resolve(site);
    if code.line != 0 {
        write!(out, "{}:{}", code.file.as_str(), code.line)?;
    } else if code.module.len != 0 {
        write!(out, "{}+{:#x}", code.module.as_str(), code.offset)?;
    } else {
        return write!(out, "{site:#x}");
    }
    if code.function.len != 0 {
        write!(out, " ({}", code.function.as_str())?;
        if code.inlined_into.len != 0 {
            write!(out, " inlined in {}", code.inlined_into.as_str())?;
        }
        out.write_char(')')?;
    }
    Ok(())
}

/// Names the lock at `lock` by the data symbol it lies in (a global or static lock,
/// or one inside a global array or structure), as `lock name[+offset]`; `false` if
/// none (a lock on the heap or a stack).
pub(super) fn write_data_symbol(out: &mut impl Write, lock: usize) -> Result<bool, fmt::Error> {
    let Some((name, offset)) = data_symbol(lock) else {
        return Ok(false);
    };
    write!(out, "lock {name}")?;
    if offset != 0 {
        write!(out, "+{offset:#x}")?;
    }
    Ok(true)
}

/// The data symbol that holds `address`, and the offset into it, read from the
/// symbol table of the module the address lies in (`.symtab`, else `.dynsym`), or of
/// its separate debug file if it was stripped ([`separate_debug_file`]): a program's
/// own variables are in no table the dynamic loader reads unless it was linked with
/// `-rdynamic`, and the debug information, when there is some, names functions and
/// lines, not variables. Allocates (it reads the module's headers and symbol tables,
/// on demand: a debug file may be gigabytes).
pub(super) fn data_symbol(address: usize) -> Option<(String, usize)> {
    use object::{Object, ObjectKind};
    // SAFETY: a zeroed Dl_info is valid; dladdr only reads the loader's tables.
    let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    if unsafe { libc::dladdr(address as *const c_void, &mut info) } == 0 || info.dli_fname.is_null()
    {
        return None;
    }
    // SAFETY: dladdr's strings are NUL-terminated and live while the object is loaded.
    let path = unsafe { CStr::from_ptr(info.dli_fname) }.to_str().ok()?;
    // The main program's name is empty in the loader's list.
    let path = if path.is_empty() {
        "/proc/self/exe"
    } else {
        path
    };
    let module = ReadCache::new(std::fs::File::open(path).ok()?);
    let file = object::File::parse(&module).ok()?;
    // A position-independent module's symbols are relative to where it was loaded.
    let bias = match file.kind() {
        ObjectKind::Dynamic => info.dli_fbase as usize,
        _ => 0,
    };
    let at = address.wrapping_sub(bias) as u64;
    if let Some(found) = data_symbol_in(&file, at) {
        return Some(found);
    }
    let debug = separate_debug_file(path, &file)?;
    // The debug file keeps the module's addresses.
    data_symbol_in(&object::File::parse(&debug).ok()?, at)
}

/// The data symbol of `file`'s symbol tables that holds the module address `at`, and
/// the offset into it.
fn data_symbol_in<'a>(
    file: &object::File<'a, &'a ReadCache<std::fs::File>>,
    at: u64,
) -> Option<(String, usize)> {
    use object::{Object, ObjectSymbol, SymbolKind};
    let found = file
        .symbols()
        .chain(file.dynamic_symbols())
        .find(|symbol| {
            symbol.kind() == SymbolKind::Data
                && symbol.address() <= at
                && at < symbol.address() + symbol.size().max(1)
        })?;
    let name = found.name().ok()?;
    Some((name.to_owned(), (at - found.address()) as usize))
}

/// Where a stripped module's symbol table went: its separate debug file (a
/// distribution's debug package, or `objcopy --only-keep-debug`), looked for as gdb
/// does: by build ID, `/usr/lib/debug/.build-id/ab/cdef….debug`, then by the name its
/// `.gnu_debuglink` gives, beside the module, in `.debug/` beside it, and under
/// `/usr/lib/debug` followed by the module's directory. A file whose build ID is not
/// the module's is another build's, and skipped.
fn separate_debug_file<'a>(
    path: &str,
    file: &object::File<'a, &'a ReadCache<std::fs::File>>,
) -> Option<ReadCache<std::fs::File>> {
    use object::Object;
    use std::path::{Path, PathBuf};
    let id = file.build_id().ok().flatten().filter(|id| id.len() > 1);
    let ours = |debug: &ReadCache<std::fs::File>| {
        let theirs = object::File::parse(debug)
            .ok()
            .and_then(|debug| debug.build_id().ok().flatten().map(<[u8]>::to_vec));
        match (id, theirs) {
            (Some(id), Some(theirs)) => id == theirs.as_slice(),
            _ => true,
        }
    };
    let mut candidates = Vec::<PathBuf>::new();
    if let Some(id) = id {
        let hex: String = id.iter().map(|byte| format!("{byte:02x}")).collect();
        candidates
            .push(format!("/usr/lib/debug/.build-id/{}/{}.debug", &hex[..2], &hex[2..]).into());
    }
    if let Some((name, _crc)) = file.gnu_debuglink().ok().flatten() {
        let name = Path::new(std::str::from_utf8(name).ok()?);
        // `/proc/self/exe` names the program by its link: its directory is the real one's.
        let real = std::fs::canonicalize(path).ok()?;
        let dir = real.parent()?;
        candidates.push(dir.join(name));
        candidates.push(dir.join(".debug").join(name));
        candidates.push(
            Path::new("/usr/lib/debug")
                .join(dir.strip_prefix("/").ok()?)
                .join(name),
        );
    }
    candidates
        .into_iter()
        .filter_map(|candidate| std::fs::File::open(candidate).ok())
        .map(ReadCache::new)
        .find(ours)
}
