/* attention_backward on CUDA: the gradient of scaled_dot_product_attention
 * without the [L, S] probabilities, as the CPU's rt_attention_backward
 * (runtime/attention_bwd.c) computes it, in two generated kernels on the
 * program's stream (the second reads what the first wrote):
 *   1. one thread per (batch index, query row i): the row's log-sum-exp by
 *      a sweep over its keys, D = dot(dO_i, O_i), then a second sweep
 *      accumulating dq_i = scale * sum_j P_ij (dO_i . v_j - D) k_j;
 *      lse and D go to the packed result's last two columns;
 *   2. one thread per (batch index, key row j): dv_j = sum_i P_ij dO_i and
 *      dk_j = scale * sum_i P_ij (dO_i . v_j - D_i) q_i, with
 *      P_ij = exp(s_ij - lse_i) recomputed from q and k.
 * Causal rows stop at key i (kernel 1) and key rows start at query j
 * (kernel 2); masks are read where the forward reads them. Everything is
 * f32 (16-bit operands widened as loaded), the result f32. These kernels
 * keep their rows in registers and global memory, not tiles in shared
 * memory: correct at any length in O(L) memory, not tuned as the
 * forward's tiles are. */
#include <string.h>

#include "codegen/cuda/cu.h"

#define THREADS 256

static const char *widen(DType t) {
    return t == DT_F16 ? "tg_h2f" : t == DT_BF16 ? "tg_b2f" : "";
}

static const char *ptr(CuKern *k, const Value *x, bool writable, DType *dt) {
    Access a;
    kd_access_of(k->cu->p, x, &a);
    *dt = a.dt;
    return cu_str(k->cu, "(%s + %lld)", cuk_base(k, &a, writable), (long long)a.offset);
}

#define B(...) sb_printf(&k.body, __VA_ARGS__)

/* The constants, pointers and batch offsets both kernels start with;
 * `rows` is L (kernel 1) or S (kernel 2). */
static void head(CuKern *kp, const Value *v, const RtAttnBwdDesc *bd, int64_t nb, int64_t rows,
                 DType *dt, DType *mdt) {
    CuKern k = *kp;
    const RtAttnDesc *d = &bd->f;
    const Value *mv = v->args[3].kind == ARG_TENSOR ? v->args[3].t : NULL;
    const char *q = ptr(&k, v->args[0].t, false, dt), *kk = ptr(&k, v->args[1].t, false, dt);
    const char *vv = ptr(&k, v->args[2].t, false, dt), *o = ptr(&k, v->args[4].t, false, dt);
    const char *g = ptr(&k, v->args[5].t, false, dt);
    DType rdt;
    const char *r = ptr(&k, v, true, &rdt);
    const char *m = mv ? ptr(&k, mv, false, mdt) : NULL;
    float scale = (float)d->scale;
    uint32_t sbits;
    memcpy(&sbits, &scale, 4);
    int64_t w = (d->e > d->ev ? d->e : d->ev) + 2;
    B("    constexpr int E = %lld, EV = %lld, E1 = E > 0 ? E : 1, EV1 = EV > 0 ? EV : 1;\n",
      (long long)d->e, (long long)d->ev);
    B("    constexpr long long L = %lld, S = %lld, W = %lld, ROWS = %lld, N = %lld;\n",
      (long long)d->l, (long long)d->s, (long long)w, (long long)rows, (long long)(nb * rows));
    B("    const float scale = __int_as_float(0x%08x); // %.9g\n", sbits, (double)scale);
    B("    const long long t = (long long)blockIdx.x * %d + threadIdx.x;\n"
      "    if (t >= N) return;\n"
      "    long long bi = t / ROWS;\n"
      "    const long long row = t %% ROWS;\n"
      "    long long qo = 0, ko = 0, vo = 0, mo = 0, oo = 0, go = 0, ro = 0;\n",
      THREADS);
    for (int i = (int)d->nbatch - 1; i >= 0; i--)
        B("    { long long x = bi %% %lldLL; bi /= %lldLL; qo += x * %lldLL; ko += x * %lldLL; "
          "vo += x * %lldLL; mo += x * %lldLL; oo += x * %lldLL; go += x * %lldLL; "
          "ro += x * %lldLL; }\n",
          (long long)d->batch[i], (long long)d->batch[i], (long long)d->q_bs[i],
          (long long)d->k_bs[i], (long long)d->v_bs[i], (long long)d->m_bs[i],
          (long long)d->o_bs[i], (long long)bd->g_bs[i], (long long)bd->r_bs[i]);
    B("    (void)mo; (void)oo; (void)L; (void)S; (void)W;\n");
    B("    const auto *qp = %s; const auto *kp = %s; const auto *vp = %s;\n", q, kk, vv);
    B("    const auto *op = %s; const auto *gp = %s; float *rp = %s;\n", o, g, r);
    B("    (void)op; (void)vp;\n");
    if (m) B("    const auto *mp = %s;\n", m);
    *kp = k;
}

/* `float s` = the score of query row gi against key j (qr: the query row
 * in registers, or kr: the key row, the other read from memory), masked. */
static void score(CuKern *kp, const RtAttnDesc *d, DType dt, DType mdt, bool query_in_regs) {
    CuKern k = *kp;
    const char *ld = widen(dt);
    B("            float s = 0.0f;\n"
      "            for (int e = 0; e < E; e++)\n");
    if (query_in_regs)
        B("                s = fmaf(qr[e], %s(kp[ko + j * %lldLL + e * %lldLL]), s);\n", ld,
          (long long)d->k_rs, (long long)d->k_cs);
    else
        B("                s = fmaf(%s(qp[qo + gi * %lldLL + e * %lldLL]), kr[e], s);\n", ld,
          (long long)d->q_rs, (long long)d->q_cs);
    B("            s *= scale;\n");
    if (d->mask_kind == 1)
        B("            if (mp[mo + gi * %lldLL + j * %lldLL] == 0) s = -TG_INF;\n",
          (long long)d->m_rs, (long long)d->m_cs);
    else if (d->mask_kind == 2)
        B("            s += %s(mp[mo + gi * %lldLL + j * %lldLL]);\n", widen(mdt),
          (long long)d->m_rs, (long long)d->m_cs);
    *kp = k;
}

void cu_k_attention_bwd(Cu *cu, const Value *v) {
    RtAttnBwdDesc bd;
    cg_attn_bwd_describe(cu->p, v, &bd);
    const RtAttnDesc *d = &bd.f;
    int64_t nb = 1;
    for (int i = 0; i < d->nbatch; i++)
        nb *= d->batch[i];
    DType dt = DT_F32, mdt = DT_BOOL;
    /* Kernel 1: dq, lse and D, one thread per query row. */
    if (nb * d->l > 0) {
        CuKern k;
        cuk_begin(cu, &k, "sdpa_bwd_q");
        head(&k, v, &bd, nb, d->l, &dt, &mdt);
        const char *ld = widen(dt);
        B("    const long long gi = row;\n"
          "    float qr[E1], gr[EV1], acc[E1];\n"
          "    for (int e = 0; e < E; e++) {\n"
          "        qr[e] = %s(qp[qo + gi * %lldLL + e * %lldLL]);\n"
          "        acc[e] = 0.0f;\n"
          "    }\n"
          "    float D = 0.0f;\n"
          "    for (int c = 0; c < EV; c++) {\n"
          "        gr[c] = %s(gp[go + gi * %lldLL + c * %lldLL]);\n"
          "        D = fmaf(gr[c], %s(op[oo + gi * %lldLL + c * %lldLL]), D);\n"
          "    }\n",
          ld, (long long)d->q_rs, (long long)d->q_cs, ld, (long long)bd.g_rs, (long long)bd.g_cs,
          ld, (long long)d->o_rs, (long long)d->o_cs);
        B("    const long long jend = %s;\n"
          "    float mx = -TG_INF, sum = 0.0f;\n"
          "    for (long long j = 0; j < jend; j++) {\n"
          "        {\n",
          d->causal ? "S < gi + 1 ? S : gi + 1" : "S");
        score(&k, d, dt, mdt, true);
        B("            if (s == -TG_INF) continue;\n"
          "            if (s > mx) { sum = sum * expf(mx - s) + 1.0f; mx = s; }\n"
          "            else sum += expf(s - mx); // a NaN score makes the row NaN\n"
          "        }\n"
          "    }\n"
          "    const float lse = mx + logf(sum); // every key masked: -inf, P NaN\n"
          "    for (long long j = 0; j < jend; j++) {\n"
          "        {\n");
        score(&k, d, dt, mdt, true);
        B("            const float p = expf(s - lse);\n"
          "            float dp = 0.0f;\n"
          "            for (int c = 0; c < EV; c++)\n"
          "                dp = fmaf(gr[c], %s(vp[vo + j * %lldLL + c * %lldLL]), dp);\n"
          "            const float ds = p * (dp - D);\n"
          "            for (int e = 0; e < E; e++)\n"
          "                acc[e] = fmaf(ds, %s(kp[ko + j * %lldLL + e * %lldLL]), acc[e]);\n"
          "        }\n"
          "    }\n"
          "    float *out = rp + ro + gi * W;\n"
          "    for (int e = 0; e < E; e++) out[e] = acc[e] * scale;\n"
          "    out[W - 2] = lse;\n"
          "    out[W - 1] = D;\n",
          ld, (long long)d->v_rs, (long long)d->v_cs, ld, (long long)d->k_rs, (long long)d->k_cs);
        cuk_finish(&k, (nb * d->l + THREADS - 1) / THREADS, THREADS, 0);
    }
    /* Kernel 2: dk and dv, one thread per key row. */
    if (nb * d->s > 0) {
        CuKern k;
        cuk_begin(cu, &k, "sdpa_bwd_kv");
        head(&k, v, &bd, nb, d->s, &dt, &mdt);
        const char *ld = widen(dt);
        B("    const long long j = row;\n"
          "    float kr[E1], vr[EV1], dk[E1], dv[EV1];\n"
          "    for (int e = 0; e < E; e++) {\n"
          "        kr[e] = %s(kp[ko + j * %lldLL + e * %lldLL]);\n"
          "        dk[e] = 0.0f;\n"
          "    }\n"
          "    for (int c = 0; c < EV; c++) {\n"
          "        vr[c] = %s(vp[vo + j * %lldLL + c * %lldLL]);\n"
          "        dv[c] = 0.0f;\n"
          "    }\n"
          "    for (long long gi = %s; gi < L; gi++) {\n"
          "        {\n",
          ld, (long long)d->k_rs, (long long)d->k_cs, ld, (long long)d->v_rs, (long long)d->v_cs,
          d->causal ? "j" : "0");
        score(&k, d, dt, mdt, false);
        B("            const float *stat = rp + ro + gi * W + W - 2; // lse, D (kernel 1)\n"
          "            const float p = expf(s - stat[0]);\n"
          "            float dp = 0.0f;\n"
          "            for (int c = 0; c < EV; c++) {\n"
          "                const float g = %s(gp[go + gi * %lldLL + c * %lldLL]);\n"
          "                dv[c] = fmaf(p, g, dv[c]);\n"
          "                dp = fmaf(g, vr[c], dp);\n"
          "            }\n"
          "            const float ds = p * (dp - stat[1]);\n"
          "            for (int e = 0; e < E; e++)\n"
          "                dk[e] = fmaf(ds, %s(qp[qo + gi * %lldLL + e * %lldLL]), dk[e]);\n"
          "        }\n"
          "    }\n"
          "    float *ok = rp + ro + (L + j) * W, *ov = rp + ro + (L + S + j) * W;\n"
          "    for (int e = 0; e < E; e++) ok[e] = dk[e] * scale;\n"
          "    for (int c = 0; c < EV; c++) ov[c] = dv[c];\n",
          ld, (long long)bd.g_rs, (long long)bd.g_cs, ld, (long long)d->q_rs, (long long)d->q_cs);
        cuk_finish(&k, (nb * d->s + THREADS - 1) / THREADS, THREADS, 0);
    }
}
