#!/usr/bin/python3
"""Finds the GPU code embedded in an executable (or object) that
`tgc build --target cuda` (or `tgc compile`) wrote, without CUDA's tools.

tgc embeds each CUBIN and the PTX as plain byte arrays (runtime/tgcrt.h,
RtCudaImage), so they lie in the host file as they are:
  - a CUBIN is an ELF image with e_machine 190 (EM_CUDA). Its size is not
    stored anywhere, so it is taken as the furthest byte any of its tables
    reach: the end of the section header table (where nvcc and NVRTC put
    it), of the program header table, and of every section's data. Every
    `\\x7fELF` after offset 0 whose header parses (ELF64, little-endian,
    EM_CUDA, tables inside the file) is one image.
  - PTX is NUL-terminated text: every NUL-delimited run of bytes that
    holds `.version`, `.target` and `.address_size` lines is one PTX.

The architecture of a CUBIN is in e_flags. CUDA 13 writes EI_ABIVERSION 8
(OS/ABI 0x41) and the SM number in bits 8-15 (sm_80: 0x6005004, sm_90:
0x6005a04 from nvcc and NVRTC 13.0 alike); older toolkits wrote ABI
version 7 and the SM number in bits 0-7 (sm_80: 0x500550). sm_of() decodes
both.

Usage: cudabin.py FILE [--out DIR]   lists the images (and writes them:
DIR/image_OFFSET.sm_NN.cubin, DIR/image_OFFSET.ptx).
"""

import argparse
import os
import re
import struct
import sys

EM_CUDA = 190
SHT_NOBITS = 8


def elf_header(data, off=0):
    """The ELF64 header fields at data[off:] as a dict, or None when there is
    no well-formed little-endian ELF64 header there."""
    if data[off:off + 4] != b"\x7fELF" or len(data) < off + 64:
        return None
    ei_class, ei_data, ei_version, ei_osabi, ei_abiver = struct.unpack_from("<5B", data, off + 4)
    if ei_class != 2 or ei_data != 1 or ei_version != 1:
        return None
    (e_type, e_machine, e_version, e_entry, e_phoff, e_shoff, e_flags, e_ehsize,
     e_phentsize, e_phnum, e_shentsize, e_shnum, e_shstrndx) = \
        struct.unpack_from("<HHIQQQIHHHHHH", data, off + 16)
    return {"type": e_type, "machine": e_machine, "version": e_version, "osabi": ei_osabi,
            "abiversion": ei_abiver, "phoff": e_phoff, "shoff": e_shoff, "flags": e_flags,
            "ehsize": e_ehsize, "phentsize": e_phentsize, "phnum": e_phnum,
            "shentsize": e_shentsize, "shnum": e_shnum, "shstrndx": e_shstrndx}


def elf_extent(data, off, h):
    """The size in bytes of the ELF image at data[off:] (header h): the
    furthest byte its header, program headers, section headers or section
    data reach. None when a table runs past the end of data."""
    if h["ehsize"] != 64:
        return None
    end = 64
    avail = len(data) - off
    if h["phnum"]:
        if h["phentsize"] != 56:
            return None
        end = max(end, h["phoff"] + h["phnum"] * 56)
    if h["shnum"]:
        if h["shentsize"] != 64:
            return None
        sh_end = h["shoff"] + h["shnum"] * 64
        if sh_end > avail:
            return None
        end = max(end, sh_end)
        for i in range(h["shnum"]):
            (sh_name, sh_type, sh_flags, sh_addr, sh_offset, sh_size) = \
                struct.unpack_from("<IIQQQQ", data, off + h["shoff"] + i * 64)
            if sh_type != SHT_NOBITS and sh_type != 0:
                end = max(end, sh_offset + sh_size)
    if end > avail:
        return None
    return end


def sm_of(h):
    """The SM number (80 for sm_80) a CUDA ELF header's e_flags names."""
    if h["abiversion"] >= 8:
        return (h["flags"] >> 8) & 0xFF
    return h["flags"] & 0xFF


def find_cubins(data):
    """[(offset, bytes, header)] for every CUDA ELF image embedded in data
    (the file's own header at offset 0 is not one of them)."""
    out = []
    pos = 1
    while True:
        i = data.find(b"\x7fELF", pos)
        if i < 0:
            return out
        pos = i + 1
        h = elf_header(data, i)
        if h is None or h["machine"] != EM_CUDA:
            continue
        n = elf_extent(data, i, h)
        if n is None:
            continue
        out.append((i, bytes(data[i:i + n]), h))
        pos = i + n


RE_PTX_TARGET = re.compile(rb"^\s*\.target\s+([A-Za-z0-9_,\s]+?)\s*$", re.M)


def find_ptx(data):
    """[(offset, text)] for every NUL-terminated PTX module in data."""
    out, seen = [], set()
    pos = 0
    while True:
        i = data.find(b".address_size", pos)
        if i < 0:
            return out
        pos = i + 1
        start = data.rfind(b"\0", 0, i) + 1
        end = data.find(b"\0", i)
        if end < 0:
            end = len(data)
        if start in seen:
            continue
        text = bytes(data[start:end])
        if b".version" in text and RE_PTX_TARGET.search(text):
            seen.add(start)
            out.append((start, text))
            pos = end


def ptx_target(text):
    """The first architecture of a PTX text's `.target` line ("sm_90")."""
    m = RE_PTX_TARGET.search(text if isinstance(text, bytes) else text.encode())
    return m.group(1).split(b",")[0].strip().decode() if m else None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("file")
    ap.add_argument("--out", help="write each image into this folder")
    args = ap.parse_args()
    with open(args.file, "rb") as f:
        data = f.read()
    cubins, ptxs = find_cubins(data), find_ptx(data)
    if args.out:
        os.makedirs(args.out, exist_ok=True)
    for off, img, h in cubins:
        print("cubin at %#x: %d bytes, sm_%d (e_flags %#x, ABI version %d)" % (
            off, len(img), sm_of(h), h["flags"], h["abiversion"]))
        if args.out:
            with open(os.path.join(args.out, "image_%x.sm_%d.cubin" % (off, sm_of(h))), "wb") as f:
                f.write(img)
    for off, text in ptxs:
        print("ptx at %#x: %d bytes, .target %s" % (off, len(text), ptx_target(text)))
        if args.out:
            with open(os.path.join(args.out, "image_%x.ptx" % off), "wb") as f:
                f.write(text)
    if not cubins and not ptxs:
        print("no CUDA image found in %s" % args.file)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
