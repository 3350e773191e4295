/* scaled_dot_product_attention on the GPU: a FlashAttention-2 style
 * forward (Dao, "FlashAttention-2", 2023), one kernel per node, so that
 * the [L, S] scores are never stored in global memory and the node needs
 * no arena scratch (cg_attn_plan plans none on CUDA).
 *
 * The node's description is the CPU's (cg_attn_describe: sizes, element
 * strides, batch strides with 0 where an operand broadcasts, the mask's
 * kind and strides, scale); every number of it is a compile-time constant
 * of the generated source, as the graph's shapes are static.
 *
 * Mapping: one block of 256 threads per (batch index, tile of BR query
 * rows), blockIdx.x = batch * NQB + tile (the runtime's grid is 1-D). The
 * threads form a 16 x 16 grid: ty owns rows ty*RT .. ty*RT+RT-1 of the
 * tile (RT = BR/16), tx owns key columns tx + 16c of a score tile (c <
 * BC/16) and output columns tx + 16v (v < ceil(Ev/16)). For each tile of
 * BC keys (causal: only up to the tile's last row):
 *   K tile -> shared; S = scale * Q K^T (+ mask, -inf where masked);
 *   row max over the 16 threads of a row (shuffles within a half-warp);
 *   P = exp(S - m'), acc *= exp(m - m'), partial row sums likewise;
 *   P -> shared; V tile -> shared (the buffer K used); acc += P V.
 * out = acc / sum (the partial sums added across the row's threads),
 * rounded once into the output dtype: a row whose keys are all masked has
 * sum 0 and acc 0, hence NaN, as in PyTorch; S = 0 gives zeros, as the
 * CPU kernel does. Everything is f32; f16/bf16 are widened as the tiles
 * are loaded. No tensor cores: the products are f32 FMAs from shared
 * memory (correctness first; the CPU's numbers are what the diff suite
 * compares with).
 *
 * Shared memory (dynamic; the runtime raises the function's limit above
 * 48 KiB): Q [BR][QS], K or V [BC][max(QS, Ev)], P [BR][PS] floats. The
 * tile sizes are the largest of TILES that fit every architecture the
 * module may run on (cu_attention_tiles.c; see cu_attention_smem_limit);
 * E = Ev = 256 takes 32 x 32 tiles. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "codegen/cuda/cu.h"
#include "codegen/cuda/cu_attention_tiles.h"

#define THREADS 256

int cu_attention_smem_limit(const int *archs, int narchs) {
    /* The opt-in maximum of dynamic shared memory per block: 64 KiB on
     * sm_75, 99 KiB on sm_86/89/120 (and the least of the others'). The
     * PTX may be JIT-compiled for any later GPU, so nothing above the
     * 99 KiB that all of sm_80 and later offer. */
    for (int i = 0; i < narchs; i++)
        if (archs[i] < 80) return 64 * 1024;
    return 99 * 1024;
}

const char *cu_attention_unsupported(const CgProgram *p, int smem_max) {
    static char msg[512];
    const Graph *g = p->g;
    for (int i = 0; i < g->nvalues; i++) {
        const Value *v = g->values[i];
        if (v->op != OP_SDPA || v->dead) continue;
        RtAttnDesc d;
        CuAttnTiles t;
        cg_attn_describe(p, v, &d);
        const SrcLoc *l = &v->loc;
        const char *file = l->file ? l->file->path : "<input>";
        if (!cu_attention_tiles(&d, smem_max, &t)) {
            snprintf(msg, sizeof msg,
                     "scaled_dot_product_attention at %s:%d:%d: head dims E = %lld and Ev = %lld "
                     "need more shared memory than the CUDA kernel's smallest tiles can have "
                     "(%d KiB on the chosen architectures; --target cpu computes it)",
                     file, l->line, l->col, (long long)d.e, (long long)d.ev, smem_max / 1024);
            return msg;
        }
        if (cu_attention_grid_fits(&d, t.br)) continue;
        snprintf(msg, sizeof msg,
                 "scaled_dot_product_attention at %s:%d:%d: more than 2^31 - 1 thread blocks of "
                 "%d query rows (--target cpu computes it)",
                 file, l->line, l->col, t.br);
        return msg;
    }
    return NULL;
}

/* The widening load and the rounding store of a dtype's storage. */
static const char *widen(DType t) {
    return t == DT_F16 ? "tg_h2f" : t == DT_BF16 ? "tg_b2f" : "";
}
static const char *narrow(DType t) {
    return t == DT_F16 ? "tg_f2h" : t == DT_BF16 ? "tg_f2b" : "";
}

/* A pointer to x's element 0 (its view offset included). */
static const char *ptr(CuKern *k, const Value *x, bool writable, DType *dt) {
    Access a;
    kd_access_of(k->cu->p, x, &a);
    *dt = a.dt;
    return cu_str(k->cu, "(%s + %lld)", cuk_base(k, &a, writable), (long long)a.offset);
}

#define B(...) sb_printf(&k.body, __VA_ARGS__)

void cu_k_attention(Cu *cu, const Value *v) {
    if (v->op == OP_SDPA_DROP) { /* --target cuda keeps attention's dropout written out */
        cu_fail(cu, "internal: attention_dropout has no CUDA kernel");
        return;
    }
    if (v->op == OP_SDPA_BWD) { /* the gradient: cu_attention_bwd.c */
        cu_k_attention_bwd(cu, v);
        return;
    }
    const CgProgram *p = cu->p;
    RtAttnDesc d;
    cg_attn_describe(p, v, &d);
    CuAttnTiles t;
    if (!cu_attention_tiles(&d, cu->smem_max, &t)) { /* cu_attention_unsupported said so */
        cu_fail(cu, "internal: no tiles for scaled_dot_product_attention");
        return;
    }
    int64_t nb = 1;
    for (int i = 0; i < d.nbatch; i++)
        nb *= d.batch[i];
    int64_t nqb = (d.l + t.br - 1) / t.br;
    if (nb * nqb == 0 || d.ev == 0) return; /* an empty output: nothing to write */

    CuKern k;
    cuk_begin(cu, &k, "sdpa");
    const Value *mv = v->args[3].kind == ARG_TENSOR ? v->args[3].t : NULL;
    DType dt, mdt = DT_BOOL;
    const char *q = ptr(&k, v->args[0].t, false, &dt), *kp = ptr(&k, v->args[1].t, false, &dt);
    const char *vp = ptr(&k, v->args[2].t, false, &dt), *o = ptr(&k, v, true, &dt);
    const char *m = mv ? ptr(&k, mv, false, &mdt) : NULL;
    const char *ld = widen(dt), *st = narrow(dt);
    float scale = (float)d.scale;
    uint32_t sbits;
    memcpy(&sbits, &scale, 4);

    B("    // q [%lld, %lld], k [%lld, %lld], v [%lld, %lld] -> out [%lld, %lld] per batch index\n",
      (long long)d.l, (long long)d.e, (long long)d.s, (long long)d.e, (long long)d.s,
      (long long)d.ev, (long long)d.l, (long long)d.ev);
    B("    constexpr int E = %lld, EV = %lld, BR = %d, BC = %d, RT = BR / 16, CT = BC / 16;\n",
      (long long)d.e, (long long)d.ev, t.br, t.bc);
    B("    constexpr int NV = (EV + 15) / 16, E1 = E > 0 ? E : 1, QS = %d, PS = %d, KVS = %d;\n",
      t.qs, t.ps, t.kvs);
    B("    constexpr long long L = %lld, S = %lld, NQB = %lld;\n", (long long)d.l, (long long)d.s,
      (long long)nqb);
    B("    const float scale = __int_as_float(0x%08x); // %.9g\n", sbits, (double)scale);
    B("    extern __shared__ float4 attn_smem[];\n"
      "    float *sq = (float *)attn_smem, *skv = sq + BR * QS, *sp = skv + BC * KVS;\n"
      "    const int tid = threadIdx.x, tx = tid %% 16, ty = tid / 16;\n"
      "    long long bi = blockIdx.x / NQB;\n"
      "    const long long i0 = (long long)(blockIdx.x %% NQB) * BR;\n"
      "    long long qo = 0, ko = 0, vo = 0, mo = 0, oo = 0;\n");
    /* The batch index's offsets in each operand, innermost dim first. */
    for (int i = (int)d.nbatch - 1; i >= 0; i--)
        B("    { long long x = bi %% %lldLL; bi /= %lldLL; qo += x * %lldLL; ko += x * %lldLL; "
          "vo += x * %lldLL; mo += x * %lldLL; oo += x * %lldLL; }\n",
          (long long)d.batch[i], (long long)d.batch[i], (long long)d.q_bs[i], (long long)d.k_bs[i],
          (long long)d.v_bs[i], (long long)d.m_bs[i], (long long)d.o_bs[i]);
    B("    (void)mo;\n");
    B("    const auto *qp = %s; const auto *kp = %s; const auto *vp = %s; auto *op = %s;\n", q, kp,
      vp, o);
    if (m) B("    const auto *mp = %s;\n", m);
    /* The query tile, rows past L zero. */
    B("    for (int x = tid; x < BR * E; x += %d) {\n"
      "        int r = x / E1, e = x %% E1;\n"
      "        long long gi = i0 + r;\n"
      "        sq[r * QS + e] = gi < L ? %s(qp[qo + gi * %lldLL + e * %lldLL]) : 0.0f;\n"
      "    }\n",
      THREADS, ld, (long long)d.q_rs, (long long)d.q_cs);
    B("    float mx[RT], sum[RT], acc[RT][NV];\n"
      "#pragma unroll\n"
      "    for (int i = 0; i < RT; i++) {\n"
      "        mx[i] = -TG_INF, sum[i] = 0.0f;\n"
      "#pragma unroll\n"
      "        for (int c = 0; c < NV; c++) acc[i][c] = 0.0f;\n"
      "    }\n");
    /* Causal: keys past the tile's last row take part in none of its rows. */
    if (d.causal)
        B("    const long long jend = S < i0 + BR ? S : i0 + BR;\n");
    else
        B("    const long long jend = S;\n");
    B("    for (long long j0 = 0; j0 < jend; j0 += BC) {\n"
      "        __syncthreads(); // the previous tile's V is read\n"
      "        for (int x = tid; x < BC * E; x += %d) {\n"
      "            int r = x / E1, e = x %% E1;\n"
      "            long long j = j0 + r;\n"
      "            skv[r * QS + e] = j < S ? %s(kp[ko + j * %lldLL + e * %lldLL]) : 0.0f;\n"
      "        }\n"
      "        __syncthreads();\n"
      "        float s[RT][CT];\n"
      "#pragma unroll\n"
      "        for (int i = 0; i < RT; i++)\n"
      "#pragma unroll\n"
      "            for (int c = 0; c < CT; c++) s[i][c] = 0.0f;\n"
      "#pragma unroll 4\n"
      "        for (int e = 0; e < E; e++) {\n"
      "            float qv[RT], kv[CT];\n"
      "#pragma unroll\n"
      "            for (int i = 0; i < RT; i++) qv[i] = sq[(ty * RT + i) * QS + e];\n"
      "#pragma unroll\n"
      "            for (int c = 0; c < CT; c++) kv[c] = skv[(tx + 16 * c) * QS + e];\n"
      "#pragma unroll\n"
      "            for (int i = 0; i < RT; i++)\n"
      "#pragma unroll\n"
      "                for (int c = 0; c < CT; c++) s[i][c] = fmaf(qv[i], kv[c], s[i][c]);\n"
      "        }\n",
      THREADS, ld, (long long)d.k_rs, (long long)d.k_cs);
    /* Masks, then the online softmax of each row. */
    B("#pragma unroll\n"
      "        for (int i = 0; i < RT; i++) {\n"
      "            const long long gi = i0 + ty * RT + i;\n"
      "            float m = mx[i];\n"
      "#pragma unroll\n"
      "            for (int c = 0; c < CT; c++) {\n"
      "                const long long j = j0 + tx + 16 * c;\n"
      "                float x = s[i][c] * scale;\n"
      "                bool keep = j < S%s;\n",
      d.causal ? " && j <= gi" : "");
    if (d.mask_kind == 1)
        B("                keep = keep && gi < L && mp[mo + gi * %lldLL + j * %lldLL] != 0;\n",
          (long long)d.m_rs, (long long)d.m_cs);
    else if (d.mask_kind == 2)
        B("                if (keep && gi < L) x += %s(mp[mo + gi * %lldLL + j * %lldLL]);\n",
          widen(mdt), (long long)d.m_rs, (long long)d.m_cs);
    B("                s[i][c] = keep ? x : -TG_INF;\n"
      "                m = fmaxf(m, s[i][c]); // a NaN score is skipped; its exp makes the row "
      "NaN\n"
      "            }\n"
      "#pragma unroll\n"
      "            for (int w = 8; w > 0; w >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, "
      "w));\n"
      "            float corr = 1.0f, part = 0.0f;\n"
      "            if (m == -TG_INF) { // no key takes part yet: P = 0, nothing to rescale\n"
      "#pragma unroll\n"
      "                for (int c = 0; c < CT; c++) s[i][c] = 0.0f;\n"
      "            } else {\n"
      "                corr = expf(mx[i] - m); // 0 when the old max was -inf\n"
      "#pragma unroll\n"
      "                for (int c = 0; c < CT; c++) {\n"
      "                    s[i][c] = expf(s[i][c] - m);\n"
      "                    part += s[i][c];\n"
      "                }\n"
      "                mx[i] = m;\n"
      "            }\n"
      "            sum[i] = sum[i] * corr + part;\n"
      "#pragma unroll\n"
      "            for (int c = 0; c < NV; c++) acc[i][c] *= corr;\n"
      "#pragma unroll\n"
      "            for (int c = 0; c < CT; c++) sp[(ty * RT + i) * PS + tx + 16 * c] = s[i][c];\n"
      "        }\n"
      "        __syncthreads(); // P is written, K is read\n"
      "        for (int x = tid; x < BC * EV; x += %d) {\n"
      "            int r = x / EV, c = x %% EV;\n"
      "            long long j = j0 + r;\n"
      "            skv[r * KVS + c] = j < S ? %s(vp[vo + j * %lldLL + c * %lldLL]) : 0.0f;\n"
      "        }\n"
      "        __syncthreads();\n"
      "#pragma unroll 4\n"
      "        for (int jj = 0; jj < BC; jj++) {\n"
      "            float pv[RT];\n"
      "#pragma unroll\n"
      "            for (int i = 0; i < RT; i++) pv[i] = sp[(ty * RT + i) * PS + jj];\n"
      "#pragma unroll\n"
      "            for (int c = 0; c < NV; c++) {\n"
      "                if (NV * 16 != EV && tx + 16 * c >= EV) break;\n"
      "                float vv = skv[jj * KVS + tx + 16 * c];\n"
      "#pragma unroll\n"
      "                for (int i = 0; i < RT; i++) acc[i][c] = fmaf(pv[i], vv, acc[i][c]);\n"
      "            }\n"
      "        }\n"
      "    }\n",
      THREADS, ld, (long long)d.v_rs, (long long)d.v_cs);
    /* The row sums across the row's 16 threads, then out = acc / sum. */
    B("#pragma unroll\n"
      "    for (int i = 0; i < RT; i++) {\n"
      "        float l = sum[i];\n"
      "#pragma unroll\n"
      "        for (int w = 8; w > 0; w >>= 1) l += __shfl_xor_sync(0xffffffffu, l, w);\n"
      "        const long long gi = i0 + ty * RT + i;\n"
      "        // all keys masked: 0 * inf = NaN, as PyTorch; no keys at all: zeros\n"
      "        const float inv = S > 0 ? 1.0f / l : 0.0f;\n"
      "        if (gi >= L) continue;\n"
      "#pragma unroll\n"
      "        for (int c = 0; c < NV; c++) {\n"
      "            if (NV * 16 != EV && tx + 16 * c >= EV) break;\n"
      "            op[oo + gi * %lldLL + (tx + 16 * c) * %lldLL] = %s(acc[i][c] * inv);\n"
      "        }\n"
      "    }\n",
      (long long)d.o_rs, (long long)d.o_cs, st);
    cuk_finish(&k, nb * nqb, THREADS, (int)t.smem);
}
