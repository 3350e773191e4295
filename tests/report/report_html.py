#!/usr/bin/python3
"""`tgc report --html`: the page is self-contained (no script, nothing
fetched from the network), and headless Chromium renders its charts: the
DOM after loading holds the timeline (one column per step, up to 480) and
one bar per device preset, and a screenshot shows the chart's colours.

Usage: report_html.py --tgc build/tgc [--chromium chromium]
Last line printed: `report_html: N passed, M failed`; exit status 1 if M > 0.
Without Chromium the script says so, checks the file alone, and passes."""

import argparse
import os
import re
import shutil
import struct
import subprocess
import tempfile
import zlib

import numpy as np

from rtest import EXAMPLES, Checks, Tgc, main_guard, random_graph, write_tmp

COLORS = {"weights": (0x4E, 0x79, 0xA7), "io": (0xF2, 0x8E, 0x2B), "activations": (0x59, 0xA1, 0x4F),
          "fits": (0x2E, 0x9E, 0x4F), "over": (0xD9, 0x43, 0x3B)}
NPRESETS = 11


def chromium_args(exe, profile):
    return [exe, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
            "--disable-background-networking", "--disable-component-update", "--disable-sync",
            "--disable-dev-shm-usage", "--user-data-dir=" + profile]


def read_png(path):
    """Pixels of an 8-bit, non-interlaced RGB or RGBA PNG: (width, height, rows of (r, g, b))."""
    with open(path, "rb") as f:
        data = f.read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, width = 8, b"", 0
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            width, height, depth, ctype, _, _, interlace = struct.unpack(">IIBBBBB", body)
            assert depth == 8 and ctype in (2, 6) and not interlace, "unsupported PNG"
            bpp = 3 if ctype == 2 else 4
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    raw, stride, rows, prev = zlib.decompress(idat), width * bpp, [], bytearray(width * bpp)
    for y in range(height):
        ft, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b, c = prev[i], prev[i - bpp] if i >= bpp else 0
            if ft == 1: line[i] = (line[i] + a) & 255
            elif ft == 2: line[i] = (line[i] + b) & 255
            elif ft == 3: line[i] = (line[i] + (a + b) // 2) & 255
            elif ft == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append([tuple(line[x * bpp:x * bpp + 3]) for x in range(width)])
        prev = line
    return width, height, rows


def static_checks(c, html, what):
    c.check(html.startswith("<!DOCTYPE html>") and html.rstrip().endswith("</html>"), what + ": a whole page")
    c.check("<script" not in html.lower(), what + ": no script")
    urls = [u for u in re.findall(r"https?://[^\s\"'<>)]+", html) if u != "http://www.w3.org/2000/svg"]
    c.check(not urls, what + ": nothing from the network", str(urls[:3]))
    c.check(not re.search(r"(src|href)\s*=|@import|url\(", html, re.I), what + ": no external resources")
    c.check('<svg id="timeline"' in html and '<svg id="devices"' in html, what + ": both charts")


def dom_checks(c, chromium, path, what, nsteps, has_budget, tmp):
    profile = tempfile.mkdtemp(dir=tmp)
    try:
        p = subprocess.run(chromium_args(chromium, profile) + ["--dump-dom", "file://" + path],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)
    except subprocess.TimeoutExpired:
        c.check(False, what + ": chromium --dump-dom within 120 s")
        return
    dom = p.stdout.decode("utf-8", "replace")
    if not c.check(p.returncode == 0 and "<svg" in dom, what + ": chromium loads the page",
                   p.stderr.decode("utf-8", "replace")[-400:]):
        return
    timeline = dom[dom.find('id="timeline"'):dom.find('id="devices"')]
    cols = timeline.count('class="step"')
    c.eq(min(max(nsteps, 1), 480), cols, what + ": one timeline column per step (at most 480)")
    c.check(timeline.count('class="bar-act"') >= 1 and timeline.count('class="bar-weights"') == cols,
            what + ": stacked bars in the timeline")
    devices = dom[dom.find('id="devices"'):]
    c.eq(NPRESETS + (1 if has_budget else 0), devices.count('class="device '), what + ": one bar per device")
    c.check(devices.count('class="capacity"') == devices.count('class="need"') >= NPRESETS,
            what + ": capacity and need bars")


def screenshot_checks(c, chromium, path, what, tmp):
    profile = tempfile.mkdtemp(dir=tmp)
    png = os.path.join(tmp, os.path.basename(path) + ".png")
    try:
        p = subprocess.run(chromium_args(chromium, profile) + ["--window-size=1200,1600", "--screenshot=" + png,
                                                               "file://" + path],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)
    except subprocess.TimeoutExpired:
        c.check(False, what + ": chromium --screenshot within 120 s")
        return
    if not c.check(p.returncode == 0 and os.path.exists(png), what + ": screenshot",
                   p.stderr.decode("utf-8", "replace")[-400:]):
        return
    try:  # Pillow decodes in C when it is there; the fallback is slow but has no dependency
        from PIL import Image
        pixels = np.asarray(Image.open(png).convert("RGB"), dtype=np.int16)
    except ImportError:
        w, h, rows = read_png(png)
        pixels = np.array(rows, dtype=np.int16)
    counts = {k: int((np.abs(pixels - np.array(col, dtype=np.int16)).max(axis=2) <= 6).sum())
              for k, col in COLORS.items()}
    c.check(counts["weights"] > 2000, what + ": the weights band is drawn", str(counts))
    c.check(counts["activations"] > 200, what + ": the activations are drawn", str(counts))
    c.check(counts["io"] > 100, what + ": the inputs/outputs band is drawn", str(counts))
    c.check(counts["fits"] + counts["over"] > 11 * 20, what + ": the device bars are drawn", str(counts))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tgc", required=True)
    ap.add_argument("--chromium", default="chromium")
    args = ap.parse_args()
    tgc = Tgc(args.tgc)
    c = Checks("report_html")
    chromium = shutil.which(args.chromium)
    if not chromium:
        print("SKIP rendering: '%s' not found (scripts/setup.sh installs Debian's chromium); "
              "checking the files only" % args.chromium)
    with tempfile.TemporaryDirectory() as tmp:
        big = write_tmp(random_graph(7, 900, 8), tmpdir=tmp)
        cases = [
            ("transformer_block", os.path.join(EXAMPLES, "transformer_block.tg"),
             ["--device", "rtx4090", "--fit", "batch"], False),
            ("mlp budget", os.path.join(EXAMPLES, "mlp.tg"), ["--budget", "1MiB", "--precision", "bf16"], True),
            ("900-node graph", big, [], False),
        ]
        for what, src, extra, has_budget in cases:
            out = os.path.join(tmp, re.sub(r"\W", "_", what) + ".html")
            rep, rc, err = tgc.report(src, "--html", out, *extra)
            if not c.check(rep is not None and os.path.exists(out), what + ": --html writes the page", err[-300:]):
                continue
            html = open(out, encoding="utf-8").read()
            static_checks(c, html, what)
            proc = rep.get("process") or {}
            if proc.get("peak_bytes") is not None:
                # the whole process as the JSON gives it (the text report's last lines)
                for row, key in (("process-peak", "peak_bytes"), ("runtime", "runtime_bytes")):
                    m = re.search(r'<tr id="%s" data-bytes="(\d+)"' % row, html)
                    c.check(m is not None and int(m.group(1)) == proc[key],
                            what + ": the %s row is the JSON's process.%s" % (row, key),
                            "%s against %s" % (m.group(1) if m else "no row", proc[key]))
            c.check(not os.path.exists(out + ".tmp"), what + ": no temporary file left")
            if chromium:
                dom_checks(c, chromium, out, what, len(rep["steps"]), has_budget, tmp)
                if what != "900-node graph":
                    screenshot_checks(c, chromium, out, what, tmp)
    return c.finish()


if __name__ == "__main__":
    main_guard(main)
