#!/usr/bin/python3
"""What the CUDA suite (run_cuda.py) reuses across builds and cases
without losing a distinct kernel, and the check that the reuse changes
nothing:

  - shapes(cu): the distinct pieces of a generated module (the .cu that
    `--emit cuda` writes): the text before its first kernel (the prelude
    and, where there are products, the product kernels' source) and each
    `__global__` kernel with what follows it up to the next one, the
    kernel's index (k12_ in k12_add) taken out, each as a hash. Two
    modules with the same pieces give ptxas the same code, named and
    numbered otherwise.
  - claim(folder, hashes): the hashes new to folder (one file per hash,
    made with O_EXCL, so parallel workers agree on who checks which piece
    first).
  - new_entries(): which kernels of a case's PTX ptxas must assemble: all
    of them when the prelude is new, those whose piece is new otherwise
    (the generic product kernel, in every module with a product, once in
    the run), none when nothing is; without_entries() cuts the others out
    of the PTX text.
  - ptxas_key(), ptxas_known(), ptxas_keep(): a successful `ptxas
    -arch=ARCH` of a PTX text, kept in the same folder as NVRTC's images
    (KEY.ptxas, empty; the key: ptxas's path, size and time, the
    architecture and the text), so the sanitizer build's run, whose PTX is
    the normal build's, does not assemble it again.
  - prune(folder, before): removes the entries of the NVRTC cache folder
    (TGC_NVRTC_CACHE) that no build used since `before` (tgc touches an
    entry when it reads it, ptxas_known() too), so a build tree's cache
    holds one corpus run.
  - new_pieces(): claim() for one case's emitted module.
  - cache_check(): TGC_NVRTC_CACHE through `tgc build` (its docstring).
"""

import hashlib
import os
import re
import shutil

RE_KERNEL = re.compile(r'^extern "C" __global__ ', re.M)
RE_INDEX = re.compile(r"\bk\d+_")
RE_NAME = re.compile(r"__global__\s+void\s+(?:__launch_bounds__\([^)]*\)\s*)?(\w+)\s*\(")
RE_ENTRY = re.compile(r"^\.visible \.entry (\w+)\(", re.M)


def pieces(cu):
    """[(hash, kernel name or None for the prelude)] of the module's pieces
    (see the header)."""
    starts = [m.start() for m in RE_KERNEL.finditer(cu)]
    cuts = [0] + starts + [len(cu)]
    out = []
    for i in range(len(cuts) - 1):
        text = cu[cuts[i]:cuts[i + 1]]
        name = None
        if i == 0:
            # The first line names the graph: not part of what ptxas sees.
            text = text.split("\n", 1)[1] if "\n" in text else ""
        else:
            m = RE_NAME.search(text)
            name = m.group(1) if m else "?"
            text = RE_INDEX.sub("k_", text, count=1)
        out.append((hashlib.sha256(text.encode("utf-8", "replace")).hexdigest(), name))
    return out


def shapes(cu):
    """The hashes of the module's pieces."""
    return sorted(set(h for h, _ in pieces(cu)))


def claim(folder, hashes):
    os.makedirs(folder, exist_ok=True)
    new = set()
    for h in hashes:
        try:
            os.close(os.open(os.path.join(folder, h), os.O_CREAT | os.O_EXCL | os.O_WRONLY))
            new.add(h)
        except FileExistsError:
            pass
    return new


def ptxas_key(ptxas, arch, path):
    """The key of `ptxas -arch=ARCH PATH`, or None when a file is missing."""
    try:
        tool = shutil.which(ptxas) or ptxas
        st = os.stat(tool)
        with open(path, "rb") as f:
            text = f.read()
    except (OSError, TypeError):
        return None
    h = hashlib.sha256(("%s %d %d %s\n" % (tool, st.st_size, st.st_mtime_ns, arch)).encode())
    h.update(text)
    return h.hexdigest()


def ptxas_known(folder, key):
    p = os.path.join(folder, key + ".ptxas")
    try:
        os.utime(p)
        return True
    except OSError:
        return False


def ptxas_keep(folder, key):
    try:
        with open(os.path.join(folder, key + ".ptxas"), "w"):
            pass
    except OSError:
        pass


def prune(folder, before):
    """Removes the .nvrtc and .ptxas entries last modified before `before`
    (a time)."""
    removed = 0
    try:
        names = os.listdir(folder)
    except OSError:
        return 0
    for n in names:
        if not n.endswith((".nvrtc", ".ptxas")):
            continue
        p = os.path.join(folder, n)
        try:
            if os.stat(p).st_mtime < before:
                os.remove(p)
                removed += 1
        except OSError:
            pass
    return removed


def new_entries(emit, name, shapes_dir):
    """True (every kernel: a new prelude, no shapes_dir, or the .cu
    unreadable), the set of kernel names whose pieces are new, or an empty
    set, for the module emit/NAME.cu."""
    if shapes_dir is None:
        return True
    try:
        with open(os.path.join(emit, name + ".cu"), errors="replace") as f:
            ps = pieces(f.read())
    except OSError:
        return True
    new = claim(shapes_dir, [h for h, _ in ps])
    if any(n is None or n == "?" for h, n in ps if h in new):
        return True
    return set(n for h, n in ps if h in new)


def without_entries(ptx, keep):
    """The PTX text without the `.entry` blocks not named in keep (a block
    runs from its `.visible .entry NAME(` line to the next line `}`):
    kernels do not call kernels, so the rest still assembles."""
    out, pos = [], 0
    for m in RE_ENTRY.finditer(ptx):
        if m.start() < pos or m.group(1) in keep:
            continue
        end = ptx.find("\n}\n", m.start())
        if end < 0:
            return ptx
        out.append(ptx[pos:m.start()])
        pos = end + 3
    out.append(ptx[pos:])
    return "".join(out)


def cache_check(R, tgc, d, run, rcs, oneline, write_tiny):
    """TGC_NVRTC_CACHE: the first build fills an empty folder (one entry per
    image), the second reads it, and both write what a build without the
    cache writes (the .cu, each CUBIN, the PTX, byte for byte)."""
    tg, _, _ = write_tiny(d)
    cache = os.path.join(d, "nvrtc-cache")
    shutil.rmtree(cache, ignore_errors=True)
    files, msgs = [], []
    for i, use in enumerate((None, cache, cache)):
        env = dict(os.environ)
        env.pop("TGC_NVRTC_CACHE", None)
        if use:
            env["TGC_NVRTC_CACHE"] = use
        e = os.path.join(d, "cached%d" % i)
        shutil.rmtree(e, ignore_errors=True)
        rc, _, err = run([tgc, "build", tg, "-o", os.path.join(d, "tiny_cached%d" % i), "--target",
                          "cuda", "--gpu-arch", "sm_80,sm_90", "--emit", "cuda", e], env=env)
        if rc != 0:
            msgs.append("build %d: tgc build %s: %s" % (i + 1, rcs(rc), oneline(err)))
            break
        got = {}
        for n in sorted(os.listdir(e)):
            with open(os.path.join(e, n), "rb") as f:
                got[n] = f.read()
        files.append(got)
        if use:
            entries = [n for n in os.listdir(cache) if n.endswith(".nvrtc")]
            if len(entries) != 3:
                msgs.append("after build %d the cache holds %d entries, expected 3 (two CUBINs, "
                            "the PTX): %s" % (i + 1, len(entries), sorted(os.listdir(cache))))
    for i in (1, 2):
        if len(files) > i and files[i] != files[0]:
            diff_names = sorted(n for n in set(files[0]) | set(files[i])
                                if files[0].get(n) != files[i].get(n))
            msgs.append("build %d (%s cache) wrote other files than the uncached build: %s" % (
                i + 1, "empty" if i == 1 else "filled", diff_names))
    R.check("TGC_NVRTC_CACHE: builds into and from the cache write the uncached build's files",
            msgs)
