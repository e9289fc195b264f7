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

use std::sync::Once;

static ONCE: Once = Once::new();

/// Give back, once per process, the start-up pages this module owns (see the module doc).
pub fn give_back_startup_memory() {
    ONCE.call_once(|| {
        #[cfg(all(target_os = "linux", target_pointer_width = "64"))]
        relocations::give_back();
    });
}

#[cfg(all(target_os = "linux", target_pointer_width = "64"))]
mod relocations {
    use libc::{c_int, c_void, dl_phdr_info, size_t, Elf64_Phdr, PF_W, PT_DYNAMIC, PT_LOAD};

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

    /// What the walk over the loaded objects found for this library.
    struct Found {
        /// An address inside this library, to recognise it by.
        probe: usize,
        /// The byte ranges (absolute addresses) that may be dropped, page-aligned inward.
        ranges: Vec<(usize, usize)>,
    }

    /// Drop the resident pages of this library's relocation tables (module doc).
    pub(super) fn give_back() {
        let mut found = Found {
            probe: give_back as *const () as usize,
            ranges: Vec::new(),
        };
        // SAFETY: dl_iterate_phdr calls `visit` for each loaded object, with the loader's lock
        // held, and passes back the pointer it was given: `found`, which outlives the call and
        // is used by nothing else meanwhile.
        unsafe { libc::dl_iterate_phdr(Some(visit), &mut found as *mut Found as *mut c_void) };
        for (start, len) in found.ranges {
            // SAFETY: [start, start + len) is made of whole pages of a read-only PT_LOAD segment
            // of this library, inside its file-backed part (`visit` checked it), and the library
            // stays loaded while this code runs. Those pages were never written (the segment is
            // not writable and the library has no text relocations), so MADV_DONTNEED only drops
            // their page-table entries: a later read faults the same bytes back in from the file.
            unsafe { libc::madvise(start as *mut c_void, len, libc::MADV_DONTNEED) };
        }
    }

    /// dl_iterate_phdr's callback: on this library's entry, fill `data` (a `Found`) and stop.
    unsafe extern "C" fn visit(info: *mut dl_phdr_info, _size: size_t, data: *mut c_void) -> c_int {
        // SAFETY: `data` is the `Found` given to dl_iterate_phdr by give_back, alone in use.
        let found = unsafe { &mut *(data as *mut Found) };
        // SAFETY: the loader passes a valid entry whose `dlpi_phdr` points at `dlpi_phnum`
        // program headers of a loaded object, valid during the call.
        let (base, phdrs) = unsafe {
            let info = &*info;
            let n = usize::from(info.dlpi_phnum);
            (
                info.dlpi_addr as usize,
                std::slice::from_raw_parts(info.dlpi_phdr, n),
            )
        };
        let holds = |p: &Elf64_Phdr, at: usize, len: usize| {
            p.p_type == PT_LOAD
                && at >= base + p.p_vaddr as usize
                && at + len <= base + (p.p_vaddr + p.p_memsz) as usize
        };
        if !phdrs.iter().any(|p| holds(p, found.probe, 1)) {
            return 0; // another object: go on
        }
        let Some(dynamic) = phdrs.iter().find(|p| p.p_type == PT_DYNAMIC) else {
            return 1;
        };
        // SAFETY: PT_DYNAMIC's address, relocated by the object's base, is its dynamic section
        // in memory, an array of entries ended by DT_NULL (the ELF format), mapped while loaded.
        let tables = unsafe { read_dynamic((base + dynamic.p_vaddr as usize) as *const Dyn, base) };
        let Some(tables) = tables else {
            return 1; // text relocations: its read-only pages may have been written
        };
        let page = page_size();
        for (at, len) in merge(tables) {
            let start = (at + page - 1) & !(page - 1);
            let end = (at + len) & !(page - 1);
            let read_only_file = |p: &&Elf64_Phdr| {
                p.p_type == PT_LOAD
                    && p.p_flags & PF_W == 0
                    && start >= base + p.p_vaddr as usize
                    && end <= base + (p.p_vaddr + p.p_filesz) as usize
            };
            if end > start && phdrs.iter().find(read_only_file).is_some() {
                found.ranges.push((start, end - start));
            }
        }
        1
    }

    /// The relocation tables named in a dynamic section, as (absolute address, length); None if
    /// the object has text relocations. glibc rewrites the section's addresses to absolute ones
    /// where it is writable, musl leaves them relative: a value below `base` is relative.
    ///
    /// # Safety
    /// `dynamic` points at a mapped dynamic section ended by a DT_NULL entry.
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
    fn merge([a, b]: [(usize, usize); 2]) -> Vec<(usize, usize)> {
        match (a.1, b.1) {
            (0, 0) => vec![],
            (_, 0) => vec![a],
            (0, _) => vec![b],
            _ if a.0 + a.1 == b.0 => vec![(a.0, a.1 + b.1)],
            _ => vec![a, b],
        }
    }

    fn page_size() -> usize {
        // SAFETY: sysconf reads a system constant and touches no memory of ours.
        let n = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
        usize::try_from(n).unwrap_or(4096)
    }
}
