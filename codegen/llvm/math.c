/* Float math that vectorises: exp, log, tanh and erf for f32 as inline
 * polynomials (no calls in the loop, so the loop vectoriser can widen
 * them), within a few ulp of libm. f64 calls libm, exactly as PyTorch's
 * scalar path does. */
#include <math.h>
#include <stdio.h>

#include "codegen/llvm/cg.h"

#define B (cg->b)

static LLVMValueRef cf(Cg *cg, double x) {
    return LLVMConstReal(cg->t_f32, x);
}
static LLVMValueRef ci(Cg *cg, int64_t x) {
    return LLVMConstInt(cg->t_i32, (unsigned long long)x, true);
}
static LLVMValueRef fmul(Cg *cg, LLVMValueRef a, LLVMValueRef b) {
    return LLVMBuildFMul(B, a, b, "");
}
static LLVMValueRef fadd(Cg *cg, LLVMValueRef a, LLVMValueRef b) {
    return LLVMBuildFAdd(B, a, b, "");
}
static LLVMValueRef sel(Cg *cg, LLVMValueRef c, LLVMValueRef a, LLVMValueRef b) {
    return LLVMBuildSelect(B, c, a, b, "");
}
static LLVMValueRef fcmp(Cg *cg, LLVMRealPredicate p, LLVMValueRef a, LLVMValueRef b) {
    return LLVMBuildFCmp(B, p, a, b, "");
}
/* a * b + c as llvm.fmuladd: one FMA where the target has fast FMA
 * (AVX2 + FMA, AVX-512, NEON), a multiply and an add elsewhere. The
 * polynomials' error bounds hold either way (each step rounds at most
 * once more without FMA). */
static LLVMValueRef fma3(Cg *cg, LLVMValueRef a, LLVMValueRef b, LLVMValueRef c) {
    LLVMValueRef args[3] = {a, b, c};
    return cg_intrinsic(cg, "llvm.fmuladd", LLVMTypeOf(a), args, 3);
}
/* Horner: c[0]*x^(n-1) + ... + c[n-1]. */
static LLVMValueRef poly(Cg *cg, LLVMValueRef x, const double *c, int n) {
    LLVMValueRef y = cf(cg, c[0]);
    for (int i = 1; i < n; i++)
        y = fma3(cg, y, x, cf(cg, c[i]));
    return y;
}
/* 2^n for an i32 n in [-126, 127]. */
static LLVMValueRef pow2i(Cg *cg, LLVMValueRef n) {
    LLVMValueRef bits = LLVMBuildShl(B, LLVMBuildAdd(B, n, ci(cg, 127), ""), ci(cg, 23), "");
    return LLVMBuildBitCast(B, bits, cg->t_f32, "");
}

LLVMValueRef cg_libm1(Cg *cg, const char *fname, LLVMValueRef x, DType t) {
    char name[32];
    if (t == DT_F64) return cg_call(cg, fname, cg->t_f64, &x, 1);
    snprintf(name, sizeof name, "%sf", fname);
    return cg_call(cg, name, cg->t_f32, &x, 1);
}

static LLVMValueRef exp_f32(Cg *cg, LLVMValueRef x) {
    /* Cody-Waite reduction x = n ln2 + r, |r| <= ln2/2, then a degree-6
     * minimax polynomial (Cephes expf); 2^n applied in two halves so
     * results down to the subnormals are right. */
    LLVMValueRef nan = fcmp(cg, LLVMRealUNO, x, x);
    LLVMValueRef xc = sel(cg, fcmp(cg, LLVMRealOGT, x, cf(cg, 89.0)), cf(cg, 89.0), x);
    /* Below -104 the result is 0: compute exp(0) instead, so that the
     * scaling below never makes subnormals (slow microcode assists on x86;
     * every causally masked -inf score would pay for them). */
    LLVMValueRef zero = fcmp(cg, LLVMRealOLT, x, cf(cg, -104.0));
    xc = sel(cg, zero, cf(cg, 0), xc);
    xc = sel(cg, nan, cf(cg, 0), xc);
    LLVMValueRef fx = fmul(cg, xc, cf(cg, 1.44269504088896341));
    fx = cg_intrinsic(cg, "llvm.rint", cg->t_f32, &fx, 1);
    /* r = x - n ln2 in two steps (Cody-Waite: n * 0.693359375 is exact). */
    LLVMValueRef r = fma3(cg, fx, cf(cg, -0.693359375), xc);
    r = fma3(cg, fx, cf(cg, 2.12194440e-4), r);
    static const double c[] = {1.9875691500E-4, 1.3981999507E-3, 8.3334519073E-3,
                               4.1665795894E-2, 1.6666665459E-1, 5.0000001201E-1};
    LLVMValueRef y = poly(cg, r, c, 6);
    y = fadd(cg, fma3(cg, y, fmul(cg, r, r), r), cf(cg, 1.0));
    LLVMValueRef n = LLVMBuildFPToSI(B, fx, cg->t_i32, "");
    LLVMValueRef n1 = LLVMBuildAShr(B, n, ci(cg, 1), "");
    LLVMValueRef n2 = LLVMBuildSub(B, n, n1, "");
    y = fmul(cg, fmul(cg, y, pow2i(cg, n1)), pow2i(cg, n2));
    y = sel(cg, zero, cf(cg, 0), y);
    return sel(cg, nan, x, y);
}

static LLVMValueRef log_f32(Cg *cg, LLVMValueRef x) {
    /* Cephes logf: x = m 2^e with m in [sqrt(1/2), sqrt(2)), then a
     * degree-9 polynomial in m - 1. */
    LLVMValueRef sub = fcmp(cg, LLVMRealOLT, x, cf(cg, 1.17549435e-38));
    LLVMValueRef xs = sel(cg, sub, fmul(cg, x, cf(cg, 8388608.0)), x);
    LLVMValueRef bits = LLVMBuildBitCast(B, xs, cg->t_i32, "");
    LLVMValueRef e =
        LLVMBuildSub(B, LLVMBuildAnd(B, LLVMBuildLShr(B, bits, ci(cg, 23), ""), ci(cg, 0xff), ""),
                     ci(cg, 126), "");
    e = sel(cg, sub, LLVMBuildSub(B, e, ci(cg, 23), ""), e);
    LLVMValueRef mb =
        LLVMBuildOr(B, LLVMBuildAnd(B, bits, ci(cg, 0x7fffff), ""), ci(cg, 0x3f000000), "");
    LLVMValueRef m = LLVMBuildBitCast(B, mb, cg->t_f32, "");
    LLVMValueRef small = fcmp(cg, LLVMRealOLT, m, cf(cg, 0.707106781186547524));
    e = sel(cg, small, LLVMBuildSub(B, e, ci(cg, 1), ""), e);
    m = sel(cg, small, LLVMBuildFSub(B, fadd(cg, m, m), cf(cg, 1), ""),
            LLVMBuildFSub(B, m, cf(cg, 1), ""));
    LLVMValueRef fe = LLVMBuildSIToFP(B, e, cg->t_f32, "");
    LLVMValueRef z = fmul(cg, m, m);
    static const double c[] = {7.0376836292E-2,  -1.1514610310E-1, 1.1676998740E-1,
                               -1.2420140846E-1, 1.4249322787E-1,  -1.6668057665E-1,
                               2.0000714765E-1,  -2.4999993993E-1, 3.3333331174E-1};
    LLVMValueRef y = fmul(cg, fmul(cg, poly(cg, m, c, 9), m), z);
    y = fadd(cg, y, fmul(cg, fe, cf(cg, -2.12194440e-4)));
    y = fadd(cg, y, fmul(cg, z, cf(cg, -0.5)));
    LLVMValueRef r = fadd(cg, fadd(cg, m, y), fmul(cg, fe, cf(cg, 0.693359375)));
    /* Special values: log(0) = -inf, log(x < 0) = NaN, log(inf) = inf, NaN. */
    r = sel(cg, fcmp(cg, LLVMRealOEQ, x, cf(cg, 0)), cf(cg, -INFINITY), r);
    r = sel(cg, fcmp(cg, LLVMRealOLT, x, cf(cg, 0)), cf(cg, NAN), r);
    r = sel(cg, fcmp(cg, LLVMRealOEQ, x, cf(cg, INFINITY)), x, r);
    return sel(cg, fcmp(cg, LLVMRealUNO, x, x), x, r);
}

static LLVMValueRef tanh_f32(Cg *cg, LLVMValueRef x) {
    /* Cephes tanhf: an odd polynomial below 0.625, else
     * 1 - 2 / (exp(2|x|) + 1) with x's sign. */
    LLVMValueRef ax = cg_intrinsic(cg, "llvm.fabs", cg->t_f32, &x, 1);
    LLVMValueRef z = fmul(cg, x, x);
    static const double c[] = {-5.70498872745E-3, 2.06390887954E-2, -5.37397155531E-2,
                               1.33314422036E-1, -3.33332819422E-1};
    LLVMValueRef p = fadd(cg, fmul(cg, fmul(cg, poly(cg, z, c, 5), z), x), x);
    LLVMValueRef e = exp_f32(cg, fadd(cg, ax, ax));
    LLVMValueRef big =
        LLVMBuildFSub(B, cf(cg, 1), LLVMBuildFDiv(B, cf(cg, 2), fadd(cg, e, cf(cg, 1)), ""), "");
    LLVMValueRef cs[2] = {big, x};
    big = cg_intrinsic(cg, "llvm.copysign", cg->t_f32, cs, 2);
    return sel(cg, fcmp(cg, LLVMRealOLT, ax, cf(cg, 0.625)), p, big);
}

static LLVMValueRef erf_f32(Cg *cg, LLVMValueRef x0) {
    /* Eigen's rational approximation on [-4, 4] (erf is +-1 in f32
     * beyond). */
    LLVMValueRef x = sel(cg, fcmp(cg, LLVMRealOGT, x0, cf(cg, 4)), cf(cg, 4), x0);
    x = sel(cg, fcmp(cg, LLVMRealOLT, x, cf(cg, -4)), cf(cg, -4), x);
    LLVMValueRef x2 = fmul(cg, x, x);
    static const double a[] = {-2.72614225801306e-10, 2.77068142495902e-08,  -2.10102402082508e-06,
                               -5.69250639462346e-05, -7.34990630326855e-04, -2.95459980854025e-03,
                               -1.60960333262415e-02};
    static const double b[] = {-1.45660718464996e-05, -2.13374055278905e-04, -1.68282697438203e-03,
                               -7.37332916720468e-03, -1.42647390514189e-02};
    LLVMValueRef p = fmul(cg, x, poly(cg, x2, a, 7));
    LLVMValueRef q = poly(cg, x2, b, 5);
    return LLVMBuildFDiv(B, p, q, "");
}

/* f64 calls libm; f32 (and f16/bf16, computed in f32) inlines the
 * polynomial above. */
#define MATH_FN(name)                                                                              \
    LLVMValueRef cg_##name(Cg *cg, LLVMValueRef x, DType t) {                                      \
        if (t == DT_F64) return cg_call(cg, #name, cg->t_f64, &x, 1);                              \
        return name##_f32(cg, x);                                                                  \
    }
MATH_FN(exp)
MATH_FN(log)
MATH_FN(tanh)
MATH_FN(erf)
