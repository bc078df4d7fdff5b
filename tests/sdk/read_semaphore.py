# SPDX-License-Identifier: Apache-2.0
"""Prints the value of USDT semaphores in a running process, read from /proc/PID/mem the way a
tracer finds them: the symbol's address (nm) -> file offset (ELF program headers) -> the
process's mapping of that file (/proc/PID/maps).

    read_semaphore.py PID ELF SYMBOL...   ->   one "SYMBOL VALUE" line each
"""

import os
import struct
import subprocess
import sys


def symbol_values(elf):
    out = subprocess.run(["nm", elf], capture_output=True, text=True, check=True).stdout
    return {parts[2]: int(parts[0], 16) for parts in (l.split() for l in out.splitlines())
            if len(parts) == 3}


def load_segments(elf):
    """(vaddr, file offset, file size) of each PT_LOAD segment of an ELF64 file."""
    with open(elf, "rb") as f:
        data = f.read()
    phoff, = struct.unpack_from("<Q", data, 0x20)
    phentsize, phnum = struct.unpack_from("<HH", data, 0x36)
    segments = []
    for n in range(phnum):
        p_type, _, p_offset, p_vaddr, _, p_filesz = struct.unpack_from(
            "<IIQQQQ", data, phoff + n * phentsize)
        if p_type == 1:
            segments.append((p_vaddr, p_offset, p_filesz))
    return segments


def runtime_address(pid, elf, vaddr):
    fileoff = next(off + vaddr - va for va, off, size in load_segments(elf)
                   if va <= vaddr < va + size)
    path = os.path.realpath(elf)
    with open(f"/proc/{pid}/maps") as maps:
        for line in maps:
            fields = line.split()
            if len(fields) < 6 or fields[5] != path:
                continue
            start, end = (int(x, 16) for x in fields[0].split("-"))
            offset = int(fields[2], 16)
            if offset <= fileoff < offset + (end - start):
                return start + fileoff - offset
    raise SystemExit(f"{path} offset {fileoff:#x} is not mapped in process {pid}")


def main():
    pid, elf, names = int(sys.argv[1]), sys.argv[2], sys.argv[3:]
    values = symbol_values(elf)
    with open(f"/proc/{pid}/mem", "rb") as mem:
        for name in names:
            mem.seek(runtime_address(pid, elf, values[name]))
            print(name, struct.unpack("<H", mem.read(2))[0])


if __name__ == "__main__":
    main()
