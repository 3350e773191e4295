"""Diff cases of reductions over leading dims ("column sums"), which tgc
compiles with the reduced loops outside and a contiguous kept dim inside
(codegen/llvm/k_reduce_cols.c): sum, mean, prod, amax, amin, all and any
over dim 0, over dims (0, 1) of 3-d tensors, over a middle dim, with
keepdim, with a fused elementwise producer (a broadcast operand too), at
odd sizes ([67, 131]), at kept extents of 1 to 3 and at sizes that the
kernel cuts into column blocks ([300, 1100]: three blocks of 368 split
across threads, the last one short; [40, 2500] at f64: two blocks, the
accumulator row being at most 16 KiB; [4, 50, 700]: one task per outer
row). The
sweep's dtypes run through `tgc run`; the block-split graph also runs as
an executable at 1 and 2 threads (mode build-threads). Tolerance category
"reduction" (diff.FACTOR), "long" for the sums of 300 to 1000 terms,
whose order differs from ATen's cascade sums.
"""

DTYPES = ["f32", "f64", "f16", "bf16", "i64", "i32", "u8", "bool"]

COLUMNS = """
input a : {dt}[67, 131]
input w : {dt}[131]
input y : {dt}[5, 7, 33]
input n : {dt}[200, 3]
input q : {dt}[9, 31]
c1 = a.sum(dim = 0)
c2 = a.mean(dim = 0, keepdim = true)
c3 = y.sum(dim = [0, 1])
c4 = y.mean(dim = 1)
c5 = sum(y, dim = [0, 1], keepdim = true)
c6 = (a * w + 1).sum(dim = 0)
c7 = n.sum(dim = 0)
c8 = n[:, 1:].sum(dim = 0)
c9 = n[:, :1].sum(dim = 0, keepdim = true)
c10 = a.amax(dim = 0)
c11 = y.amin(dim = [0, 1])
c12 = q.prod(dim = 0)
c13 = (a - w).abs().amax(dim = 0, keepdim = true)
c14 = y.permute(1, 0, 2).sum(dim = 0)
c15 = a.all(dim = 0)
c16 = y.any(dim = [0, 1])
c17 = n.mean(dim = 0)
"""

COLUMNS_SPECS = {"a": "randn", "w": "randn", "y": "randn", "n": "randn", "q": "pm1"}

BLOCKS = """
input x : {dt}[300, 1100]
input b : {dt}[1100]
input z : {dt}[40, 2500]
input t : {dt}[4, 50, 700]
s1 = x.sum(dim = 0)
s2 = (x * b - 0.5).mean(dim = 0)
s3 = z.sum(dim = 0, keepdim = true)
s4 = t.sum(dim = [0, 1])
s5 = t.mean(dim = 1)
s6 = x.amax(dim = 0)
s7 = z.amin(dim = 0)
"""

BLOCKS_SPECS = {"x": "randn", "b": "randn", "z": "randn", "t": "randn"}

# Normalisations whose output exceeds 8 MiB build each row in a stack
# buffer (codegen/llvm/k_reduce.c, RowOut); above the last-level cache
# (at most 32 MiB) rt_kernel_stream_row writes it with non-temporal stores.
# [4097, 2056] f32 is 32.1 MiB and [4097, 4100] bf16 32.0 MiB: streamed;
# their rows (8224 and 8200 bytes) start at every 16-byte misalignment, so
# the unaligned head and tail are exercised. [2049, 1030] (8.05 MiB) takes
# the buffer with a plain copy.
STREAM = """
input x : f32[4097, 2056]
input w : f32[2056]
input b : f32[2056]
input h : bf16[4097, 4100]
input s : f32[2049, 1030]
n1 = layer_norm(x, [2056], w, b)
n2 = rms_norm(x, w)
n3 = log_softmax(x, dim = -1)
n4 = layer_norm(h, [4100])
n5 = layer_norm(s * 2.0 + 1.0, [1030])
"""

NAN = """
input x : {dt}[20, 40]
m1 = x.amax(dim = 0)
m2 = x.amin(dim = 0)
m3 = x.sum(dim = 0)
"""


def cases(Case):
    out = []
    for dt in DTYPES:
        specs = dict(COLUMNS_SPECS)
        if dt == "bool":
            specs = {k: "bool:0.85" for k in specs}
        out.append(Case("colred_%s" % dt, COLUMNS.replace("{dt}", dt), inputs=specs,
                        tol="reduction", prune=True, asan=dt in ("f32", "i32", "bf16"),
                        group="reduce"))
    for dt in ("f32", "f64", "f16", "bf16", "i32"):
        out.append(Case("colred_blocks_%s" % dt, BLOCKS.replace("{dt}", dt), inputs=BLOCKS_SPECS,
                        tol="long", prune=True, asan=dt == "f32", group="reduce"))
    out.append(Case("colred_blocks_threads", BLOCKS.replace("{dt}", "f32"), inputs=BLOCKS_SPECS,
                    tol="long", mode="build-threads", group="reduce"))
    out.append(Case("norm_stream", STREAM, inputs={k: "randn" for k in "xwbhs"}, tol="reduction",
                    group="reduce"))
    for dt in ("f32", "bf16"):
        out.append(Case("colred_nan_%s" % dt, NAN.replace("{dt}", dt), inputs={"x": "nan"},
                        tol="reduction", group="reduce"))
    return out
