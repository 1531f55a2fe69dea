//! Names for addresses, at exit: a return address as `file:line (function)` from the
//! debug information, else `module+offset (function)` with the function from the
//! module's symbol table (or the dynamic symbols `dladdr` reads); a lock's address as
//! the data symbol it lies in. Everything here allocates (it reads modules' files), so
//! only the report at exit resolves, with the `arena`'s memory; the one a signal asks
//! for prints addresses. Nothing here calls the C library's allocator: not `realpath`
//! (a link is resolved with `readlink`, [`real_path`]), and not `backtrace` for a
//! module that links a separate debug file (it would look for it with `realpath`):
//! such a module's sites are `module+offset (function)`, the function from its
//! symbol tables or its debug file's.

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
    // Not in a module with a separate debug file's link: `backtrace` would look for
    // that file with `fs::canonicalize`, the C library's `realpath`, which allocates
    // with `malloc` (the report must not: `arena`). Such a module's sites are named
    // from its symbol tables, or its debug file's, below (no file and line).
    let linked = module_of(site).is_some_and(|(path, _)| has_debug_link(&path));
    let resolve = |call, each: &mut dyn FnMut(&backtrace::Symbol)| {
        if !linked {
            backtrace::resolve(call, each);
        }
    };
    resolve(call, &mut |symbol| {
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
    if linked && named.len == 0 {
        if let Some((function, _)) = symbol_at(site.wrapping_sub(1), object::SymbolKind::Text) {
            let _ = write!(
                named,
                "{:#}",
                backtrace::SymbolName::new(function.as_bytes())
            );
        }
    }
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

/// The path of the module `address` lies in (the running program's as
/// `/proc/self/exe`), and where it was loaded; `None` if in none.
fn module_of(address: usize) -> Option<(String, usize)> {
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
    Some((path.to_owned(), info.dli_fbase as usize))
}

/// Whether the module at `path` names a separate debug file by `.gnu_debuglink`
/// (a stripped build: a distribution's libraries).
fn has_debug_link(path: &str) -> bool {
    use object::Object;
    let Ok(module) = std::fs::File::open(path) else {
        return false;
    };
    let module = ReadCache::new(module);
    object::File::parse(&module).is_ok_and(|file| file.section_by_name(".gnu_debuglink").is_some())
}

/// `path` with every symbolic link resolved, as `fs::canonicalize` gives it but
/// without the C library's `realpath` (which allocates with `malloc`): each
/// component's link is read with `readlink`, up to 40 links (the kernel's limit).
fn real_path(path: &str) -> Option<std::path::PathBuf> {
    use std::path::{Component, Path, PathBuf};
    let mut pending: Vec<PathBuf> = vec![PathBuf::from(path)];
    let mut real = PathBuf::from("/");
    let mut links = 0;
    while let Some(next) = pending.pop() {
        let mut rest = next.components().peekable();
        while let Some(part) = rest.next() {
            match part {
                Component::RootDir => real = PathBuf::from("/"),
                Component::CurDir | Component::Prefix(_) => {}
                Component::ParentDir => {
                    real.pop();
                }
                Component::Normal(name) => {
                    let candidate = real.join(name);
                    match std::fs::read_link(&candidate) {
                        Ok(target) => {
                            links += 1;
                            if links > 40 {
                                return None;
                            }
                            let remaining: PathBuf = rest.collect();
                            if !remaining.as_os_str().is_empty() {
                                pending.push(remaining);
                            }
                            if target.is_absolute() {
                                real = PathBuf::from("/");
                            }
                            pending.push(target);
                            break;
                        }
                        Err(_) => real = candidate,
                    }
                }
            }
        }
    }
    Path::new(&real).exists().then_some(real)
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
pub(in crate::preload::profile) fn write_code(
    out: &mut impl Write,
    site: usize,
    sites: Sites,
) -> fmt::Result {
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
pub(in crate::preload::profile) fn write_data_symbol(
    out: &mut impl Write,
    lock: usize,
) -> Result<bool, fmt::Error> {
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
    symbol_at(address, object::SymbolKind::Data)
}

/// The symbol of `kind` that holds `address`, and the offset into it, from the
/// symbol tables of its module or of the module's separate debug file (as
/// [`data_symbol`]).
fn symbol_at(address: usize, kind: object::SymbolKind) -> Option<(String, usize)> {
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
    if let Some(found) = symbol_in(&file, at, kind) {
        return Some(found);
    }
    let debug = separate_debug_file(path, &file)?;
    // The debug file keeps the module's addresses.
    symbol_in(&object::File::parse(&debug).ok()?, at, kind)
}

/// The symbol of `kind` in `file`'s symbol tables that holds the module address
/// `at`, and the offset into it.
fn symbol_in<'a>(
    file: &object::File<'a, &'a ReadCache<std::fs::File>>,
    at: u64,
    kind: object::SymbolKind,
) -> Option<(String, usize)> {
    use object::{Object, ObjectSymbol};
    let found = file
        .symbols()
        .chain(file.dynamic_symbols())
        .find(|symbol| {
            symbol.kind() == kind
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
        let real = real_path(path)?;
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

#[cfg(test)]
mod tests {
    use super::*;

    /// `real_path` agrees with `fs::canonicalize` (the control, which calls
    /// `realpath`) on links of every kind: a link to an absolute path, a relative
    /// one, a link in a directory of the path, `..`.
    #[test]
    fn real_path_resolves_links_as_realpath_does() {
        let dir = std::env::temp_dir().join(format!("klocks-real-path-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("a/b")).unwrap();
        std::fs::write(dir.join("a/b/file"), b"").unwrap();
        std::os::unix::fs::symlink(dir.join("a"), dir.join("abs")).unwrap();
        std::os::unix::fs::symlink("a/b", dir.join("rel")).unwrap();
        std::os::unix::fs::symlink("../b/file", dir.join("a/b/up")).unwrap();
        for path in [
            "/proc/self/exe".to_owned(),
            format!("{}/abs/b/file", dir.display()),
            format!("{}/rel/file", dir.display()),
            format!("{}/rel/up", dir.display()),
            format!("{}/a/../rel/./file", dir.display()),
        ] {
            assert_eq!(
                real_path(&path),
                std::fs::canonicalize(&path).ok(),
                "{path}"
            );
        }
        assert_eq!(real_path(&format!("{}/missing", dir.display())), None);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
