"""The libraries a test's C program links after libtgcrt.a, as tgc says
(`tgc compile [FILE] --print-link-line`, from cmake/TgcLinkLibs.cmake, the
one list), so that no suite keeps a copy of its own."""
import subprocess


def link_libs(tgc_args):
    """tgc_args: [tgc, "compile", FILE and flags...] (no -o, no --header).
    The line's words without -L and -ltgcrt (the caller links its own
    libtgcrt.a) and without the sanitizer flag (the caller passes its own:
    the TSan build must not get AddressSanitizer's)."""
    p = subprocess.run(list(tgc_args) + ["--print-link-line"], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True)
    if p.returncode:
        raise SystemExit("%s --print-link-line: %s" % (" ".join(tgc_args), p.stderr.strip()))
    return [w for w in p.stdout.split()
            if w != "-ltgcrt" and not w.startswith(("-L", "-fsanitize"))]
