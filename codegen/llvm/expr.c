/* Element expressions: the value of v at the kernel's current index.
 * Leaves are loads (views are stride arithmetic on their storage) or
 * folded literals; inlined values are computed in registers. One table,
 * indexed by op, says how each elementwise op computes; f16/bf16 results
 * are computed in float and rounded once per op, as PyTorch does. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/llvm/cg.h"
#include "ir/dropout.h"

typedef LLVMValueRef (*EmitFn)(Kern *k, const Value *v, LLVMValueRef *a, DType t);

#define B (k->cg->b)
#define CG (k->cg)

static DType in_dt(Kern *k, const Value *v, int i) {
    return cg_dt(k->cg, v->in[i]);
}
static LLVMValueRef C(Kern *k, DType t, double x) {
    return cg_const(k->cg, t, x);
}
static LLVMValueRef sel(Kern *k, LLVMValueRef c, LLVMValueRef a, LLVMValueRef b) {
    return LLVMBuildSelect(B, c, a, b, "");
}
static LLVMValueRef fcmp(Kern *k, LLVMRealPredicate p, LLVMValueRef a, LLVMValueRef b) {
    return LLVMBuildFCmp(B, p, a, b, "");
}
static LLVMValueRef icmp(Kern *k, LLVMIntPredicate p, LLVMValueRef a, LLVMValueRef b) {
    return LLVMBuildICmp(B, p, a, b, "");
}
static LLVMValueRef isnan_(Kern *k, LLVMValueRef x) {
    return fcmp(k, LLVMRealUNO, x, x);
}

/* ---- arithmetic ---- */

/* other * alpha, the second operand of add and sub. */
static LLVMValueRef times_alpha(Kern *k, const Value *v, LLVMValueRef y, DType t) {
    double alpha = kd_num_arg(v, 2, 1);
    if (alpha == 1) return y;
    return dtype_is_float(t) ? LLVMBuildFMul(B, y, C(k, t == DT_F64 ? t : DT_F32, alpha), "")
                             : LLVMBuildMul(B, y, C(k, t, alpha), "");
}
static LLVMValueRef e_add(Kern *k, const Value *v, LLVMValueRef *a, DType t) {
    if (t == DT_BOOL) return LLVMBuildOr(B, a[0], kd_num_arg(v, 2, 1) != 0 ? a[1] : C(k, t, 0), "");
    LLVMValueRef y = times_alpha(k, v, a[1], t);
    return dtype_is_float(t) ? LLVMBuildFAdd(B, a[0], y, "") : LLVMBuildAdd(B, a[0], y, "");
}
static LLVMValueRef e_sub(Kern *k, const Value *v, LLVMValueRef *a, DType t) {
    LLVMValueRef y = times_alpha(k, v, a[1], t);
    return dtype_is_float(t) ? LLVMBuildFSub(B, a[0], y, "") : LLVMBuildSub(B, a[0], y, "");
}
static LLVMValueRef e_mul(Kern *k, const Value *v, LLVMValueRef *a, DType t) {
    (void)v;
    if (t == DT_BOOL) return LLVMBuildAnd(B, a[0], a[1], "");
    return dtype_is_float(t) ? LLVMBuildFMul(B, a[0], a[1], "") : LLVMBuildMul(B, a[0], a[1], "");
}

/* Integer division with the divisor made safe: x / 0 gives 0 (PyTorch
 * raises ZeroDivisionError; compiled code cannot), INT_MIN / -1 wraps. */
typedef struct IDiv {
    LLVMValueRef q, r, zero;
} IDiv;
static IDiv idiv(Kern *k, LLVMValueRef n, LLVMValueRef d, DType t) {
    LLVMTypeRef ty = LLVMTypeOf(n);
    IDiv o;
    o.zero = icmp(k, LLVMIntEQ, d, LLVMConstNull(ty));
    LLVMValueRef bad = o.zero;
    if (!dt_unsigned(t)) {
        unsigned w = LLVMGetIntTypeWidth(ty);
        LLVMValueRef minv = LLVMConstInt(ty, 1ULL << (w - 1), false);
        LLVMValueRef ovf = LLVMBuildAnd(B, icmp(k, LLVMIntEQ, n, minv),
                                        icmp(k, LLVMIntEQ, d, LLVMConstAllOnes(ty)), "");
        bad = LLVMBuildOr(B, bad, ovf, "");
        LLVMValueRef sd = sel(k, bad, LLVMConstInt(ty, 1, false), d);
        o.q = LLVMBuildSDiv(B, n, sd, "");
        o.r = LLVMBuildSRem(B, n, sd, "");
        /* n / 1 and n % 1 for the overflow case: q = n (wraps), r = 0. */
        o.r = sel(k, bad, LLVMConstNull(ty), o.r);
        o.q = sel(k, o.zero, LLVMConstNull(ty), o.q);
    } else {
        LLVMValueRef sd = sel(k, bad, LLVMConstInt(ty, 1, false), d);
        o.q = sel(k, o.zero, LLVMConstNull(ty), LLVMBuildUDiv(B, n, sd, ""));
        o.r = sel(k, o.zero, LLVMConstNull(ty), LLVMBuildURem(B, n, sd, ""));
    }
    return o;
}
/* r != 0 and sign(r) != sign(d): Python's floor semantics need a fix-up. */
static LLVMValueRef ifix(Kern *k, LLVMValueRef r, LLVMValueRef d) {
    LLVMTypeRef ty = LLVMTypeOf(r);
    LLVMValueRef z = LLVMConstNull(ty);
    return LLVMBuildAnd(B, icmp(k, LLVMIntNE, r, z),
                        LLVMBuildXor(B, icmp(k, LLVMIntSLT, r, z), icmp(k, LLVMIntSLT, d, z), ""),
                        "");
}
static LLVMValueRef ffloordiv(Kern *k, LLVMValueRef a, LLVMValueRef b, DType t) {
    /* ATen's div_floor_floating. */
    DType ct = t == DT_F64 ? DT_F64 : DT_F32;
    LLVMValueRef z = C(k, ct, 0), one = C(k, ct, 1);
    LLVMValueRef mod = LLVMBuildFRem(B, a, b, "");
    LLVMValueRef div = LLVMBuildFDiv(B, LLVMBuildFSub(B, a, mod, ""), b, "");
    LLVMValueRef fix = LLVMBuildAnd(
        B, fcmp(k, LLVMRealUNE, mod, z),
        LLVMBuildXor(B, fcmp(k, LLVMRealOLT, b, z), fcmp(k, LLVMRealOLT, mod, z), ""), "");
    div = sel(k, fix, LLVMBuildFSub(B, div, one, ""), div);
    LLVMValueRef fl = cg_intrinsic(CG, "llvm.floor", LLVMTypeOf(div), &div, 1);
    LLVMValueRef up = fcmp(k, LLVMRealOGT, LLVMBuildFSub(B, div, fl, ""), C(k, ct, 0.5));
    fl = sel(k, up, LLVMBuildFAdd(B, fl, one, ""), fl);
    LLVMValueRef q = LLVMBuildFDiv(B, a, b, "");
    LLVMValueRef cs[2] = {z, q};
    LLVMValueRef signed0 = cg_intrinsic(CG, "llvm.copysign", LLVMTypeOf(q), cs, 2);
    LLVMValueRef r = sel(k, fcmp(k, LLVMRealUNE, div, z), fl, signed0);
    return sel(k, fcmp(k, LLVMRealOEQ, b, z), q, r);
}
static LLVMValueRef e_div(Kern *k, const Value *v, LLVMValueRef *a, DType t) {
    const Arg *rm = v->nargs > 2 ? &v->args[2] : NULL;
    const char *mode = rm && rm->kind == ARG_STR ? rm->s : NULL;
    if (dtype_is_float(t)) {
        if (mode && !strcmp(mode, "floor")) return ffloordiv(k, a[0], a[1], t);
        LLVMValueRef q = LLVMBuildFDiv(B, a[0], a[1], "");
        if (mode && !strcmp(mode, "trunc"))
            q = cg_intrinsic(CG, "llvm.trunc", LLVMTypeOf(q), &q, 1);
        return q;
    }
    IDiv d = idiv(k, a[0], a[1], t);
    if (mode && !strcmp(mode, "floor") && !dt_unsigned(t))
        return sel(k, ifix(k, d.r, a[1]),
                   LLVMBuildSub(B, d.q, LLVMConstInt(LLVMTypeOf(d.q), 1, 0), ""), d.q);
    return d.q;
}
static LLVMValueRef e_floordiv(Kern *k, const Value *v, LLVMValueRef *a, DType t) {
    (void)v;
    if (dtype_is_float(t)) return ffloordiv(k, a[0], a[1], t);
    IDiv d = idiv(k, a[0], a[1], t);
    if (dt_unsigned(t)) return d.q;
    return sel(k, ifix(k, d.r, a[1]), LLVMBuildSub(B, d.q, LLVMConstInt(LLVMTypeOf(d.q), 1, 0), ""),
               d.q);
}
static LLVMValueRef e_remainder(Kern *k, const Value *v, LLVMValueRef *a, DType t) {
    (void)v;
    if (dtype_is_float(t)) {
        LLVMValueRef z = LLVMConstNull(LLVMTypeOf(a[0]));
        LLVMValueRef m = LLVMBuildFRem(B, a[0], a[1], "");
        LLVMValueRef fix = LLVMBuildAnd(
            B, fcmp(k, LLVMRealUNE, m, z),
            LLVMBuildXor(B, fcmp(k, LLVMRealOLT, a[1], z), fcmp(k, LLVMRealOLT, m, z), ""), "");
        return sel(k, fix, LLVMBuildFAdd(B, m, a[1], ""), m);
    }
    IDiv d = idiv(k, a[0], a[1], t);
    if (dt_unsigned(t)) return d.r;
    return sel(k, ifix(k, d.r, a[1]), LLVMBuildAdd(B, d.r, a[1], ""), d.r);
}
static LLVMValueRef e_pow(Kern *k, const Value *v, LLVMValueRef *a, DType t) {
    const Value *e = v->in[1];
    if (dtype_is_float(t)) {
        LLVMTypeRef ty = LLVMTypeOf(a[0]);
        if (e->storage->op == OP_SCALAR) {
            double x = e->storage->scalar;
            LLVMValueRef one = LLVMConstReal(ty, 1);
            if (x == 2) return LLVMBuildFMul(B, a[0], a[0], "");
            if (x == 3) return LLVMBuildFMul(B, LLVMBuildFMul(B, a[0], a[0], ""), a[0], "");
            if (x == 0.5) return cg_intrinsic(CG, "llvm.sqrt", ty, a, 1);
            if (x == -0.5)
                return LLVMBuildFDiv(B, one, cg_intrinsic(CG, "llvm.sqrt", ty, a, 1), "");
            if (x == -1) return LLVMBuildFDiv(B, one, a[0], "");
            if (x == -2) return LLVMBuildFDiv(B, one, LLVMBuildFMul(B, a[0], a[0], ""), "");
        }
        return cg_intrinsic(CG, "llvm.pow", ty, a, 2);
    }
    /* Integers: exponentiation by squaring in the runtime (a loop). */
    LLVMValueRef b64 = cg_convert(CG, a[0], t, DT_I64), e64 = cg_convert(CG, a[1], t, DT_I64);
    LLVMValueRef args[2] = {b64, e64};
    LLVMValueRef r = cg_call(CG, "rt_kernel_ipow", CG->t_i64, args, 2);
    return cg_convert(CG, r, DT_I64, t);
}
static LLVMValueRef minmax(Kern *k, LLVMValueRef *a, DType t, bool is_max) {
    if (t == DT_BOOL)
        return is_max ? LLVMBuildOr(B, a[0], a[1], "") : LLVMBuildAnd(B, a[0], a[1], "");
    if (dtype_is_float(t)) {
        LLVMValueRef pick = fcmp(k, is_max ? LLVMRealOGT : LLVMRealOLT, a[0], a[1]);
        LLVMValueRef r = sel(k, pick, a[0], a[1]);
        r = sel(k, isnan_(k, a[1]), a[1], r);
        return sel(k, isnan_(k, a[0]), a[0], r);
    }
    LLVMIntPredicate p =
        dt_unsigned(t) ? (is_max ? LLVMIntUGT : LLVMIntULT) : (is_max ? LLVMIntSGT : LLVMIntSLT);
    return sel(k, icmp(k, p, a[0], a[1]), a[0], a[1]);
}
static LLVMValueRef e_maximum(Kern *k, const Value *v, LLVMValueRef *a, DType t) {
    (void)v;
    return minmax(k, a, t, true);
}
static LLVMValueRef e_minimum(Kern *k, const Value *v, LLVMValueRef *a, DType t) {
    (void)v;
    return minmax(k, a, t, false);
}
/* x * log(y); 0 where x == 0, NaN where y is NaN (ATen's xlogy). */
static LLVMValueRef e_xlogy(Kern *k, const Value *v, LLVMValueRef *a, DType t) {
    (void)v;
    LLVMValueRef z = LLVMConstNull(LLVMTypeOf(a[0]));
    LLVMValueRef p = LLVMBuildFMul(B, a[0], cg_log(CG, a[1], t), "");
    LLVMValueRef r = sel(k, fcmp(k, LLVMRealOEQ, a[0], z), z, p);
    return sel(k, isnan_(k, a[1]), a[1], r);
}
static LLVMValueRef cmp(Kern *k, const Value *v, LLVMValueRef *a, LLVMRealPredicate fp,
                        LLVMIntPredicate sp, LLVMIntPredicate up) {
    DType t = in_dt(k, v, 0);
    if (dtype_is_float(t)) return fcmp(k, fp, a[0], a[1]);
    return icmp(k, dt_unsigned(t) ? up : sp, a[0], a[1]);
}
#define CMP(name, fp, sp, up)                                                                      \
    static LLVMValueRef e_##name(Kern *k, const Value *v, LLVMValueRef *a, DType t) {              \
        (void)t;                                                                                   \
        return cmp(k, v, a, fp, sp, up);                                                           \
    }
CMP(eq, LLVMRealOEQ, LLVMIntEQ, LLVMIntEQ)
CMP(ne, LLVMRealUNE, LLVMIntNE, LLVMIntNE)
CMP(lt, LLVMRealOLT, LLVMIntSLT, LLVMIntULT)
CMP(le, LLVMRealOLE, LLVMIntSLE, LLVMIntULE)
CMP(gt, LLVMRealOGT, LLVMIntSGT, LLVMIntUGT)
CMP(ge, LLVMRealOGE, LLVMIntSGE, LLVMIntUGE)

static LLVMValueRef e_logical_and(Kern *k, const Value *v, LLVMValueRef *a, DType t) {
    (void)t;
    return LLVMBuildAnd(B, cg_truthy(CG, a[0], in_dt(k, v, 0)), cg_truthy(CG, a[1], in_dt(k, v, 1)),
                        "");
}
static LLVMValueRef e_logical_or(Kern *k, const Value *v, LLVMValueRef *a, DType t) {
    (void)t;
    return LLVMBuildOr(B, cg_truthy(CG, a[0], in_dt(k, v, 0)), cg_truthy(CG, a[1], in_dt(k, v, 1)),
                       "");
}
static LLVMValueRef e_logical_not(Kern *k, const Value *v, LLVMValueRef *a, DType t) {
    LLVMValueRef r = LLVMBuildNot(B, cg_truthy(CG, a[0], in_dt(k, v, 0)), "");
    return cg_convert(CG, r, DT_BOOL, t);
}
static LLVMValueRef e_bitwise_and(Kern *k, const Value *v, LLVMValueRef *a, DType t) {
    (void)v, (void)t;
    return LLVMBuildAnd(B, a[0], a[1], "");
}
static LLVMValueRef e_bitwise_or(Kern *k, const Value *v, LLVMValueRef *a, DType t) {
    (void)v, (void)t;
    return LLVMBuildOr(B, a[0], a[1], "");
}
static LLVMValueRef e_bitwise_not(Kern *k, const Value *v, LLVMValueRef *a, DType t) {
    (void)v, (void)t;
    return LLVMBuildNot(B, a[0], "");
}
static LLVMValueRef e_where(Kern *k, const Value *v, LLVMValueRef *a, DType t) {
    (void)t;
    return sel(k, cg_truthy(CG, a[0], in_dt(k, v, 0)), a[1], a[2]);
}
static LLVMValueRef e_masked_fill(Kern *k, const Value *v, LLVMValueRef *a, DType t) {
    (void)t;
    return sel(k, cg_truthy(CG, a[1], in_dt(k, v, 1)), a[2], a[0]);
}
/* max(x, lo) then min(., hi), each bound optional: a NaN x is neither
 * below nor above and stays NaN; lo > hi gives hi (ATen's clamp). */
static LLVMValueRef clamp_to(Kern *k, LLVMValueRef x, DType t, const double *lo, const double *hi) {
    bool f = dtype_is_float(t);
    bool u = dt_unsigned(t);
    if (lo) {
        LLVMValueRef c = C(k, t, *lo);
        LLVMValueRef lt =
            f ? fcmp(k, LLVMRealOLT, x, c) : icmp(k, u ? LLVMIntULT : LLVMIntSLT, x, c);
        x = sel(k, lt, c, x);
    }
    if (hi) {
        LLVMValueRef c = C(k, t, *hi);
        LLVMValueRef gt =
            f ? fcmp(k, LLVMRealOGT, x, c) : icmp(k, u ? LLVMIntUGT : LLVMIntSGT, x, c);
        x = sel(k, gt, c, x);
    }
    return x;
}
static LLVMValueRef e_clamp(Kern *k, const Value *v, LLVMValueRef *a, DType t) {
    double lo = kd_num_arg(v, 1, 0), hi = kd_num_arg(v, 2, 0);
    return clamp_to(k, a[0], t, v->args[1].kind != ARG_ABSENT ? &lo : NULL,
                    v->args[2].kind != ARG_ABSENT ? &hi : NULL);
}

/* ---- unary ---- */

static LLVMValueRef e_neg(Kern *k, const Value *v, LLVMValueRef *a, DType t) {
    (void)v;
    return dtype_is_float(t) ? LLVMBuildFNeg(B, a[0], "") : LLVMBuildNeg(B, a[0], "");
}
static LLVMValueRef e_abs(Kern *k, const Value *v, LLVMValueRef *a, DType t) {
    (void)v;
    if (dtype_is_float(t)) return cg_intrinsic(CG, "llvm.fabs", LLVMTypeOf(a[0]), a, 1);
    if (dt_unsigned(t)) return a[0];
    return sel(k, icmp(k, LLVMIntSLT, a[0], LLVMConstNull(LLVMTypeOf(a[0]))),
               LLVMBuildNeg(B, a[0], ""), a[0]);
}
static LLVMValueRef e_sign(Kern *k, const Value *v, LLVMValueRef *a, DType t) {
    (void)v;
    if (t == DT_BOOL) return a[0];
    LLVMValueRef z = LLVMConstNull(LLVMTypeOf(a[0]));
    LLVMValueRef pos, neg;
    if (dtype_is_float(t)) {
        pos = fcmp(k, LLVMRealOGT, a[0], z), neg = fcmp(k, LLVMRealOLT, a[0], z);
        return LLVMBuildFSub(B, cg_convert(CG, pos, DT_BOOL, t), cg_convert(CG, neg, DT_BOOL, t),
                             "");
    }
    pos = icmp(k, dt_unsigned(t) ? LLVMIntUGT : LLVMIntSGT, a[0], z);
    neg = icmp(k, dt_unsigned(t) ? LLVMIntULT : LLVMIntSLT, a[0], z);
    return LLVMBuildSub(B, LLVMBuildZExt(B, pos, LLVMTypeOf(z), ""),
                        LLVMBuildZExt(B, neg, LLVMTypeOf(z), ""), "");
}
static LLVMValueRef e_relu(Kern *k, const Value *v, LLVMValueRef *a, DType t) {
    (void)v;
    LLVMValueRef z = LLVMConstNull(LLVMTypeOf(a[0]));
    if (dtype_is_float(t)) return sel(k, fcmp(k, LLVMRealOLT, a[0], z), z, a[0]);
    if (dt_unsigned(t)) return a[0];
    return sel(k, icmp(k, LLVMIntSLT, a[0], z), z, a[0]);
}
#define FROUND(name, intr)                                                                         \
    static LLVMValueRef e_##name(Kern *k, const Value *v, LLVMValueRef *a, DType t) {              \
        (void)v;                                                                                   \
        if (!dtype_is_float(t)) return a[0];                                                       \
        return cg_intrinsic(CG, intr, LLVMTypeOf(a[0]), a, 1);                                     \
    }
FROUND(floor, "llvm.floor")
FROUND(ceil, "llvm.ceil")
FROUND(round, "llvm.rint")
FROUND(trunc, "llvm.trunc")
static LLVMValueRef e_square(Kern *k, const Value *v, LLVMValueRef *a, DType t) {
    return e_mul(k, v, (LLVMValueRef[]){a[0], a[0]}, t);
}
/* exp, log, tanh, erf: codegen/llvm/math.c's, inline in f32. */
#define MATH(name)                                                                                 \
    static LLVMValueRef e_##name(Kern *k, const Value *v, LLVMValueRef *a, DType t) {              \
        (void)v;                                                                                   \
        return cg_##name(CG, a[0], t);                                                             \
    }
MATH(exp)
MATH(log)
MATH(tanh)
MATH(erf)
#define LIBM(name, fn)                                                                             \
    static LLVMValueRef e_##name(Kern *k, const Value *v, LLVMValueRef *a, DType t) {              \
        (void)v;                                                                                   \
        return cg_libm1(CG, fn, a[0], t);                                                          \
    }
LIBM(log1p, "log1p")
LIBM(expm1, "expm1")
LIBM(sin, "sin")
LIBM(cos, "cos")
LIBM(tan, "tan")
LIBM(asin, "asin")
LIBM(acos, "acos")
LIBM(atan, "atan")
LIBM(sinh, "sinh")
LIBM(cosh, "cosh")
LIBM(asinh, "asinh")
LIBM(acosh, "acosh")
LIBM(atanh, "atanh")
static LLVMValueRef e_sqrt(Kern *k, const Value *v, LLVMValueRef *a, DType t) {
    (void)v, (void)t;
    return cg_intrinsic(CG, "llvm.sqrt", LLVMTypeOf(a[0]), a, 1);
}
static LLVMValueRef e_rsqrt(Kern *k, const Value *v, LLVMValueRef *a, DType t) {
    (void)v, (void)t;
    LLVMValueRef s = cg_intrinsic(CG, "llvm.sqrt", LLVMTypeOf(a[0]), a, 1);
    return LLVMBuildFDiv(B, LLVMConstReal(LLVMTypeOf(s), 1), s, "");
}
static LLVMValueRef e_reciprocal(Kern *k, const Value *v, LLVMValueRef *a, DType t) {
    (void)v, (void)t;
    return LLVMBuildFDiv(B, LLVMConstReal(LLVMTypeOf(a[0]), 1), a[0], "");
}
static LLVMValueRef sigmoid(Kern *k, LLVMValueRef x, DType t) {
    LLVMTypeRef ty = LLVMTypeOf(x);
    LLVMValueRef e = cg_exp(CG, LLVMBuildFNeg(B, x, ""), t == DT_F64 ? DT_F64 : DT_F32);
    return LLVMBuildFDiv(B, LLVMConstReal(ty, 1), LLVMBuildFAdd(B, LLVMConstReal(ty, 1), e, ""),
                         "");
}
static LLVMValueRef e_sigmoid(Kern *k, const Value *v, LLVMValueRef *a, DType t) {
    (void)v;
    return sigmoid(k, a[0], t);
}
static LLVMValueRef e_silu(Kern *k, const Value *v, LLVMValueRef *a, DType t) {
    (void)v;
    return LLVMBuildFMul(B, a[0], sigmoid(k, a[0], t), "");
}
static LLVMValueRef e_gelu(Kern *k, const Value *v, LLVMValueRef *a, DType t) {
    LLVMTypeRef ty = LLVMTypeOf(a[0]);
    DType ct = t == DT_F64 ? DT_F64 : DT_F32;
    LLVMValueRef x = a[0], half = LLVMConstReal(ty, 0.5), one = LLVMConstReal(ty, 1);
    bool tanh_mode = v->nargs > 1 && v->args[1].kind == ARG_STR && !strcmp(v->args[1].s, "tanh");
    LLVMValueRef inner;
    if (tanh_mode) {
        LLVMValueRef x3 = LLVMBuildFMul(B, LLVMBuildFMul(B, x, x, ""), x, "");
        LLVMValueRef in =
            LLVMBuildFAdd(B, x, LLVMBuildFMul(B, LLVMConstReal(ty, 0.044715), x3, ""), "");
        in = LLVMBuildFMul(B, LLVMConstReal(ty, 0.7978845608028654 /* sqrt(2 / pi) */), in, "");
        inner = cg_tanh(CG, in, ct);
    } else {
        inner = cg_erf(CG, LLVMBuildFMul(B, x, LLVMConstReal(ty, 0.7071067811865476), ""), ct);
    }
    return LLVMBuildFMul(B, LLVMBuildFMul(B, x, half, ""), LLVMBuildFAdd(B, one, inner, ""), "");
}

/* ---- activations (ATen's CPU kernels, PyTorch 1.13) ----
 * f16/bf16 compute in float with the user's numbers (slope, alpha, beta,
 * threshold) as floats, not rounded to 16 bits, and round the result once,
 * as PyTorch's bf16 kernels do; hardtanh's bounds are clamp's (rounded to
 * the dtype, which gives the same results). */

/* x as a constant of t's compute precision: float for f32/f16/bf16. */
static LLVMValueRef CF(Kern *k, DType t, double x) {
    return C(k, t == DT_F64 ? DT_F64 : DT_F32, x);
}

/* min(max(x + 3, 0), 6), NaN propagating: hardsigmoid * 6. */
static LLVMValueRef relu6_of_x_plus_3(Kern *k, LLVMValueRef x) {
    LLVMTypeRef ty = LLVMTypeOf(x);
    LLVMValueRef z = LLVMConstReal(ty, 0), six = LLVMConstReal(ty, 6);
    LLVMValueRef y = LLVMBuildFAdd(B, x, LLVMConstReal(ty, 3), "");
    y = sel(k, fcmp(k, LLVMRealOLT, y, z), z, y);
    return sel(k, fcmp(k, LLVMRealOGT, y, six), six, y);
}
static LLVMValueRef e_hardswish(Kern *k, const Value *v, LLVMValueRef *a, DType t) {
    (void)v, (void)t;
    /* x * relu6(x + 3) / 6, multiplied first (-inf gives NaN, as torch). */
    LLVMValueRef p = LLVMBuildFMul(B, a[0], relu6_of_x_plus_3(k, a[0]), "");
    return LLVMBuildFDiv(B, p, LLVMConstReal(LLVMTypeOf(p), 6), "");
}
static LLVMValueRef e_hardsigmoid(Kern *k, const Value *v, LLVMValueRef *a, DType t) {
    (void)v, (void)t;
    LLVMValueRef y = relu6_of_x_plus_3(k, a[0]);
    return LLVMBuildFDiv(B, y, LLVMConstReal(LLVMTypeOf(y), 6), "");
}
static LLVMValueRef e_leaky_relu(Kern *k, const Value *v, LLVMValueRef *a, DType t) {
    /* x > 0 ? x : x * slope (a NaN takes the product: NaN). */
    LLVMValueRef x = a[0];
    LLVMValueRef neg = LLVMBuildFMul(B, x, CF(k, t, kd_num_arg(v, 1, 0.01)), "");
    return sel(k, fcmp(k, LLVMRealOGT, x, LLVMConstNull(LLVMTypeOf(x))), x, neg);
}
static LLVMValueRef e_elu(Kern *k, const Value *v, LLVMValueRef *a, DType t) {
    /* x > 0 ? x : (exp(x) - 1) * alpha. PyTorch 1.13 subtracts (no
     * expm1): elu(-0.0) is +0.0 and tiny negative x lose digits as there. */
    LLVMValueRef x = a[0];
    LLVMTypeRef ty = LLVMTypeOf(x);
    LLVMValueRef e = cg_exp(CG, x, t == DT_F64 ? DT_F64 : DT_F32);
    LLVMValueRef neg = LLVMBuildFMul(B, LLVMBuildFSub(B, e, LLVMConstReal(ty, 1), ""),
                                     CF(k, t, kd_num_arg(v, 1, 1.0)), "");
    return sel(k, fcmp(k, LLVMRealOGT, x, LLVMConstNull(ty)), x, neg);
}
static LLVMValueRef e_softplus(Kern *k, const Value *v, LLVMValueRef *a, DType t) {
    /* x * beta > threshold ? x : log1p(exp(x * beta)) / beta. */
    DType ct = t == DT_F64 ? DT_F64 : DT_F32;
    LLVMValueRef x = a[0], beta = CF(k, t, kd_num_arg(v, 1, 1));
    LLVMValueRef xb = LLVMBuildFMul(B, x, beta, "");
    LLVMValueRef sp = LLVMBuildFDiv(B, cg_libm1(CG, "log1p", cg_exp(CG, xb, ct), ct), beta, "");
    return sel(k, fcmp(k, LLVMRealOGT, xb, CF(k, t, kd_num_arg(v, 2, 20))), x, sp);
}
static LLVMValueRef e_mish(Kern *k, const Value *v, LLVMValueRef *a, DType t) {
    (void)v;
    /* x * tanh(log1p(exp(x))), without softplus's threshold (ATen's
     * mish): mish(-inf) is -inf * 0, NaN, as torch gives. */
    DType ct = t == DT_F64 ? DT_F64 : DT_F32;
    LLVMValueRef sp = cg_libm1(CG, "log1p", cg_exp(CG, a[0], ct), ct);
    return LLVMBuildFMul(B, a[0], cg_tanh(CG, sp, ct), "");
}
static LLVMValueRef e_hardtanh(Kern *k, const Value *v, LLVMValueRef *a, DType t) {
    /* clamp(x, min_val, max_val); integer tensors take the bounds
     * truncated toward zero (ATen's Scalar::toLong). */
    double lo = kd_num_arg(v, 1, -1.0), hi = kd_num_arg(v, 2, 1.0);
    if (!dtype_is_float(t)) lo = trunc(lo), hi = trunc(hi);
    return clamp_to(k, a[0], t, &lo, &hi);
}
static LLVMValueRef e_relu6(Kern *k, const Value *v, LLVMValueRef *a, DType t) {
    (void)v;
    double lo = 0, hi = 6;
    return clamp_to(k, a[0], t, &lo, &hi);
}

static LLVMValueRef e_cast(Kern *k, const Value *v, LLVMValueRef *a, DType t) {
    return cg_convert(CG, a[0], in_dt(k, v, 0), t);
}

/* ---- creation and index-dependent ops ---- */

static LLVMValueRef e_fill(Kern *k, const Value *v, LLVMValueRef *a, DType t) {
    (void)a;
    double x = v->op == OP_ZEROS || v->op == OP_ZEROS_LIKE ? 0
               : v->op == OP_ONES || v->op == OP_ONES_LIKE ? 1
                                                           : kd_num_arg(v, 1, 0);
    return C(k, t, x);
}
static LLVMValueRef e_arange(Kern *k, const Value *v, LLVMValueRef *a, DType t) {
    (void)a;
    double start = kd_num_arg(v, 0, 0), step = kd_num_arg(v, 2, 1);
    if (v->args[1].kind == ARG_ABSENT) start = 0; /* arange(end) */
    LLVMValueRef i = kern_dim_index(k, 0);
    if (!dtype_is_float(t)) {
        LLVMValueRef r = LLVMBuildAdd(B, cg_const_i64(CG, (int64_t)start),
                                      LLVMBuildMul(B, i, cg_const_i64(CG, (int64_t)step), ""), "");
        return cg_convert(CG, r, DT_I64, t);
    }
    LLVMValueRef fi = LLVMBuildSIToFP(B, i, CG->t_f64, "");
    LLVMValueRef r = LLVMBuildFAdd(B, LLVMConstReal(CG->t_f64, start),
                                   LLVMBuildFMul(B, LLVMConstReal(CG->t_f64, step), fi, ""), "");
    return cg_convert(CG, r, DT_F64, t);
}
static LLVMValueRef e_eye(Kern *k, const Value *v, LLVMValueRef *a, DType t) {
    (void)a, (void)v;
    LLVMValueRef eq = icmp(k, LLVMIntEQ, kern_dim_index(k, 0), kern_dim_index(k, 1));
    return cg_convert(CG, eq, DT_BOOL, t);
}
static LLVMValueRef e_tri(Kern *k, const Value *v, LLVMValueRef *a, DType t) {
    int n = v->ndim;
    int64_t diag = v->args[1].kind == ARG_INT ? v->args[1].i : 0;
    LLVMValueRef i = kern_dim_index(k, n - 2), j = kern_dim_index(k, n - 1);
    LLVMValueRef d = LLVMBuildSub(B, j, i, "");
    LLVMValueRef keep = v->op == OP_TRIL ? icmp(k, LLVMIntSLE, d, cg_const_i64(CG, diag))
                                         : icmp(k, LLVMIntSGE, d, cg_const_i64(CG, diag));
    return sel(k, keep, cg_convert(CG, a[0], in_dt(k, v, 0), t), C(k, t, 0));
}
static LLVMValueRef e_tensor(Kern *k, const Value *v, LLVMValueRef *a, DType t) {
    (void)a;
    /* The literal's data as a constant array in the module. */
    Cg *cg = k->cg;
    int64_t n = value_numel(v);
    LLVMTypeRef st = cg_stype(cg, t);
    LLVMValueRef *els = calloc((size_t)(n > 0 ? n : 1), sizeof *els);
    LLVMBuilderRef saved = cg->b;
    for (int64_t i = 0; i < n; i++) {
        double x = v->args[0].data[i];
        LLVMValueRef c = cg_const(cg, t, x);
        if (t == DT_BOOL)
            c = LLVMConstInt(cg->t_i8, x != 0, false);
        else if (t == DT_F16)
            c = LLVMConstBitCast(LLVMConstFPTrunc(LLVMConstReal(cg->t_f32, (float)x), cg->t_half),
                                 cg->t_i16);
        else if (t == DT_BF16) {
            float f = (float)x;
            uint32_t u;
            memcpy(&u, &f, 4);
            uint32_t r = isnan(f) ? 0x7fc0 : (u + 0x7fff + ((u >> 16) & 1)) >> 16;
            c = LLVMConstInt(cg->t_i16, r, false);
        }
        els[i] = c;
    }
    (void)saved;
    LLVMValueRef arr = LLVMConstArray(st, els, (unsigned)n);
    free(els);
    LLVMValueRef g = LLVMAddGlobal(cg->mod, LLVMTypeOf(arr), "tensor_literal");
    LLVMSetInitializer(g, arr);
    LLVMSetGlobalConstant(g, true);
    LLVMSetLinkage(g, LLVMPrivateLinkage);
    LLVMValueRef off = cg_const_i64(cg, 0);
    int64_t s = 1;
    for (int d = v->ndim - 1; d >= 0; d--) {
        off = LLVMBuildAdd(B, off, LLVMBuildMul(B, kern_dim_index(k, d), cg_const_i64(cg, s), ""),
                           "");
        s *= v->shape[d];
    }
    LLVMValueRef p =
        LLVMBuildGEP2(B, st, LLVMBuildBitCast(B, g, LLVMPointerType(st, 0), ""), &off, 1, "");
    return cg_load(k, p, t);
}

/* ---- dropout's mask (ir/dropout.h) ---- */

static LLVMValueRef u32(Kern *k, uint32_t x) {
    return LLVMConstInt(CG->t_i32, x, false);
}
/* The high and low words of the 64-bit product a * b (u32). */
static void mulhilo(Kern *k, uint32_t a, LLVMValueRef b, LLVMValueRef *hi, LLVMValueRef *lo) {
    LLVMValueRef p =
        LLVMBuildMul(B, LLVMConstInt(CG->t_i64, a, false), LLVMBuildZExt(B, b, CG->t_i64, ""), "");
    *lo = LLVMBuildTrunc(B, p, CG->t_i32, "");
    *hi = LLVMBuildTrunc(B, LLVMBuildLShr(B, p, LLVMConstInt(CG->t_i64, 32, false), ""), CG->t_i32,
                         "");
}
static LLVMValueRef e_dropout_apply(Kern *k, const Value *v, LLVMValueRef *a, DType t) {
    int nmask = (int)v->args[5].i;
    LLVMValueRef lin = cg_const_i64(CG, 0);
    for (int d = 0; d < nmask; d++)
        lin = LLVMBuildAdd(B, LLVMBuildMul(B, lin, cg_const_i64(CG, v->shape[d]), ""),
                           kern_dim_index(k, d), "");
    LLVMValueRef sh32 = LLVMConstInt(CG->t_i64, 32, false);
    LLVMValueRef c[4] = {
        LLVMBuildTrunc(B, lin, CG->t_i32, ""),
        LLVMBuildTrunc(B, LLVMBuildLShr(B, lin, sh32, ""), CG->t_i32, ""),
        u32(k, (uint32_t)v->args[4].i),
        LLVMBuildTrunc(B, a[2], CG->t_i32, ""),
    };
    LLVMValueRef k0 = LLVMBuildTrunc(B, a[1], CG->t_i32, "");
    LLVMValueRef k1 = LLVMBuildTrunc(B, LLVMBuildLShr(B, a[1], sh32, ""), CG->t_i32, "");
    for (int r = 0; r < 10; r++) {
        LLVMValueRef hi0, lo0, hi1, lo1;
        mulhilo(k, PHILOX_M0, c[0], &hi0, &lo0);
        mulhilo(k, PHILOX_M1, c[2], &hi1, &lo1);
        c[0] = LLVMBuildXor(B, LLVMBuildXor(B, hi1, c[1], ""), k0, "");
        c[2] = LLVMBuildXor(B, LLVMBuildXor(B, hi0, c[3], ""), k1, "");
        c[1] = lo1;
        c[3] = lo0;
        k0 = LLVMBuildAdd(B, k0, u32(k, PHILOX_W0), "");
        k1 = LLVMBuildAdd(B, k1, u32(k, PHILOX_W1), "");
    }
    double p = v->args[3].f;
    LLVMValueRef keep =
        icmp(k, LLVMIntULT, LLVMBuildLShr(B, c[0], u32(k, 8), ""), u32(k, dropout_threshold(p)));
    LLVMValueRef scale = cg_round(CG, C(k, t, dropout_scale(p, t)), t);
    LLVMValueRef noise = sel(k, keep, scale, C(k, t, 0));
    return LLVMBuildFMul(B, a[0], noise, "");
}

/* Which builder computes each op: the EXPR column of ir/emit.def. */
static const EmitFn emit_op[OP_COUNT] = {
#define EXPR(op, builder, round, flops) [OP_##op] = e_##builder,
#include "ir/emit.def"
};

static bool reads_operands(const Value *v) {
    /* *_like read only their operand's shape. */
    return !(op_info(v->op)->flags & OPF_CREATION);
}

LLVMValueRef cg_expr(Kern *k, const Value *v, bool compute) {
    Cg *cg = k->cg;
    DType t = cg_dt(cg, v);
    if (k->ov == v) return cg_load(k, kern_ptr(k, &k->ov_access), k->ov_access.dt);
    if (v->storage->op == OP_SCALAR) return cg_const(cg, t, v->storage->scalar);
    bool inlined = v->storage == v && cg->p->kp->inlined[v->order];
    if (!compute && !inlined) {
        Access a;
        access_of(k, v, &a);
        return cg_load(k, kern_ptr(k, &a), a.dt);
    }
    EmitFn fn = emit_op[v->op];
    if (!fn) {
        cg_fail(cg, "internal: no element expression for op '%s'", op_display_name(v));
        return cg_const(cg, t, 0);
    }
    LLVMValueRef ops[8] = {0};
    if (reads_operands(v))
        for (int i = 0; i < v->nin && i < 8; i++)
            ops[i] = cg_expr(k, v->in[i], false);
    LLVMValueRef r = fn(k, v, ops, t);
    return cg_round(cg, r, t);
}
