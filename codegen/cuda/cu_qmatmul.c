/* Products with a quantized weight (--quantize int8|int4) on the GPU:
 * y (+)= x @ dequant(q)^T, q int8 [n][k] or packed int4 with f32 scales
 * per group of k (the layout of runtime/tgcrt.h's RtQMatmulDesc, which the
 * CPU hands to rt_qmatmul). Two regimes, as on the CPU, because their
 * bottlenecks differ:
 *
 * - few rows (rows = batch * m <= CG_CUDA_QMM_DIRECT_ROWS, decoding): the
 *   product is bound by reading the weights, so they are read once, in
 *   their quantized form, by one kernel (k*_qmm). Each warp owns one output
 *   column n and up to MR = 8 rows; its lanes read the weight row 4 bytes
 *   at a time (4 int8 or 8 int4 weights), so each load instruction of the
 *   warp covers 128 contiguous bytes, widen and scale them in registers
 *   (w = (float)q * scale, one f32 product, as the CPU) and multiply them
 *   into every row. x is staged per tile of KT = 512 columns in shared
 *   memory as f32, read by the 8 warps of the block (8 columns) as float4
 *   at consecutive addresses (no bank conflicts). The lanes' f32 partial
 *   sums meet by shuffles; lane 0 rounds once into y's dtype (adding the
 *   bias already broadcast into y when accumulating).
 * - more rows: the product is bound by arithmetic, where cuBLAS's tensor
 *   cores win by far; a kernel (k*_qdeq) dequantizes q into x's dtype in
 *   the arena's scratch tail (planned by cg_qmm_plan, so `tgc report`
 *   counts it), then one RT_CUDA_MATMUL step multiplies as for an
 *   unquantized weight. The f16/bf16 weight is q * scale rounded once to
 *   that dtype: one rounding more than the CPU's f32 weight (int8 and int4
 *   values are exact in both; the product with the scale is what rounds).
 *
 * Every size and stride is a compile-time constant of the generated
 * source, as the graph's shapes are static. The row threshold is a
 * guess from the kernels' shapes (no GPU has measured it yet; see
 * docs/codegen.md "Quantized products on CUDA"). */
#include <string.h>

#include "codegen/cuda/cu.h"

#define THREADS 256
#define MR 8   /* rows of x one pass over a weight row serves */
#define KT 512 /* columns of x staged in shared memory at a time */

static const char *widen(DType t) {
    return t == DT_F16 ? "tg_h2f" : t == DT_BF16 ? "tg_b2f" : "";
}
static const char *narrow(DType t) {
    return t == DT_F16 ? "tg_f2h" : t == DT_BF16 ? "tg_f2b" : "";
}

/* A pointer to x's element 0 (its view offset included). */
static const char *ptr(CuKern *k, const Value *x, bool writable) {
    Access a;
    kd_access_of(k->cu->p, x, &a);
    return cu_str(k->cu, "(%s + %lld)", cuk_base(k, &a, writable), (long long)a.offset);
}

#define B(...) sb_printf(&k.body, __VA_ARGS__)

/* The element offset of row `row` (a C expression) of x or y as the C
 * statements that add it into the variable `var` (declared by the caller). */
static void row_offset(CuKern *k, const QMM *d, const char *row, const char *var, bool of_y) {
    sb_printf(&k->body,
              "        { long long rr = %s; %s += (rr %% %lldLL) * %lldLL; rr /= %lldLL;\n", row,
              var, (long long)d->m, (long long)(of_y ? d->y_rs : d->x_rs), (long long)d->m);
    for (int i = (int)d->nbatch - 1; i >= 0; i--)
        sb_printf(&k->body, "          %s += (rr %% %lldLL) * %lldLL; rr /= %lldLL;\n", var,
                  (long long)d->batch[i], (long long)(of_y ? d->y_bs[i] : d->x_bs[i]),
                  (long long)d->batch[i]);
    sb_printf(&k->body, "          (void)rr; }\n");
}

/* The weight loads and scales shared by both kernels: q's row stride in
 * bytes and the number of scales per row. */
/* Declares qv, one signed weight, at indent pad: the int8 byte `byte`, or
 * the 4-bit two's-complement nibble `nib`. */
static void load_qv(CuKern *k, const QMM *d, const char *pad, const char *byte, const char *nib) {
    if (d->bits == 8)
        sb_printf(&k->body, "%sconst int qv = (int)(signed char)%s;\n", pad, byte);
    else
        sb_printf(&k->body, "%sconst int nib = %s;\n%sconst int qv = nib >= 8 ? nib - 16 : nib;\n",
                  pad, nib, pad);
}

static int64_t row_bytes(const QMM *d) {
    return d->bits == 8 ? d->k : (d->k + 1) / 2;
}
/* The group clamped to [1, max(k, 1)], as the runtime does. */
static int64_t group_of(const QMM *d) {
    return d->group < 1 ? 1 : d->group > d->k && d->k > 0 ? d->k : d->group;
}
static int64_t groups(const QMM *d) {
    return (d->k + group_of(d) - 1) / group_of(d);
}

static void direct(Cu *cu, const Value *v, const QMM *d) {
    int64_t rows = cg_qmm_rows(d), mr = rows < MR ? rows : MR;
    int64_t nrb = (rows + mr - 1) / mr, nnb = (d->n + THREADS / 32 - 1) / (THREADS / 32);
    int64_t kb = row_bytes(d), ng = groups(d), group = group_of(d);
    DType xt = (DType)d->x_dtype, yt = (DType)d->y_dtype;
    int unit = d->bits == 8 ? 4 : 8; /* weights in one 4-byte load */
    CuKern k;
    cuk_begin(cu, &k, "qmm");
    const char *x = ptr(&k, v->in[0], false), *q = ptr(&k, v->args[1].t, false);
    const char *sc = ptr(&k, v->args[2].t, false), *y = ptr(&k, v, true);
    Access qa;
    kd_access_of(cu->p, v->args[1].t, &qa);
    B("    // y[%lld rows][%lld] %s= x[%lld rows][%lld] @ dequant(int%lld q[%lld][%lld], group "
      "%lld)^T\n",
      (long long)rows, (long long)d->n, d->accumulate ? "+" : "", (long long)rows, (long long)d->k,
      (long long)d->bits, (long long)d->n, (long long)d->k, (long long)group);
    B("    constexpr long long GRID = %lld, ROWS = %lld, N = %lld, K = %lld, KB = %lld, NG = "
      "%lld, GROUP = %lld, NNB = %lld;\n",
      (long long)(nrb * nnb), (long long)rows, (long long)d->n, (long long)d->k, (long long)kb,
      (long long)ng, (long long)group, (long long)nnb);
    B("    constexpr int MR = %d, KT = %d, UNIT = %d, UPL = KT / (32 * UNIT);\n", (int)mr, KT,
      unit);
    /* Whole 4-byte loads need every row to start 4-aligned; a unit then
     * never straddles the row's end. The scale is one per unit when groups
     * hold whole units. */
    B("    constexpr bool ALIGNED = KB %% 4 == 0 && %d, UNIT_SCALE = GROUP %% UNIT == 0;\n",
      qa.offset % 4 == 0);
    B("    extern __shared__ float4 qmm_smem[];\n"
      "    float *xs = (float *)qmm_smem;              // [MR][KT]\n"
      "    long long *xrow = (long long *)(xs + MR * KT); // [MR]\n"
      "    const int tid = threadIdx.x, lane = tid %% 32, warp = tid / 32;\n"
      "    const long long r0 = (long long)(blockIdx.x / NNB) * MR;\n"
      "    const long long n = (long long)(blockIdx.x %% NNB) * %d + warp;\n"
      "    const auto *xp = %s; const unsigned char *qp = (const unsigned char *)%s;\n"
      "    const float *sp = %s; auto *yp = %s;\n",
      THREADS / 32, x, q, sc, y);
    B("    if (tid < MR) {\n"
      "        long long off = 0;\n");
    row_offset(&k, d, "r0 + tid", "off", false);
    B("        xrow[tid] = off;\n"
      "    }\n"
      "    float acc[MR];\n"
      "#pragma unroll\n"
      "    for (int r = 0; r < MR; r++) acc[r] = 0.0f;\n"
      "    const unsigned char *qrow = qp + (n < N ? n : 0) * KB;\n"
      "    const float *srow = sp + (n < N ? n : 0) * NG;\n");
    B("    for (long long k0 = 0; k0 < K; k0 += KT) {\n"
      "        __syncthreads(); // the previous tile is read (and xrow written)\n"
      "        for (int i = tid; i < MR * KT; i += %d) {\n"
      "            const int r = i / KT, e = i %% KT;\n"
      "            const long long kk = k0 + e;\n"
      "            xs[i] = r0 + r < ROWS && kk < K ? %s(xp[xrow[r] + kk * %lldLL]) : 0.0f;\n"
      "        }\n"
      "        __syncthreads();\n"
      "        if (n >= N) continue;\n"
      "#pragma unroll\n"
      "        for (int u = 0; u < UPL; u++) {\n"
      "            const int e0 = (u * 32 + lane) * UNIT;\n"
      "            const long long kk = k0 + e0;\n"
      "            if (kk >= K) break;\n"
      "            const long long byte = %s;\n"
      "            unsigned word = 0;\n"
      "            if (ALIGNED) {\n"
      "                word = *(const unsigned *)(qrow + byte);\n"
      "            } else {\n"
      "#pragma unroll\n"
      "                for (int b = 0; b < 4; b++)\n"
      "                    if (byte + b < KB) word |= (unsigned)qrow[byte + b] << (8 * b);\n"
      "            }\n"
      "            const float s0 = srow[kk / GROUP];\n"
      "            float w[UNIT];\n"
      "#pragma unroll\n"
      "            for (int j = 0; j < UNIT; j++) {\n",
      THREADS, widen(xt), (long long)d->x_cs, d->bits == 8 ? "kk" : "kk / 2");
    load_qv(&k, d, "                ", "(word >> (8 * j))", "(int)((word >> (4 * j)) & 15u)");
    B("                const long long kj = kk + j < K ? kk + j : K - 1; // past K: weight 0\n"
      "                const float s = UNIT_SCALE ? s0 : srow[kj / GROUP];\n"
      "                w[j] = kk + j < K ? (float)qv * s : 0.0f;\n"
      "            }\n"
      "#pragma unroll\n"
      "            for (int r = 0; r < MR; r++) {\n"
      "                const float *xr = xs + r * KT + e0;\n"
      "#pragma unroll\n"
      "                for (int j = 0; j < UNIT; j++) acc[r] = fmaf(xr[j], w[j], acc[r]);\n"
      "            }\n"
      "        }\n"
      "    }\n"
      "    // every thread reaches the shuffles (a warp past N too: its sums are 0)\n"
      "#pragma unroll\n"
      "    for (int r = 0; r < MR; r++)\n"
      "#pragma unroll\n"
      "        for (int o = 16; o > 0; o >>= 1) acc[r] += __shfl_xor_sync(0xffffffffu, acc[r], "
      "o);\n"
      "    if (lane != 0 || n >= N) return;\n"
      "#pragma unroll\n"
      "    for (int r = 0; r < MR; r++) {\n"
      "        if (r0 + r >= ROWS) break;\n"
      "        long long yo = n * %lldLL;\n",
      (long long)d->y_cs);
    row_offset(&k, d, "r0 + r", "yo", true);
    if (d->accumulate)
        B("        yp[yo] = %s(%s(yp[yo]) + acc[r]);\n", narrow(yt), widen(yt));
    else
        B("        yp[yo] = %s(acc[r]);\n", narrow(yt));
    B("    }\n");
    int smem = (int)(mr * KT * 4 + MR * 8);
    cuk_finish(&k, nrb * nnb, THREADS, smem);
}

/* w[n][k] = q[n][k] * scale rounded to x's dtype, into the scratch tail. */
static void dequantize(Cu *cu, const Value *v, const QMM *d) {
    const CgProgram *p = cu->p;
    int64_t total = d->n * d->k, kb = row_bytes(d), ng = groups(d);
    int64_t group = group_of(d);
    int64_t grid = (total + THREADS - 1) / THREADS;
    if (grid > (1 << 20)) grid = 1 << 20; /* a grid-stride loop does the rest */
    DType xt = (DType)d->x_dtype;
    CuKern k;
    cuk_begin(cu, &k, "qdeq");
    const char *q = ptr(&k, v->args[1].t, false), *sc = ptr(&k, v->args[2].t, false);
    B("    // w[%lld][%lld] = int%lld q * scale (group %lld), as %s, at arena + %lld\n",
      (long long)d->n, (long long)d->k, (long long)d->bits, (long long)group, dtype_name(xt),
      (long long)p->qmm_scratch_offset);
    B("    constexpr long long GRID = %lld, TOTAL = %lld, K = %lld, KB = %lld, NG = %lld, GROUP = "
      "%lld, OUT_OFFSET = %lld;\n",
      (long long)grid, (long long)total, (long long)d->k, (long long)kb, (long long)ng,
      (long long)group, (long long)p->qmm_scratch_offset);
    B("    const unsigned char *qp = (const unsigned char *)%s; const float *sp = %s;\n"
      "    %s *wp = (%s *)(bufs[0] + OUT_OFFSET);\n"
      "    for (long long i = (long long)blockIdx.x * %d + threadIdx.x; i < TOTAL; i += GRID * "
      "%d) {\n"
      "        const long long n = i / K, kk = i %% K;\n",
      q, sc, cu_stype(xt), cu_stype(xt), THREADS, THREADS);
    load_qv(&k, d, "        ", "qp[n * KB + kk]",
            "(qp[n * KB + kk / 2] >> (4 * (int)(kk & 1))) & 15");
    B("        wp[i] = %s((float)qv * sp[n * NG + kk / GROUP]);\n"
      "    }\n",
      narrow(xt));
    cuk_finish(&k, grid, THREADS, 0);
}

void cu_k_qmatmul(Cu *cu, const Value *v) {
    QMM d;
    const Value *bias;
    kd_qmatmul(cu->p, v, &d, &bias);
    if (bias) cu_k_broadcast_into(cu, bias, v);
    if (cg_qmm_rows(&d) == 0 || d.n == 0) return;
    if (!cg_cuda_qmm_dequantizes(&d)) {
        direct(cu, v, &d);
        return;
    }
    if (cu->p->qmm_scratch_bytes < d.n * d.k * (int64_t)dtype_size((DType)d.x_dtype)) {
        cu_fail(cu, "internal: no scratch planned for a quantized product");
        return;
    }
    dequantize(cu, v, &d);
    /* x @ w^T, w [n][k] row-major in the scratch: B[k][n] at n * k + k'. */
    CuStep s;
    memset(&s, 0, sizeof s);
    s.kind = CU_MATMUL;
    MM *mm = &s.mm;
    mm->dtype = d.x_dtype;
    mm->m = d.m, mm->n = d.n, mm->k = d.k;
    mm->a_rs = d.x_rs, mm->a_cs = d.x_cs;
    mm->b_rs = 1, mm->b_cs = d.k;
    mm->c_rs = d.y_rs, mm->c_cs = d.y_cs;
    mm->accumulate = d.accumulate, mm->nbatch = d.nbatch;
    for (int i = 0; i < d.nbatch; i++) {
        mm->batch[i] = d.batch[i];
        mm->a_bs[i] = d.x_bs[i];
        mm->c_bs[i] = d.y_bs[i];
    }
    cu_operand(cu, v->in[0], &s.slot[0], &s.off[0]);
    s.slot[1] = 0, s.off[1] = cu->p->qmm_scratch_offset;
    cu_operand(cu, v, &s.slot[2], &s.off[2]);
    ARENA_PUSH(cu->a, cu->steps, cu->nsteps, cu->cap, s);
}
