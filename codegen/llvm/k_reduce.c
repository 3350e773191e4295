/* Reductions and row-wise normalisations: kept dims are the outer loops
 * (the first is split across threads), reduced dims the inner ones, with
 * the input's elementwise producers computed in the inner loop. Sums
 * accumulate in f32 (f64 for f64, i64 for integers) as PyTorch does for
 * reduced-precision inputs; multi-pass ops (var, logsumexp, softmax,
 * layer_norm) re-read their input rather than store it. Reductions over
 * leading dims, whose input is contiguous along a kept dim, go to
 * k_reduce_cols.c instead (reduced loops outside, kept ones inside). */
#include <math.h>
#include <string.h>

#include "codegen/llvm/cg.h"

#define B (cg->b)

/* The shared description (codegen/kernel_desc.c), rendered as loops. */
typedef struct Red {
    Kern k;
    KReduce d;
} Red;

static void red_setup(Cg *cg, Red *r, const Value *v, bool same_shape_out) {
    memset(r, 0, sizeof *r);
    kd_reduction(cg->p, v, same_shape_out, &r->d);
    kern_begin(cg, &r->k, op_display_name(v));
    r->k.root = v;
    r->k.sp = r->d.space;
}

static int64_t red_work(const Red *r) {
    return kspace_work_inner(&r->k.sp);
}

/* One pass over the reduced loops: acc = step(acc, x). */
typedef LLVMValueRef (*StepFn)(Cg *cg, Red *r, LLVMValueRef acc, LLVMValueRef x, void *ctx);

static LLVMValueRef x_as(Cg *cg, Red *r, DType at) {
    return cg_convert(cg, cg_expr(&r->k, r->d.x, false), r->d.xt, at);
}

static LLVMValueRef run_pass(Cg *cg, Red *r, DType at, LLVMValueRef init, StepFn step, void *ctx,
                             bool vectorize) {
    LLVMValueRef slot = kern_alloca(&r->k, LLVMTypeOf(init));
    LLVMBuildStore(B, init, slot);
    LoopNest ln;
    kern_open(&r->k, &ln, r->k.sp.nkept, r->k.sp.nloops, vectorize);
    LLVMValueRef acc = LLVMBuildLoad2(B, LLVMTypeOf(init), slot, "");
    LLVMValueRef x = x_as(cg, r, at);
    LLVMBuildStore(B, step(cg, r, acc, x, ctx), slot);
    kern_close(&r->k, &ln);
    return LLVMBuildLoad2(B, LLVMTypeOf(init), slot, "");
}

static bool isf(DType t) {
    return dtype_is_float(t);
}
static DType float_acc(DType t) {
    return t == DT_F64 ? DT_F64 : DT_F32;
}

static LLVMValueRef st_add(Cg *cg, Red *r, LLVMValueRef a, LLVMValueRef x, void *ctx) {
    (void)r, (void)ctx;
    return LLVMGetTypeKind(LLVMTypeOf(a)) == LLVMIntegerTypeKind ? LLVMBuildAdd(B, a, x, "")
                                                                 : LLVMBuildFAdd(B, a, x, "");
}
static LLVMValueRef st_mul(Cg *cg, Red *r, LLVMValueRef a, LLVMValueRef x, void *ctx) {
    (void)r, (void)ctx;
    return LLVMGetTypeKind(LLVMTypeOf(a)) == LLVMIntegerTypeKind ? LLVMBuildMul(B, a, x, "")
                                                                 : LLVMBuildFMul(B, a, x, "");
}
/* sum of (x - mean)^2 */
static LLVMValueRef st_sqdev(Cg *cg, Red *r, LLVMValueRef a, LLVMValueRef x, void *ctx) {
    (void)r;
    LLVMValueRef d = LLVMBuildFSub(B, x, (LLVMValueRef)ctx, "");
    return LLVMBuildFAdd(B, a, LLVMBuildFMul(B, d, d, ""), "");
}
static LLVMValueRef st_sq(Cg *cg, Red *r, LLVMValueRef a, LLVMValueRef x, void *ctx) {
    (void)r, (void)ctx;
    return LLVMBuildFAdd(B, a, LLVMBuildFMul(B, x, x, ""), "");
}
/* sum of exp(x - m) */
static LLVMValueRef st_sumexp(Cg *cg, Red *r, LLVMValueRef a, LLVMValueRef x, void *ctx) {
    DType t = LLVMTypeOf(a) == cg->t_f64 ? DT_F64 : DT_F32;
    (void)r;
    return LLVMBuildFAdd(B, a, cg_exp(cg, LLVMBuildFSub(B, x, (LLVMValueRef)ctx, ""), t), "");
}
typedef struct MaxCtx {
    bool is_max, nan_wins;
    DType t;
} MaxCtx;
static LLVMValueRef st_max(Cg *cg, Red *r, LLVMValueRef a, LLVMValueRef x, void *vctx) {
    (void)r;
    MaxCtx *c = vctx;
    if (c->t == DT_BOOL) return c->is_max ? LLVMBuildOr(B, a, x, "") : LLVMBuildAnd(B, a, x, "");
    LLVMValueRef take;
    if (isf(c->t)) {
        take = LLVMBuildFCmp(B, c->is_max ? LLVMRealOGT : LLVMRealOLT, x, a, "");
        if (c->nan_wins) take = LLVMBuildOr(B, take, LLVMBuildFCmp(B, LLVMRealUNO, x, x, ""), "");
    } else {
        bool u = dt_unsigned(c->t);
        take = LLVMBuildICmp(
            B, c->is_max ? (u ? LLVMIntUGT : LLVMIntSGT) : (u ? LLVMIntULT : LLVMIntSLT), x, a, "");
    }
    return LLVMBuildSelect(B, take, x, a, "");
}
static LLVMValueRef st_and(Cg *cg, Red *r, LLVMValueRef a, LLVMValueRef x, void *ctx) {
    (void)r, (void)ctx;
    return LLVMBuildAnd(B, a, x, "");
}
static LLVMValueRef st_or(Cg *cg, Red *r, LLVMValueRef a, LLVMValueRef x, void *ctx) {
    (void)r, (void)ctx;
    return LLVMBuildOr(B, a, x, "");
}

/* Max (min) of floats as an integer reduction, which LLVM vectorises
 * without fast-math flags: the bit pattern b maps to the signed integer
 * b ^ ((b >> 31) & 0x7fffffff), which orders like the float (and is its
 * own inverse). NaN is tracked by a separate or-reduction, so it wins
 * whatever its sign bit (PyTorch's amax propagates NaN). */
static LLVMValueRef fmax_pass(Cg *cg, Red *r, DType at, bool is_max, bool nan_wins) {
    bool dbl = at == DT_F64;
    LLVMTypeRef ft = dbl ? cg->t_f64 : cg->t_f32, it = dbl ? cg->t_i64 : cg->t_i32;
    unsigned w = dbl ? 64 : 32;
    LLVMValueRef shift = LLVMConstInt(it, w - 1, false);
    LLVMValueRef mag = LLVMConstInt(it, dbl ? 0x7fffffffffffffffULL : 0x7fffffffULL, false);
#define KEY(bits)                                                                                  \
    LLVMBuildXor(B, bits, LLVMBuildAnd(B, LLVMBuildAShr(B, bits, shift, ""), mag, ""), "")
    LLVMValueRef start =
        LLVMBuildBitCast(B, LLVMConstReal(ft, is_max ? -INFINITY : INFINITY), it, "");
    LLVMValueRef key = kern_alloca(&r->k, it), nan = kern_alloca(&r->k, cg->t_i8);
    LLVMBuildStore(B, KEY(start), key);
    LLVMBuildStore(B, LLVMConstInt(cg->t_i8, 0, false), nan);
    LoopNest ln;
    kern_open(&r->k, &ln, r->k.sp.nkept, r->k.sp.nloops, false);
    LLVMValueRef x = x_as(cg, r, at);
    LLVMValueRef kx = KEY(LLVMBuildBitCast(B, x, it, ""));
    LLVMValueRef ka = LLVMBuildLoad2(B, it, key, "");
    LLVMValueRef take = LLVMBuildICmp(B, is_max ? LLVMIntSGT : LLVMIntSLT, kx, ka, "");
    LLVMBuildStore(B, LLVMBuildSelect(B, take, kx, ka, ""), key);
    if (nan_wins) {
        LLVMValueRef isn = LLVMBuildZExt(B, LLVMBuildFCmp(B, LLVMRealUNO, x, x, ""), cg->t_i8, "");
        LLVMBuildStore(B, LLVMBuildOr(B, LLVMBuildLoad2(B, cg->t_i8, nan, ""), isn, ""), nan);
    }
    kern_close(&r->k, &ln);
    LLVMValueRef k = LLVMBuildLoad2(B, it, key, "");
    LLVMValueRef res = LLVMBuildBitCast(B, KEY(k), ft, "");
#undef KEY
    if (!nan_wins) return res;
    LLVMValueRef any = LLVMBuildICmp(B, LLVMIntNE, LLVMBuildLoad2(B, cg->t_i8, nan, ""),
                                     LLVMConstInt(cg->t_i8, 0, false), "");
    return LLVMBuildSelect(B, any, LLVMConstReal(ft, NAN), res, "");
}

LLVMValueRef cg_red_extreme(Cg *cg, DType t, bool is_max) {
    /* The identity of max (min): -inf (+inf), or the type's bounds. */
    if (isf(t)) return cg_const(cg, t, is_max ? -INFINITY : INFINITY);
    if (t == DT_BOOL) return LLVMConstInt(cg->t_i1, !is_max, false);
    LLVMTypeRef ty = cg_ctype(cg, t);
    unsigned w = LLVMGetIntTypeWidth(ty);
    if (dt_unsigned(t)) return is_max ? LLVMConstNull(ty) : LLVMConstAllOnes(ty);
    unsigned long long minv = 1ULL << (w - 1);
    return is_max ? LLVMConstInt(ty, minv, false) : LLVMConstInt(ty, minv - 1, false);
}

static LLVMValueRef arg_extreme(Cg *cg, Red *r, bool is_max) {
    /* Value and index in two allocas: the first extreme wins; NaN counts
     * as the extreme (torch.argmax). */
    DType t = r->d.xt;
    LLVMTypeRef ct = cg_ctype(cg, t);
    LLVMValueRef best = kern_alloca(&r->k, ct), bi = kern_alloca(&r->k, cg->t_i64);
    LLVMBuildStore(B, cg_red_extreme(cg, t, is_max), best);
    LLVMBuildStore(B, cg_const_i64(cg, 0), bi);
    LoopNest ln;
    kern_open(&r->k, &ln, r->k.sp.nkept, r->k.sp.nloops, false);
    LLVMValueRef x = cg_expr(&r->k, r->d.x, false);
    LLVMValueRef b = LLVMBuildLoad2(B, ct, best, "");
    LLVMValueRef take;
    if (isf(t)) {
        take = LLVMBuildFCmp(B, is_max ? LLVMRealOGT : LLVMRealOLT, x, b, "");
        LLVMValueRef xn = LLVMBuildFCmp(B, LLVMRealUNO, x, x, "");
        LLVMValueRef bn = LLVMBuildFCmp(B, LLVMRealUNO, b, b, "");
        take = LLVMBuildOr(B, take, LLVMBuildAnd(B, xn, LLVMBuildNot(B, bn, ""), ""), "");
    } else {
        bool u = dt_unsigned(t);
        take = LLVMBuildICmp(
            B, is_max ? (u ? LLVMIntUGT : LLVMIntSGT) : (u ? LLVMIntULT : LLVMIntSLT), x, b, "");
    }
    LLVMBuildStore(B, LLVMBuildSelect(B, take, x, b, ""), best);
    LLVMValueRef idx = kern_offset(&r->k, &r->d.lin);
    LLVMBuildStore(B, LLVMBuildSelect(B, take, idx, LLVMBuildLoad2(B, cg->t_i64, bi, ""), ""), bi);
    kern_close(&r->k, &ln);
    return LLVMBuildLoad2(B, cg->t_i64, bi, "");
}

static LLVMValueRef fconst(Cg *cg, DType at, double x) {
    return LLVMConstReal(at == DT_F64 ? cg->t_f64 : cg->t_f32, x);
}

void k_reduce(Cg *cg, const Value *v) {
    if (k_reduce_cols(cg, v)) return; /* over leading dims: k_reduce_cols.c */
    Red r;
    red_setup(cg, &r, v, false);
    Kern *k = &r.k;
    LoopNest outer;
    kern_open(k, &outer, 0, k->sp.nkept, false);
    DType out = cg_dt(cg, v), res_t = out;
    LLVMValueRef res = NULL;
    switch (v->op) {
    case OP_SUM:
    case OP_PROD: {
        DType at = isf(out) ? float_acc(out) : DT_I64;
        bool sum = v->op == OP_SUM;
        LLVMValueRef init = isf(at) ? fconst(cg, at, sum ? 0 : 1) : cg_const_i64(cg, sum ? 0 : 1);
        res = run_pass(cg, &r, at, init, sum ? st_add : st_mul, NULL, true);
        res_t = at;
        break;
    }
    case OP_MEAN: {
        DType at = float_acc(out);
        LLVMValueRef s = run_pass(cg, &r, at, fconst(cg, at, 0), st_add, NULL, true);
        res = LLVMBuildFDiv(B, s, fconst(cg, at, (double)r.d.count), "");
        res_t = at;
        break;
    }
    case OP_AMAX:
    case OP_AMIN: {
        MaxCtx c = {v->op == OP_AMAX, true, r.d.xt};
        if (isf(r.d.xt)) {
            /* f16/bf16 values are exact in f32: the max is the same. */
            DType at = float_acc(r.d.xt);
            res = fmax_pass(cg, &r, at, c.is_max, true);
            res_t = at;
        } else {
            res = run_pass(cg, &r, r.d.xt, cg_red_extreme(cg, r.d.xt, c.is_max), st_max, &c, false);
            res_t = r.d.xt;
        }
        break;
    }
    case OP_ARGMAX:
    case OP_ARGMIN:
        res = arg_extreme(cg, &r, v->op == OP_ARGMAX);
        res_t = DT_I64;
        break;
    case OP_VAR:
    case OP_STD: {
        DType at = float_acc(out);
        LLVMValueRef s = run_pass(cg, &r, at, fconst(cg, at, 0), st_add, NULL, true);
        LLVMValueRef mean = LLVMBuildFDiv(B, s, fconst(cg, at, (double)r.d.count), "");
        LLVMValueRef ss = run_pass(cg, &r, at, fconst(cg, at, 0), st_sqdev, mean, true);
        int64_t corr = v->args[2].kind == ARG_INT ? v->args[2].i : 1;
        double dof = (double)r.d.count - (double)corr;
        if (dof < 0) dof = 0;
        res = LLVMBuildFDiv(B, ss, fconst(cg, at, dof), "");
        if (v->op == OP_STD) res = cg_intrinsic(cg, "llvm.sqrt", LLVMTypeOf(res), &res, 1);
        res_t = at;
        break;
    }
    case OP_LOGSUMEXP: {
        DType at = float_acc(out);
        LLVMValueRef m = fmax_pass(cg, &r, at, true, true);
        LLVMValueRef am = cg_intrinsic(cg, "llvm.fabs", LLVMTypeOf(m), &m, 1);
        m = LLVMBuildSelect(B, LLVMBuildFCmp(B, LLVMRealOEQ, am, fconst(cg, at, INFINITY), ""),
                            fconst(cg, at, 0), m, "");
        LLVMValueRef s = run_pass(cg, &r, at, fconst(cg, at, 0), st_sumexp, m, true);
        res = LLVMBuildFAdd(B, cg_log(cg, s, at), m, "");
        res_t = at;
        break;
    }
    case OP_ALL:
    case OP_ANY: {
        bool all = v->op == OP_ALL;
        res = run_pass(cg, &r, DT_BOOL, LLVMConstInt(cg->t_i1, all, false), all ? st_and : st_or,
                       NULL, false);
        res_t = DT_BOOL;
        break;
    }
    default: cg_fail(cg, "internal: '%s' is not a reduction", op_display_name(v)); return;
    }
    cg_store(k, kern_ptr(k, &r.d.dst), cg_convert(cg, res, res_t, out), out);
    kern_close(k, &outer);
    kern_end(k, red_work(&r) * 2);
}

/* A normalisation's output row, built in a stack buffer when the output
 * is large: rt_kernel_stream_row (runtime/kernel_support.c) then writes
 * the row with non-temporal stores if the whole output exceeds the
 * last-level cache. A plain store first reads the line it overwrites
 * (read for ownership), so a kernel that reads x and writes y moves three
 * lines per two: measured on this 2-core machine, y = 2 x over 64 MiB ran
 * at 26 GB/s with stores, 37 GB/s streamed, memcpy 24-34 GB/s
 * (docs/performance.md "Memory-bound kernels"); a normalisation was capped
 * near 0.75 of memcpy. Only a row that is one contiguous reduced loop
 * qualifies. */
#define NORM_STREAM_MIN_BYTES ((int64_t)8 << 20)
#define NORM_STREAM_MAX_ROW ((int64_t)64 << 10)

typedef struct RowOut {
    LLVMValueRef buf; /* [n x storage type], or NULL: store into the output */
    int64_t row_bytes, total_bytes;
} RowOut;

static void row_out_init(Cg *cg, Red *r, DType out, RowOut *o) {
    memset(o, 0, sizeof *o);
    const KSpace *sp = &r->k.sp;
    int red = sp->nkept;
    if (sp->nloops - red != 1 || sp->inner_dim[red] < 0) return;
    if (r->d.dst.strides[sp->inner_dim[red]] != 1) return;
    int64_t es = (int64_t)dtype_size(out), total = es;
    for (int l = 0; l < sp->nloops; l++)
        total *= sp->ext[l];
    if (sp->ext[red] * es > NORM_STREAM_MAX_ROW || total < NORM_STREAM_MIN_BYTES) return;
    o->row_bytes = sp->ext[red] * es;
    o->total_bytes = total;
    o->buf = kern_alloca(&r->k, LLVMArrayType(cg_stype(cg, out), (unsigned)sp->ext[red]));
    LLVMSetAlignment(o->buf, 64);
}

/* Where the element at the open loops goes. */
static LLVMValueRef row_out_ptr(Cg *cg, Red *r, const RowOut *o) {
    if (!o->buf) return kern_ptr(&r->k, &r->d.dst);
    LLVMValueRef idx[2] = {cg_const_i64(cg, 0), r->k.idx[r->k.sp.nkept]};
    return LLVMBuildInBoundsGEP2(B, LLVMGetAllocatedType(o->buf), o->buf, idx, 2, "");
}

/* After the row's last store (the reduced loop closed). */
static void row_out_flush(Cg *cg, Red *r, const RowOut *o) {
    if (!o->buf) return;
    LLVMValueRef args[4] = {LLVMBuildBitCast(B, kern_ptr(&r->k, &r->d.dst), cg->t_ptr, ""),
                            LLVMBuildBitCast(B, o->buf, cg->t_ptr, ""),
                            cg_const_i64(cg, o->row_bytes), cg_const_i64(cg, o->total_bytes)};
    cg_call(cg, "rt_kernel_stream_row", cg->t_void, args, 4);
}

/* softmax at f32 or f64 storage: max, then e = exp(x - max) stored into
 * the output while summed, then the output scaled by 1 / sum. exp (the
 * kernel's cost: a row of 4096 f32 is read from L1 by every pass) runs
 * once per element instead of twice. Under f16/bf16 storage the stored e
 * would be rounded before the scaling (two roundings where PyTorch has
 * one), so k_norm's recomputing form stays. */
static void softmax_store_exp(Cg *cg, Red *r, DType at) {
    Kern *k = &r->k;
    LLVMValueRef m = fmax_pass(cg, r, at, true, false);
    LLVMValueRef slot = kern_alloca(k, LLVMTypeOf(m));
    LLVMBuildStore(B, fconst(cg, at, 0), slot);
    LoopNest ln;
    kern_open(k, &ln, k->sp.nkept, k->sp.nloops, true);
    LLVMValueRef e = cg_exp(cg, LLVMBuildFSub(B, x_as(cg, r, at), m, ""), at);
    cg_store(k, kern_ptr(k, &r->d.dst), e, at);
    LLVMValueRef acc = LLVMBuildLoad2(B, LLVMTypeOf(m), slot, "");
    LLVMBuildStore(B, LLVMBuildFAdd(B, acc, e, ""), slot);
    kern_close(k, &ln);
    LLVMValueRef c =
        LLVMBuildFDiv(B, fconst(cg, at, 1), LLVMBuildLoad2(B, LLVMTypeOf(m), slot, ""), "");
    kern_open(k, &ln, k->sp.nkept, k->sp.nloops, false);
    LLVMValueRef p = kern_ptr(k, &r->d.dst);
    cg_store(k, p, LLVMBuildFMul(B, cg_load(k, p, at), c, ""), at);
    kern_close(k, &ln);
}

void k_norm(Cg *cg, const Value *v) {
    Red r;
    red_setup(cg, &r, v, true);
    Kern *k = &r.k;
    DType out = cg_dt(cg, v);
    DType at = float_acc(out == DT_F64 || r.d.xt == DT_F64 ? DT_F64 : DT_F32);
    LoopNest outer, ln;
    kern_open(k, &outer, 0, k->sp.nkept, false);
    if (v->op == OP_SOFTMAX && out == at && r.d.naux == 0) {
        softmax_store_exp(cg, &r, at);
        kern_close(k, &outer);
        kern_end(k, red_work(&r) * 4);
        return;
    }
    LLVMValueRef a = NULL, c = NULL; /* out = f(x) per op, from a and c */
    double eps = 0;
    switch (v->op) {
    case OP_SOFTMAX:
    case OP_LOG_SOFTMAX: {
        LLVMValueRef m = fmax_pass(cg, &r, at, true, false);
        LLVMValueRef s = run_pass(cg, &r, at, fconst(cg, at, 0), st_sumexp, m, true);
        a = m;
        c = v->op == OP_SOFTMAX ? LLVMBuildFDiv(B, fconst(cg, at, 1), s, "") : cg_log(cg, s, at);
        break;
    }
    case OP_LAYER_NORM: {
        eps = v->args[4].kind == ARG_NUM ? v->args[4].f : 1e-5;
        LLVMValueRef s = run_pass(cg, &r, at, fconst(cg, at, 0), st_add, NULL, true);
        LLVMValueRef mean = LLVMBuildFDiv(B, s, fconst(cg, at, (double)r.d.count), "");
        LLVMValueRef ss = run_pass(cg, &r, at, fconst(cg, at, 0), st_sqdev, mean, true);
        LLVMValueRef var = LLVMBuildFDiv(B, ss, fconst(cg, at, (double)r.d.count), "");
        LLVMValueRef ve = LLVMBuildFAdd(B, var, fconst(cg, at, eps), "");
        a = mean;
        c = LLVMBuildFDiv(B, fconst(cg, at, 1),
                          cg_intrinsic(cg, "llvm.sqrt", LLVMTypeOf(ve), &ve, 1), "");
        break;
    }
    case OP_RMS_NORM: {
        eps = v->args[2].kind == ARG_NUM ? v->args[2].f : 1e-6;
        LLVMValueRef ss = run_pass(cg, &r, at, fconst(cg, at, 0), st_sq, NULL, true);
        LLVMValueRef ms = LLVMBuildFDiv(B, ss, fconst(cg, at, (double)r.d.count), "");
        LLVMValueRef ve = LLVMBuildFAdd(B, ms, fconst(cg, at, eps), "");
        c = LLVMBuildFDiv(B, fconst(cg, at, 1),
                          cg_intrinsic(cg, "llvm.sqrt", LLVMTypeOf(ve), &ve, 1), "");
        break;
    }
    default: cg_fail(cg, "internal: '%s' is not a normalisation", op_display_name(v)); return;
    }
    RowOut o;
    row_out_init(cg, &r, out, &o);
    kern_open(k, &ln, k->sp.nkept, k->sp.nloops, false);
    LLVMValueRef x = x_as(cg, &r, at), y;
    switch (v->op) {
    case OP_SOFTMAX: y = LLVMBuildFMul(B, cg_exp(cg, LLVMBuildFSub(B, x, a, ""), at), c, ""); break;
    case OP_LOG_SOFTMAX: y = LLVMBuildFSub(B, LLVMBuildFSub(B, x, a, ""), c, ""); break;
    case OP_LAYER_NORM: y = LLVMBuildFMul(B, LLVMBuildFSub(B, x, a, ""), c, ""); break;
    default: y = LLVMBuildFMul(B, x, c, ""); break;
    }
    /* Weight, then bias (layer_norm's args 2 and 3; rms_norm's weight). */
    for (int i = 0; i < r.d.naux; i++) {
        LLVMValueRef w =
            cg_convert(cg, cg_load(k, kern_ptr(k, &r.d.aux[i]), r.d.aux[i].dt), r.d.aux[i].dt, at);
        y = r.d.aux_is_bias[i] ? LLVMBuildFAdd(B, y, w, "") : LLVMBuildFMul(B, y, w, "");
    }
    cg_store(k, row_out_ptr(cg, &r, &o), cg_convert(cg, y, at, out), out);
    kern_close(k, &ln);
    row_out_flush(cg, &r, &o);
    kern_close(k, &outer);
    kern_end(k, red_work(&r) * 4);
}
