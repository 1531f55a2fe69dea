//! Gives `libklocks.so` a soname with the ABI's version, `libklocks.so.<major>`, so
//! that a program linked against it asks the dynamic loader for that ABI and an
//! installed library can be upgraded beside it (`scripts/install-c` installs the
//! versioned file and its links). The major version changes when the ABI does
//! (object sizes, function signatures, errno contracts).

fn main() {
    let major = std::env::var("CARGO_PKG_VERSION_MAJOR")
        .expect("cargo sets CARGO_PKG_VERSION_MAJOR for build scripts");
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libklocks.so.{major}");
    println!("cargo:rerun-if-changed=build.rs");
}
