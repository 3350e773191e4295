#!/usr/bin/env python3
"""Error-reporting suite for tgc: runs `tgc check` on every case in cases/
and checks the diagnostics against the case's `# NAME:` directives.

A case is a .tg file whose comment lines carry directives (anywhere in the
file, usually a header block):

  # expect: [exit=E] [line=L col=C | at=L:C|L:C...] [caret=^~~] [match=RE && RE]
        one expected error, in the order tgc reports them. `col`/`line` may
        list alternatives with `|`. `match=` runs to the end of the line:
        regexes joined by ` && `, all searched (case-insensitive) in the
        MESSAGE of `PATH:LINE:COL: error: MESSAGE`. Without line/col, any
        error line (also `tgc: error: ...`) may satisfy it. With line/col the
        next two stderr lines must be the source line indented by two spaces
        and a caret line with `^` under byte column C; `caret=` also pins the
        whole caret (e.g. `^` or `^~~~~`).
  # exit: 1        allowed exit codes (`1|2`); default: the expect's exit=, else 1
  # args: ...      extra arguments after the file (shell-split)
  # argv: ...      the whole argument list instead of `check {file} ARGS`
  # path: P        run on path P (e.g. a file that does not exist); `{fifo}` is
                   a named pipe no one writes to, made for the case
  # content: B     run on a temporary file holding the bytes of the Python
                   expression B (e.g. b'' or b'(' * 9)
  # stderr: RE     RE must be found (case-insensitive) anywhere in stderr
  # also: show     also run `tgc show FILE --json ARGS`: same exit, and
                   nothing on stdout when it fails
  # errors: any    allow more errors than expected (default: exactly as many)

Every run must end normally (no signal, no hang) with an exit code in {0,1,2};
exit 3 (internal error) fails a case unless the case allows it.
Prints failing cases with expected vs actual stderr, then exactly one line
`errors: N passed, M failed`; exits 1 when M > 0.
"""
import argparse
import concurrent.futures
import os
import re
import shlex
import signal
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
DIRECTIVE = re.compile(rb"^\s*#\s*(expect|exit|args|argv|path|content|stderr|also|errors):(.*)$")
LOCATED = re.compile(r"^(?P<path>.*?):(?P<line>\d+):(?P<col>\d+): error: (?P<msg>.*)$")
UNLOCATED = re.compile(r"^(?:(?P<path>.*?): )?error: (?P<msg>.*)$")
TIMEOUT_S = 10


class CaseError(Exception):
    pass


def parse_alts(text, what):
    try:
        return [int(v) for v in text.split("|")]
    except ValueError:
        raise CaseError(f"bad {what}= value {text!r}")


def parse_expect(text):
    exp = {"exit": None, "at": None, "caret": None, "match": [], "src": text.strip()}
    m = re.search(r"\bmatch=(.*)$", text)
    if m:
        exp["match"] = [p.strip() for p in m.group(1).split(" && ") if p.strip()]
        text = text[: m.start()]
    lines = cols = None
    for tok in text.split():
        key, eq, val = tok.partition("=")
        if not eq:
            raise CaseError(f"bad expect token {tok!r}")
        if key == "exit":
            exp["exit"] = parse_alts(val, "exit")
        elif key == "line":
            lines = parse_alts(val, "line")
        elif key == "col":
            cols = parse_alts(val, "col")
        elif key == "at":
            try:
                exp["at"] = [tuple(int(v) for v in a.split(":")) for a in val.split("|")]
            except ValueError:
                raise CaseError(f"bad at= value {val!r}")
            if any(len(a) != 2 for a in exp["at"]):
                raise CaseError(f"bad at= value {val!r}")
        elif key == "caret":
            exp["caret"] = val
        else:
            raise CaseError(f"unknown expect key {key!r}")
    if lines is not None or cols is not None:
        if lines is None or cols is None:
            raise CaseError("line= and col= go together")
        exp["at"] = [(l, c) for l in lines for c in cols]
    for rx in exp["match"]:
        re.compile(rx)
    return exp


def load_case(path):
    with open(path, "rb") as f:
        data = f.read()
    case = {"name": os.path.splitext(os.path.basename(path))[0], "file": path, "data": data,
            "expects": [], "exit": None, "args": [], "argv": None, "path": None,
            "content": None, "stderr": [], "show": False, "errors_any": False}
    for raw in data.split(b"\n"):
        m = DIRECTIVE.match(raw)
        if not m:
            continue
        key = m.group(1).decode()
        val = m.group(2).decode("latin-1").strip()
        if key == "expect":
            case["expects"].append(parse_expect(val))
        elif key == "exit":
            case["exit"] = parse_alts(val, "exit")
        elif key == "args":
            case["args"] = shlex.split(val)
        elif key == "argv":
            case["argv"] = shlex.split(val)
        elif key == "path":
            case["path"] = val
        elif key == "content":
            # A Python expression over bytes literals (b'(' * 9 is fine).
            case["content"] = eval(val, {"__builtins__": {}})
            if not isinstance(case["content"], bytes):
                raise CaseError("content: must give bytes")
        elif key == "stderr":
            re.compile(val)
            case["stderr"].append(val)
        elif key == "also":
            if val != "show":
                raise CaseError(f"unknown also: {val!r}")
            case["show"] = True
        elif key == "errors":
            if val != "any":
                raise CaseError(f"unknown errors: {val!r}")
            case["errors_any"] = True
    if case["exit"] is None:
        exits = [e["exit"] for e in case["expects"] if e["exit"]]
        case["exit"] = exits[0] if exits else [1]
    if not case["expects"] and not case["stderr"] and 0 not in case["exit"]:
        raise CaseError("a failing case needs an expect: or a stderr: directive")
    return case


def run_tgc(tgc, argv):
    """Returns (exit code or None, signal or None, timed out, stdout, stderr) as latin-1 text."""
    try:
        p = subprocess.run([tgc] + argv, stdin=subprocess.DEVNULL, capture_output=True,
                           timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired as e:
        return None, None, True, (e.stdout or b"").decode("latin-1"), (e.stderr or b"").decode("latin-1")
    rc, sig = (p.returncode, None) if p.returncode >= 0 else (None, -p.returncode)
    return rc, sig, False, p.stdout.decode("latin-1"), p.stderr.decode("latin-1")


def describe_end(rc, sig, timed_out):
    if timed_out:
        return f"hung (killed after {TIMEOUT_S}s)"
    if sig is not None:
        try:
            return f"killed by signal {sig} ({signal.Signals(sig).name})"
        except ValueError:
            return f"killed by signal {sig}"
    return f"exit {rc}"


def parse_errors(stderr_lines):
    """The error lines of stderr: dicts with index, path, line, col (None when unlocated), msg."""
    errs = []
    for i, text in enumerate(stderr_lines):
        m = LOCATED.match(text)
        if m:
            errs.append({"index": i, "path": m.group("path"), "line": int(m.group("line")),
                         "col": int(m.group("col")), "msg": m.group("msg")})
            continue
        m = UNLOCATED.match(text)
        if m:
            errs.append({"index": i, "path": m.group("path"), "line": None, "col": None,
                         "msg": m.group("msg")})
    return errs


def check_location(exp, err, stderr_lines, src_lines, input_path):
    """Problems with a located error's position, source line and caret ('' when fine)."""
    if err["line"] is None:
        return "no line:col"
    if (err["line"], err["col"]) not in exp["at"]:
        want = " or ".join(f"{l}:{c}" for l, c in exp["at"])
        return f"at {err['line']}:{err['col']}, expected {want}"
    if err["path"] != input_path and os.path.basename(err["path"]) != os.path.basename(input_path):
        return f"names file {err['path']!r}, expected {input_path!r}"
    i = err["index"]
    line_no = err["line"]
    want_src = src_lines[line_no - 1] if 0 < line_no <= len(src_lines) else ""
    got_src = stderr_lines[i + 1] if i + 1 < len(stderr_lines) else None
    if got_src is None or got_src.rstrip("\r") != "  " + want_src.rstrip("\r"):
        return f"the line after it is {got_src!r}, expected the source line {'  ' + want_src!r}"
    caret = stderr_lines[i + 2] if i + 2 < len(stderr_lines) else None
    if caret is None or not re.fullmatch(r"  [ \t]*\^~*", caret):
        return f"no caret line (got {caret!r})"
    if caret.index("^") - 2 != err["col"] - 1:
        return f"caret under byte column {caret.index('^') - 1}, the error says column {err['col']}"
    if exp["caret"] is not None and caret.strip() != exp["caret"]:
        return f"caret {caret.strip()!r}, expected {exp['caret']!r}"
    return ""


def matches_message(exp, err):
    return all(re.search(rx, err["msg"], re.IGNORECASE) for rx in exp["match"])


def check_case(tgc, case, tmpdir):
    problems = []
    if case["content"] is not None:
        input_path = os.path.join(tmpdir, case["name"] + ".tg")
        with open(input_path, "wb") as f:
            f.write(case["content"])
        src = case["content"]
    elif case["path"] == "{fifo}":
        input_path, src = os.path.join(tmpdir, case["name"] + ".fifo"), b""
        os.mkfifo(input_path)
    elif case["path"] is not None:
        input_path, src = case["path"], b""
    else:
        input_path, src = case["file"], case["data"]
    src_lines = src.decode("latin-1").split("\n")
    argv = case["argv"] if case["argv"] is not None else ["check", "{file}"] + case["args"]
    argv = [a.replace("{file}", input_path) for a in argv]

    rc, sig, timed_out, out, err_text = run_tgc(tgc, argv)
    stderr_lines = err_text.split("\n")
    if rc not in case["exit"]:
        problems.append(f"{describe_end(rc, sig, timed_out)}, expected exit "
                        + " or ".join(map(str, case["exit"])))
    for rx in case["stderr"]:
        if not re.search(rx, err_text, re.IGNORECASE | re.MULTILINE):
            problems.append(f"stderr lacks /{rx}/")

    errs = parse_errors(stderr_lines)
    pos = 0
    for exp in case["expects"]:
        found = None
        near = []
        for k in range(pos, len(errs)):
            e = errs[k]
            if not matches_message(exp, e):
                continue
            if exp["at"] is None:
                found = k
                break
            why = check_location(exp, e, stderr_lines, src_lines, input_path)
            if not why:
                found = k
                break
            near.append(why)
        if found is None:
            whys = ""
            if near:
                whys = " (message matches, but " + "; ".join(near) + ")"
            else:
                # Say what the error at the expected place, if any, does say.
                for e in errs[pos:]:
                    if exp["at"] and (e["line"], e["col"]) in exp["at"]:
                        whys = f" (the error there says {e['msg']!r})"
                        break
            problems.append(f"missing error [{exp['src']}]{whys}")
        else:
            pos = found + 1
    if case["expects"] and not case["errors_any"] and 0 not in case["exit"] \
            and len(errs) > len(case["expects"]):
        problems.append(f"{len(errs)} errors reported, expected {len(case['expects'])} "
                        "(an error cascades, or is reported twice)")
    if case["exit"] == [0] and errs:
        problems.append("errors reported for a case that should succeed")

    if case["show"]:
        s_argv = ["show", input_path, "--json"] + case["args"]
        s_rc, s_sig, s_to, s_out, _ = run_tgc(tgc, s_argv)
        if s_rc != rc or s_sig is not None or s_to:
            problems.append(f"`tgc show --json`: {describe_end(s_rc, s_sig, s_to)}, "
                            f"while check gave {describe_end(rc, sig, timed_out)}")
        if s_rc != 0 and s_out.strip():
            problems.append(f"`tgc show --json` failed but wrote to stdout: {s_out[:200]!r}")

    if rc == 3 and 3 not in case["exit"]:
        problems.append("exit 3 is an internal error (a tgc bug)")
    return problems, rc, sig, timed_out, err_text, argv


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tgc", required=True, help="the tgc executable")
    ap.add_argument("--cases", default=os.path.join(HERE, "cases"))
    ap.add_argument("-k", dest="filter", default="", help="only cases whose name contains this")
    ap.add_argument("-v", "--verbose", action="store_true", help="print every case's result")
    args = ap.parse_args()
    tgc = os.path.abspath(args.tgc)
    if not os.access(tgc, os.X_OK):
        print(f"run_errors.py: {tgc} is not an executable", file=sys.stderr)
        print("errors: 0 passed, 1 failed")
        return 1

    files = sorted(os.path.join(args.cases, f) for f in os.listdir(args.cases)
                   if f.endswith(".tg") and args.filter in f)
    passed = failed = 0
    with tempfile.TemporaryDirectory(prefix="tgc-errors-") as tmpdir:
        cases, results = [], {}
        for path in files:
            try:
                cases.append(load_case(path))
            except (CaseError, SyntaxError, ValueError, TypeError, NameError, re.error) as e:
                results[path] = ([f"malformed case: {e}"], None, None, False, "", [])
        with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
            futs = {c["file"]: pool.submit(check_case, tgc, c, tmpdir) for c in cases}
            for path, fut in futs.items():
                results[path] = fut.result()
        by_file = {c["file"]: c for c in cases}
        for path in files:
            problems, rc, sig, timed_out, err_text, argv = results[path]
            name = os.path.splitext(os.path.basename(path))[0]
            if not problems:
                passed += 1
                if args.verbose:
                    print(f"PASS {name}")
                continue
            failed += 1
            print(f"FAIL {name}: tgc {' '.join(shlex.quote(a) for a in argv)}")
            for p in problems:
                print(f"  - {p}")
            case = by_file.get(path)
            if case:
                print("  expected:")
                print(f"    exit {' or '.join(map(str, case['exit']))}")
                for e in case["expects"]:
                    print(f"    {e['src']}")
                for rx in case["stderr"]:
                    print(f"    stderr /{rx}/")
            print(f"  actual ({describe_end(rc, sig, timed_out)}), stderr:")
            lines = err_text.rstrip("\n").split("\n") if err_text.strip() else ["(empty)"]
            for l in lines[:40]:
                print(f"    | {l}")
            if len(lines) > 40:
                print(f"    | ... {len(lines) - 40} more lines")
    print(f"errors: {passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
