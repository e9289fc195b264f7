//! Memory a process read while it started and will not read again, given back to the kernel
//! once, when its server starts serving (`Server.run`, src/server/mod.rs): the extension is
//! loaded and the app imported by then.
//!
//! The extension's relocation tables (`.rela.dyn`, `.rela.plt`): the loader reads them once
//! while it relocates this library (about 230 kB for the release build), and with immediate
//! binding (`-z now`, the build's default, DT_FLAGS BIND_NOW) never again. Their whole pages
//! are dropped with `madvise(MADV_DONTNEED)` where they lie in a read-only, file-backed part of
//! the library's mapping: such a page was never written, so dropping it loses nothing, and were
//! it read again (lazy binding reading `.rela.plt` in a build without `-z now`, a debugger) the
//! kernel faults the same bytes back in from the file. This matters in a worker, which loads the
//! extension after its fork (master.py): a process that inherited the relocated library from
//! its parent would not have touched the tables. About 0.2 MiB of VmRSS per worker:
//! benchmarks/results/2026-11-27-rsst has the figures, and why `malloc_trim` is not called here
//! (it moved nothing).

use std::sync::atomic::{AtomicBool, Ordering};

static DONE: AtomicBool = AtomicBool::new(false);

/// Give back, once per process, the start-up pages this module owns (see the module doc).
/// Inlined into its caller, `Server.run`, whose code pages are resident anyway (no `Once`: its
/// slow path is a function of its own, elsewhere in the code).
#[inline(always)]
pub fn give_back_startup_memory() {
    if DONE.swap(true, Ordering::Relaxed) {
        return;
    }
    #[cfg(all(target_os = "linux", target_pointer_width = "64"))]
    relocations::give_back();
}

#[cfg(all(target_os = "linux", target_pointer_width = "64"))]
mod relocations {
    //! Everything here is inlined into its one caller and reads only this library's own pages
    //! (its ELF and program headers, its dynamic section): a cold function of its own, or a
    //! walk over every loaded object's headers (`dl_iterate_phdr`), would fault in more pages
    //! (the kernel maps up to 16 neighbours of each faulted file page) than the tables give back:
    //! measured, benchmarks/results/2026-11-27-rsst.

    use libc::{c_void, Dl_info, Elf64_Ehdr, Elf64_Phdr, PF_W, PT_DYNAMIC, PT_LOAD};

    /// One entry of an ELF dynamic section (`Elf64_Dyn`; the libc crate has no type for it).
    #[repr(C)]
    struct Dyn {
        tag: i64,
        val: u64,
    }

    const DT_NULL: i64 = 0;
    const DT_PLTRELSZ: i64 = 2;
    const DT_RELA: i64 = 7;
    const DT_RELASZ: i64 = 8;
    const DT_TEXTREL: i64 = 22;
    const DT_JMPREL: i64 = 23;
    const DT_FLAGS: i64 = 30;
    const DF_TEXTREL: u64 = 0x4;

    /// Drop the resident pages of this library's relocation tables (module doc).
    #[inline(always)]
    pub(super) fn give_back() {
        // SAFETY: Dl_info is plain pointers, for which all zeroes is a valid value.
        let mut info: Dl_info = unsafe { std::mem::zeroed() };
        let probe = give_back as *const () as *const c_void;
        // SAFETY: dladdr only reads the loader's list and fills `info`, which lives across it.
        if unsafe { libc::dladdr(probe, &mut info) } == 0 || info.dli_fbase.is_null() {
            return;
        }
        let start = info.dli_fbase as usize;
        // SAFETY: dli_fbase is where this library's first segment is mapped; it is mapped while
        // this code runs, and an ELF header (64 bytes) is read only after its magic is checked.
        let ehdr = unsafe {
            if *(start as *const [u8; 4]) != *b"\x7fELF" {
                return;
            }
            &*(start as *const Elf64_Ehdr)
        };
        // SAFETY: the program headers lie inside the first segment at e_phoff (the first
        // PT_LOAD maps the file from offset 0, checked below before any other use), mapped.
        let phdrs = unsafe {
            std::slice::from_raw_parts(
                (start + ehdr.e_phoff as usize) as *const Elf64_Phdr,
                usize::from(ehdr.e_phnum),
            )
        };
        let page = page_size();
        let Some(first) = phdrs.iter().find(|p| p.p_type == PT_LOAD) else {
            return;
        };
        if first.p_offset != 0 {
            return;
        }
        let base = start - (first.p_vaddr as usize & !(page - 1));
        let Some(dynamic) = phdrs.iter().find(|p| p.p_type == PT_DYNAMIC) else {
            return;
        };
        // SAFETY: PT_DYNAMIC's address, relocated by the base, is this library's dynamic
        // section, an array of entries ended by DT_NULL (the ELF format), mapped while loaded.
        let tables = unsafe { read_dynamic((base + dynamic.p_vaddr as usize) as *const Dyn, base) };
        let Some(tables) = tables else {
            return; // text relocations: its read-only pages may have been written
        };
        for (at, len) in merge(tables).into_iter().flatten() {
            let from = (at + page - 1) & !(page - 1);
            let to = (at + len) & !(page - 1);
            let read_only_file = |p: &Elf64_Phdr| {
                p.p_type == PT_LOAD
                    && p.p_flags & PF_W == 0
                    && from >= base + p.p_vaddr as usize
                    && to <= base + (p.p_vaddr + p.p_filesz) as usize
            };
            if to > from && phdrs.iter().any(read_only_file) {
                // Why no bytes change: those pages were never written (the segment is not
                // writable and the library has no text relocations), so MADV_DONTNEED only drops
                // their page-table entries; a later read faults the same bytes back in.
                // SAFETY: [from, to) is whole pages of a read-only, file-backed PT_LOAD segment
                // of this library, which stays loaded while this code runs; see above.
                unsafe { libc::madvise(from as *mut c_void, to - from, libc::MADV_DONTNEED) };
            }
        }
    }

    /// The relocation tables named in a dynamic section, as (absolute address, length); None if
    /// the object has text relocations. glibc rewrites the section's addresses to absolute ones
    /// where it is writable, musl leaves them relative: a value below `base` is relative.
    ///
    /// # Safety
    /// `dynamic` points at a mapped dynamic section ended by a DT_NULL entry.
    #[inline(always)]
    unsafe fn read_dynamic(dynamic: *const Dyn, base: usize) -> Option<[(usize, usize); 2]> {
        let absolute = |v: u64| {
            if (v as usize) < base {
                base + v as usize
            } else {
                v as usize
            }
        };
        let (mut rela, mut relasz, mut jmprel, mut pltrelsz) = (0, 0, 0, 0);
        let mut entry = dynamic;
        loop {
            // SAFETY: the caller's promise: every entry up to DT_NULL is mapped.
            let d = unsafe { &*entry };
            match d.tag {
                DT_NULL => break,
                DT_RELA => rela = absolute(d.val),
                DT_RELASZ => relasz = d.val as usize,
                DT_JMPREL => jmprel = absolute(d.val),
                DT_PLTRELSZ => pltrelsz = d.val as usize,
                DT_TEXTREL => return None,
                DT_FLAGS if d.val & DF_TEXTREL != 0 => return None,
                _ => {}
            }
            // SAFETY: not past DT_NULL, which ends the array.
            entry = unsafe { entry.add(1) };
        }
        Some([(rela, relasz), (jmprel, pltrelsz)])
    }

    /// The two tables as ranges, one if they touch (`.rela.plt` follows `.rela.dyn` in the
    /// usual layout, and their shared page is then whole); empty ones left out.
    #[inline(always)]
    fn merge([a, b]: [(usize, usize); 2]) -> [Option<(usize, usize)>; 2] {
        let keep = |r: (usize, usize)| (r.1 > 0).then_some(r);
        if a.1 > 0 && b.1 > 0 && a.0 + a.1 == b.0 {
            return [Some((a.0, a.1 + b.1)), None];
        }
        [keep(a), keep(b)]
    }

    #[inline(always)]
    fn page_size() -> usize {
        // SAFETY: sysconf reads a system constant and touches no memory of ours.
        let n = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
        usize::try_from(n).unwrap_or(4096)
    }
}
