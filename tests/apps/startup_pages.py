"""Answers how many of the extension's relocation-table pages are resident in the process
serving it, as `resident/total`: the whole pages of `.rela.dyn` and `.rela.plt` (found in the
section headers of the `_core` file this process maps), looked up in /proc/self/pagemap, whose
present bit (bit 63) any process may read for itself. The server gives those pages back once it
serves (src/server/memory.rs)."""

import mmap
import os
import struct

PAGE = mmap.PAGESIZE
RELA_SECTIONS = (b".rela.dyn", b".rela.plt")


def core_mapping():
    """(the `_core` file's path, the address its offset 0 is mapped at)."""
    with open("/proc/self/maps") as f:
        for line in f:
            fields = line.split()
            if len(fields) >= 6 and "/_core." in fields[5] and int(fields[2], 16) == 0:
                return fields[5], int(fields[0].split("-")[0], 16)
    raise RuntimeError("the extension is not mapped")


def rela_ranges(path):
    """The (address, size) of the relocation sections, relative to the load address."""
    with open(path, "rb") as f:
        data = f.read()
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)

    def header(i):  # sh_name, sh_type, sh_flags, sh_addr, sh_offset, sh_size
        return struct.unpack_from("<IIQQQQ", data, shoff + i * shentsize)

    names_at = header(shstrndx)[4]
    out = []
    for i in range(shnum):
        name_off, _, _, addr, _, size = header(i)
        name = data[names_at + name_off:data.index(b"\0", names_at + name_off)]
        if name in RELA_SECTIONS and size:
            out.append((addr, size))
    return out


def resident_pages():
    """(resident, total) over the whole pages the relocation sections cover."""
    path, base = core_mapping()
    pages = set()
    for addr, size in rela_ranges(path):
        first = -(-(base + addr) // PAGE)
        last = (base + addr + size) // PAGE
        pages.update(range(first, last))
    fd = os.open("/proc/self/pagemap", os.O_RDONLY)
    try:
        resident = sum(struct.unpack("<Q", os.pread(fd, 8, p * 8))[0] >> 63 for p in pages)
    finally:
        os.close(fd)
    return resident, len(pages)


def app(environ, start_response):
    body = "{}/{}".format(*resident_pages()).encode()
    start_response("200 OK", [("Content-Type", "text/plain"),
                              ("Content-Length", str(len(body)))])
    return [body]
