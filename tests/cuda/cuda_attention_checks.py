"""run_cuda.py's once-only checks of scaled_dot_product_attention on
--target cuda (the corpus's attention cases, tests/diff/diff_attention.py,
are built like every other case):
  - memory: the CUDA kernel (codegen/cuda/cu_attention.c) keeps its tiles
    in shared memory, so `tgc report --target cuda --json` states no
    `attn_scratch_bytes` where the CPU's report states some, and the arena
    the compiled program asks for (cuda_main.c's QUERY arena_bytes) is the
    CUDA report's;
  - head dims whose smallest tiles exceed the shared memory of the chosen
    architectures: `tgc build --target cuda` exits 1 naming the op, its
    line and --target cpu, and leaves nothing at -o.
"""

import json
import os
import re
import shlex

ATTN_PLAN = """# attention's memory on --target cuda
graph attnplan
input q : f32[2, 4, 67, 64]
input k : f32[2, 4, 131, 64]
input v : f32[2, 4, 131, 64]
h = q * 2.0
output y = scaled_dot_product_attention(h, k, v, is_causal=true)
"""

ATTN_BIG = """graph attnbig
input q : f32[1, 40, 2048]
input k : f32[1, 40, 2048]
output y = scaled_dot_product_attention(q, k, k)
"""


def attention_checks(R, args, tgc, d, run, rcs, oneline, here, cflags, libs):
    tg = os.path.join(d, "attnplan.tg")
    with open(tg, "w") as f:
        f.write(ATTN_PLAN)
    reps, msgs = {}, []
    for target in ("cuda", "cpu"):
        rc, out, err = run([tgc, "report", tg, "--target", target, "--json"])
        if rc != 0:
            R.fail("tgc report --target %s of attention" % target, "%s: %s" % (rcs(rc), oneline(err)))
            return
        reps[target] = json.loads(out)["activations"]
    if reps["cuda"].get("attn_scratch_bytes", 0) != 0:
        msgs.append("the CUDA report has attn scratch %d" % reps["cuda"]["attn_scratch_bytes"])
    if not reps["cpu"].get("attn_scratch_bytes"):
        msgs.append("the CPU report has no attn scratch (the check tests nothing)")
    obj, hdr = os.path.join(d, "attnplan.o"), os.path.join(d, "attnplan.h")
    rc, _, err = run([tgc, "compile", tg, "-o", obj, "--header", hdr, "--target", "cuda",
                      "--gpu-arch", "sm_90"])
    prog = os.path.join(d, "attnplan_main")
    if rc == 0:
        san = shlex.split(args.sanitize_flags or "")
        rc, o2, err = run([args.cc] + cflags + san + ['-DTGC_HEADER="attnplan.h"',
                          "-DTGC_GRAPH=attnplan", "-I", d, "-I", args.rtinc,
                          os.path.join(here, "cuda_main.c"), obj, args.rtlib] + libs + ["-o", prog])
        err = o2 + err
    if rc != 0:
        msgs.append("tgc compile / cuda_main: %s: %s" % (rcs(rc), oneline(err)))
    else:
        rc, out, err = run([prog, os.path.join(d, "none.safetensors")])
        q = re.search(r"^QUERY arena_bytes (\d+)$", out, re.M)
        if not q or int(q.group(1)) != reps["cuda"]["arena_bytes"]:
            msgs.append("the program's arena is %s, the report's %d" % (
                q.group(1) if q else "?", reps["cuda"]["arena_bytes"]))
    R.check("tgc report --target cuda of attention: no attn scratch, arena = the program's", msgs)

    big = os.path.join(d, "attnbig.tg")
    with open(big, "w") as f:
        f.write(ATTN_BIG)
    exe = os.path.join(d, "attnbig.exe")
    rc, out, err = run([tgc, "build", big, "-o", exe, "--target", "cuda"])
    msgs = []
    if rc != 1:
        msgs.append("%s (expected 1): %s" % (rcs(rc), oneline(err)))
    for w in ("scaled_dot_product_attention at", ":4:", "shared memory", "--target cpu"):
        if w not in err:
            msgs.append("the message lacks %r: %s" % (w, oneline(err)))
    if os.path.exists(exe):
        msgs.append("a file was left at -o")
    R.check("error: attention head dims beyond the CUDA kernel's shared memory", msgs)
