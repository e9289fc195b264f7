//! Build script: PyO3's `Py_3_*` / `Py_LIMITED_API` cfgs for this crate, so that code reading
//! CPython's string layout directly (`wsgi::app_head::latin1_bytes`) is compiled only where that
//! layout is public API (not under the stable ABI of the abi3 wheel, not on 3.14's changed
//! macros); and the link order of the functions a server runs (`text_order`).
use std::env;
use std::path::Path;
use std::process::Command;

fn main() {
    pyo3_build_config::use_pyo3_cfgs();
    text_order();
}

/// The functions a server process runs from start to serving (scripts/text_order.txt, written
/// by scripts/text_order.py from callgrind), laid out together at the start of the extension's
/// code: the kernel maps a library's code 64 kB around each page a process first runs, so
/// those few hundred functions spread over 5 MB of code made each process map 2.3 MB of it
/// (benchmarks/results/2026-11-27-rss2). Only the order changes, not the code.
///
/// Passed to the linker only where it is certainly LLD (rustc's own on x86_64 Linux since
/// 1.90), which reads `--symbol-ordering-file`: a linker set another way (maturin's zig, a
/// `linker` or `-fuse-ld` in the flags, an older rustc's `cc`) gets nothing, and a name the
/// file has that the build does not (another version of a dependency) is passed over.
fn text_order() {
    println!("cargo:rerun-if-env-changed=CARGO_TARGET_X86_64_UNKNOWN_LINUX_GNU_LINKER");
    let target = env::var("TARGET").unwrap_or_default();
    let flags = env::var("CARGO_ENCODED_RUSTFLAGS").unwrap_or_default();
    if target != "x86_64-unknown-linux-gnu"
        || env::var_os("CARGO_TARGET_X86_64_UNKNOWN_LINUX_GNU_LINKER").is_some()
        || flags.contains("linker")
        || flags.contains("fuse-ld")
        || !rustc_links_with_lld()
    {
        return;
    }
    let file = Path::new(&env::var("CARGO_MANIFEST_DIR").unwrap_or_default())
        .join("scripts")
        .join("text_order.txt");
    if file.is_file() {
        // Only for a file that is there (an sdist without scripts/ has none): cargo reruns a
        // build script at every build for a path that does not exist.
        println!("cargo:rerun-if-changed={}", file.display());
        println!(
            "cargo:rustc-cdylib-link-arg=-Wl,--symbol-ordering-file={}",
            file.display()
        );
        println!("cargo:rustc-cdylib-link-arg=-Wl,--no-warn-symbol-ordering");
    }
}

/// rustc 1.90 or later: it links x86_64 Linux code with its own LLD by default.
fn rustc_links_with_lld() -> bool {
    let rustc = env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let Ok(out) = Command::new(rustc).arg("-vV").output() else {
        return false;
    };
    let text = String::from_utf8_lossy(&out.stdout);
    let Some(release) = text.lines().find_map(|l| l.strip_prefix("release: ")) else {
        return false;
    };
    let mut parts = release
        .split(['.', '-'])
        .map(|p| p.parse::<u32>().unwrap_or(0));
    let (major, minor) = (parts.next().unwrap_or(0), parts.next().unwrap_or(0));
    (major, minor) >= (1, 90)
}
