/* Element expressions for the CUDA backend: the value of v at the kernel's
 * current index, as CUDA C. It mirrors codegen/llvm/expr.c op by op and
 * dtype by dtype: leaves are loads (views are stride arithmetic on their
 * storage) or folded literals, inlined values are computed in registers,
 * and one table, indexed by op, says how each elementwise op computes.
 * f16/bf16 results are computed in float and rounded once per op, as
 * PyTorch does.
 *
 * An emit function returns a C expression over its operands (temporaries
 * or literals in their compute types); cu_expr stores it into a fresh
 * temporary of the op's compute type. That temporary is also what narrows
 * i8/i16/u8 results: C computes them in int, which cannot overflow for
 * these widths, and the conversion to the narrow type wraps as the CPU's
 * 8- and 16-bit arithmetic does. i32/i64 arithmetic that can overflow goes
 * through unsigned types, since signed overflow is undefined in C++ and
 * NVVM would be free to assume it away; LLVM's add/sub/mul wrap.
 *
 * Float products are written __fmul_rn/__dmul_rn: NVRTC contracts a * b + c
 * into an FMA by default (--fmad=true) while the CPU backend rounds each
 * product, and these intrinsics are never contracted. Sums, quotients and
 * square roots are IEEE-correct without fast-math, so the basic arithmetic
 * gives the CPU's bits; the transcendental functions use CUDA's precise
 * versions (expf, logf, tanhf, erff, ..., within 1-2 ulp). */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "codegen/cuda/cu.h"
#include "ir/dropout.h"

typedef const char *(*EmitFn)(CuKern *k, const Value *v, const char **a, DType t);

#define CU (k->cu)

static DType in_dt(CuKern *k, const Value *v, int i) {
    return kd_dt(CU->p, v->in[i]);
}
/* A token that needs no parentheses: an identifier or an unsigned number. */
static bool simple(const char *s) {
    if (!*s) return false;
    for (; *s; s++)
        if (!(*s == '_' || *s == '.' || (*s >= '0' && *s <= '9') || (*s >= 'a' && *s <= 'z') ||
              (*s >= 'A' && *s <= 'Z')))
            return false;
    return true;
}
/* Whether s is one parenthesised group, "(...)" (cu_const's literals). */
static bool grouped(const char *s) {
    if (*s != '(') return false;
    int depth = 0;
    for (const char *c = s; *c; c++) {
        depth += *c == '(' ? 1 : *c == ')' ? -1 : 0;
        if (depth == 0) return c[1] == 0;
    }
    return false;
}
/* s as an operand of a binary operator. */
static const char *P(CuKern *k, const char *s) {
    return simple(s) || grouped(s) ? s : cu_str(CU, "(%s)", s);
}
/* s held in a name (a temporary of t's compute type unless already one):
 * what cu_convert and cu_round are given, and what cu_expr returns. */
static const char *named(CuKern *k, DType t, const char *s) {
    return simple(s) ? s : cuk_tmp(k, t, "%s", s);
}
/* A float constant in the precision t computes in (f16/bf16: float, not
 * rounded to 16 bits: the CPU backend's constants inside formulas). */
static const char *fc(CuKern *k, DType t, double x) {
    return cu_const(CU, t == DT_F64 ? DT_F64 : DT_F32, x);
}
/* A libm-style function for t: "expf" for f32/f16/bf16, "exp" for f64. */
static const char *fn1(CuKern *k, DType t, const char *name, const char *x) {
    return cu_str(CU, "%s%s(%s)", name, t == DT_F64 ? "" : "f", x);
}
/* A prelude helper for t's float precision: "tg_NAME_f32(x)". */
static const char *tgf(CuKern *k, DType t, const char *name, const char *x) {
    return cu_str(CU, "tg_%s_%s(%s)", name, t == DT_F64 ? "f64" : "f32", x);
}
static const char *fmul(CuKern *k, DType t, const char *x, const char *y) {
    return cu_str(CU, "%s(%s, %s)", t == DT_F64 ? "__dmul_rn" : "__fmul_rn", x, y);
}
/* x OP y (+, -, *) on integers, wrapping (see the top of the file). */
static const char *iarith(CuKern *k, DType t, const char *x, char op, const char *y) {
    if (t == DT_I32) return cu_str(CU, "(int)((unsigned)%s %c (unsigned)%s)", P(k, x), op, P(k, y));
    /* u16 would promote to int, where 65535 * 65535 overflows. */
    if (t == DT_U16)
        return cu_str(CU, "(unsigned short)((unsigned)%s %c (unsigned)%s)", P(k, x), op, P(k, y));
    if (t == DT_I64)
        return cu_str(CU, "(long long)((unsigned long long)%s %c (unsigned long long)%s)", P(k, x),
                      op, P(k, y));
    return cu_str(CU, "%s %c %s", P(k, x), op, P(k, y));
}
/* An int64 literal (INT64_MIN has no literal of its own in C). */
static const char *i64lit(CuKern *k, int64_t x) {
    if (x == INT64_MIN) return "(-9223372036854775807LL - 1)";
    return cu_str(CU, "%lldLL", (long long)x);
}
static const char *sel(CuKern *k, const char *c, const char *x, const char *y) {
    return cu_str(CU, "%s ? %s : %s", P(k, c), P(k, x), P(k, y));
}
/* x != 0 as bool (NaN is true: an unordered compare, as the CPU's UNE). */
static const char *truthy(CuKern *k, const char *x, DType t) {
    if (t == DT_BOOL) return x;
    return cu_str(CU, "%s != 0", P(k, x));
}

/* ---- arithmetic ---- */

/* other * alpha, the second operand of add and sub. */
static const char *times_alpha(CuKern *k, const Value *v, const char *y, DType t) {
    double alpha = kd_num_arg(v, 2, 1);
    if (alpha == 1) return y;
    return dtype_is_float(t) ? fmul(k, t, y, fc(k, t, alpha))
                             : iarith(k, t, y, '*', cu_const(CU, t, alpha));
}
static const char *e_add(CuKern *k, const Value *v, const char **a, DType t) {
    if (t == DT_BOOL)
        return cu_str(CU, "%s | %s", P(k, a[0]), kd_num_arg(v, 2, 1) != 0 ? P(k, a[1]) : "false");
    const char *y = times_alpha(k, v, a[1], t);
    return dtype_is_float(t) ? cu_str(CU, "%s + %s", P(k, a[0]), P(k, y))
                             : iarith(k, t, a[0], '+', y);
}
static const char *e_sub(CuKern *k, const Value *v, const char **a, DType t) {
    const char *y = times_alpha(k, v, a[1], t);
    return dtype_is_float(t) ? cu_str(CU, "%s - %s", P(k, a[0]), P(k, y))
                             : iarith(k, t, a[0], '-', y);
}
static const char *e_mul(CuKern *k, const Value *v, const char **a, DType t) {
    (void)v;
    if (t == DT_BOOL) return cu_str(CU, "%s & %s", P(k, a[0]), P(k, a[1]));
    return dtype_is_float(t) ? fmul(k, t, a[0], a[1]) : iarith(k, t, a[0], '*', a[1]);
}

/* Integer division through the prelude's helpers: x / 0 gives 0 (PyTorch
 * raises ZeroDivisionError; compiled code cannot, and the CPU backend gives
 * 0 too), INT_MIN / -1 wraps. fn: "div" (truncating quotient), "floordiv"
 * or "rem" (Python's floor semantics). i8, i16, u8 and bool go through the
 * i32 helpers: an int holds their values exactly, and for the unsigned
 * ones (never negative) floor and truncation agree, as the CPU's udiv and
 * urem. u32 and u64 divide in their own type, x / 0 giving 0 too. */
static const char *idiv(CuKern *k, const char *fn, const char **a, DType t) {
    if (t == DT_I64) return cu_str(CU, "tg_%s_i64(%s, %s)", fn, a[0], a[1]);
    if (t == DT_U32 || t == DT_U64) {
        const char *n = named(k, t, a[0]), *d = named(k, t, a[1]);
        return cu_str(CU, "%s == 0 ? 0 : %s %c %s", d, n, strcmp(fn, "rem") ? '/' : '%', d);
    }
    if (kd_unsigned(t) && strcmp(fn, "div")) fn = !strcmp(fn, "rem") ? "mod" : "div";
    return cu_str(CU, "tg_%s_i32((int)%s, (int)%s)", fn, P(k, a[0]), P(k, a[1]));
}
static const char *ffloordiv(CuKern *k, const char **a, DType t) {
    /* ATen's div_floor_floating, in the prelude. */
    return cu_str(CU, "tg_floordiv_%s(%s, %s)", t == DT_F64 ? "f64" : "f32", a[0], a[1]);
}
static const char *e_div(CuKern *k, const Value *v, const char **a, DType t) {
    const Arg *rm = v->nargs > 2 ? &v->args[2] : NULL;
    const char *mode = rm && rm->kind == ARG_STR ? rm->s : NULL;
    if (dtype_is_float(t)) {
        if (mode && !strcmp(mode, "floor")) return ffloordiv(k, a, t);
        const char *q = cu_str(CU, "%s / %s", P(k, a[0]), P(k, a[1]));
        if (mode && !strcmp(mode, "trunc")) q = fn1(k, t, "trunc", q);
        return q;
    }
    return idiv(k, mode && !strcmp(mode, "floor") ? "floordiv" : "div", a, t);
}
static const char *e_floordiv(CuKern *k, const Value *v, const char **a, DType t) {
    (void)v;
    if (dtype_is_float(t)) return ffloordiv(k, a, t);
    return idiv(k, "floordiv", a, t);
}
static const char *e_remainder(CuKern *k, const Value *v, const char **a, DType t) {
    (void)v;
    if (dtype_is_float(t))
        return cu_str(CU, "tg_rem_%s(%s, %s)", t == DT_F64 ? "f64" : "f32", a[0], a[1]);
    return idiv(k, "rem", a, t);
}
static const char *e_pow(CuKern *k, const Value *v, const char **a, DType t) {
    const Value *e = v->in[1];
    if (dtype_is_float(t)) {
        const char *one = fc(k, t, 1);
        if (e->storage->op == OP_SCALAR) {
            /* The exponents the CPU backend writes out (exact products and
             * correctly rounded roots instead of pow's few ulp). */
            double x = e->storage->scalar;
            if (x == 2) return fmul(k, t, a[0], a[0]);
            if (x == 3) return fmul(k, t, named(k, t, fmul(k, t, a[0], a[0])), a[0]);
            if (x == 0.5) return fn1(k, t, "sqrt", a[0]);
            if (x == -0.5) return cu_str(CU, "%s / %s", one, fn1(k, t, "sqrt", a[0]));
            if (x == -1) return cu_str(CU, "%s / %s", one, P(k, a[0]));
            if (x == -2) return cu_str(CU, "%s / %s", one, fmul(k, t, a[0], a[0]));
        }
        return cu_str(CU, "%s(%s, %s)", t == DT_F64 ? "pow" : "powf", a[0], a[1]);
    }
    /* Integers: exponentiation by squaring in int64, as rt_kernel_ipow. */
    const char *b64 = named(k, DT_I64, cu_convert(k, named(k, t, a[0]), t, DT_I64));
    const char *e64 = named(k, DT_I64, cu_convert(k, named(k, t, a[1]), t, DT_I64));
    const char *r = cuk_tmp(k, DT_I64, "tg_ipow(%s, %s)", b64, e64);
    return cu_convert(k, r, DT_I64, t);
}
static const char *minmax(CuKern *k, const char **a, DType t, bool is_max) {
    if (t == DT_BOOL) return cu_str(CU, "%s %c %s", P(k, a[0]), is_max ? '|' : '&', P(k, a[1]));
    /* Floats: a NaN operand propagates (the prelude's tg_max/tg_min). */
    if (dtype_is_float(t))
        return cu_str(CU, "tg_%s_%s(%s, %s)", is_max ? "max" : "min", t == DT_F64 ? "f64" : "f32",
                      a[0], a[1]);
    /* Integers: C compares u8 and bool in int, where their values stay
     * non-negative, so one form serves signed and unsigned. */
    return sel(k, cu_str(CU, "%s %c %s", P(k, a[0]), is_max ? '>' : '<', P(k, a[1])), a[0], a[1]);
}
static const char *e_maximum(CuKern *k, const Value *v, const char **a, DType t) {
    (void)v;
    return minmax(k, a, t, true);
}
static const char *e_minimum(CuKern *k, const Value *v, const char **a, DType t) {
    (void)v;
    return minmax(k, a, t, false);
}
/* x * log(y); 0 where x == 0, NaN where y is NaN (ATen's xlogy). */
static const char *e_xlogy(CuKern *k, const Value *v, const char **a, DType t) {
    (void)v;
    const char *p = fmul(k, t, a[0], fn1(k, t, "log", a[1]));
    const char *r = sel(k, cu_str(CU, "%s == 0", P(k, a[0])), fc(k, t, 0), p);
    return sel(k, cu_str(CU, "isnan(%s)", a[1]), a[1], r);
}
/* Comparisons: C's float == < <= > >= are ordered (false with a NaN) and
 * != unordered, the CPU backend's OEQ, OLT, ..., UNE; u8 and bool promote
 * to int without changing sign, so < compares them unsigned. */
#define CMP(name, op)                                                                              \
    static const char *e_##name(CuKern *k, const Value *v, const char **a, DType t) {              \
        (void)v, (void)t;                                                                          \
        return cu_str(CU, "%s " op " %s", P(k, a[0]), P(k, a[1]));                                 \
    }
CMP(eq, "==")
CMP(ne, "!=")
CMP(lt, "<")
CMP(le, "<=")
CMP(gt, ">")
CMP(ge, ">=")

static const char *e_logical_and(CuKern *k, const Value *v, const char **a, DType t) {
    (void)t;
    return cu_str(CU, "%s && %s", P(k, truthy(k, a[0], in_dt(k, v, 0))),
                  P(k, truthy(k, a[1], in_dt(k, v, 1))));
}
static const char *e_logical_or(CuKern *k, const Value *v, const char **a, DType t) {
    (void)t;
    return cu_str(CU, "%s || %s", P(k, truthy(k, a[0], in_dt(k, v, 0))),
                  P(k, truthy(k, a[1], in_dt(k, v, 1))));
}
static const char *e_logical_not(CuKern *k, const Value *v, const char **a, DType t) {
    const char *r = cuk_tmp(k, DT_BOOL, "!%s", P(k, truthy(k, a[0], in_dt(k, v, 0))));
    return cu_convert(k, r, DT_BOOL, t);
}
static const char *e_bitwise_and(CuKern *k, const Value *v, const char **a, DType t) {
    (void)v, (void)t;
    return cu_str(CU, "%s & %s", P(k, a[0]), P(k, a[1]));
}
static const char *e_bitwise_or(CuKern *k, const Value *v, const char **a, DType t) {
    (void)v, (void)t;
    return cu_str(CU, "%s | %s", P(k, a[0]), P(k, a[1]));
}
static const char *e_bitwise_not(CuKern *k, const Value *v, const char **a, DType t) {
    (void)v;
    /* ~ on a bool promotes to int (~1 == -2, still true): negate instead. */
    if (t == DT_BOOL) return cu_str(CU, "!%s", P(k, a[0]));
    return cu_str(CU, "~%s", P(k, a[0]));
}
static const char *e_where(CuKern *k, const Value *v, const char **a, DType t) {
    (void)t;
    return sel(k, truthy(k, a[0], in_dt(k, v, 0)), a[1], a[2]);
}
static const char *e_masked_fill(CuKern *k, const Value *v, const char **a, DType t) {
    (void)t;
    return sel(k, truthy(k, a[1], in_dt(k, v, 1)), a[2], a[0]);
}
/* max(x, lo) then min(., hi), each bound optional: x < lo and x > hi are
 * false for a NaN x, which stays NaN; lo > hi gives hi (ATen's clamp). */
static const char *clamp_to(CuKern *k, const char *x, DType t, const double *lo, const double *hi) {
    if (lo) {
        const char *c = cu_const(CU, t, *lo);
        x = named(k, t, sel(k, cu_str(CU, "%s < %s", P(k, x), P(k, c)), c, x));
    }
    if (hi) {
        const char *c = cu_const(CU, t, *hi);
        x = sel(k, cu_str(CU, "%s > %s", P(k, x), P(k, c)), c, x);
    }
    return x;
}
static const char *e_clamp(CuKern *k, const Value *v, const char **a, DType t) {
    double lo = kd_num_arg(v, 1, 0), hi = kd_num_arg(v, 2, 0);
    return clamp_to(k, a[0], t, v->args[1].kind != ARG_ABSENT ? &lo : NULL,
                    v->args[2].kind != ARG_ABSENT ? &hi : NULL);
}

/* ---- unary ---- */

static const char *e_neg(CuKern *k, const Value *v, const char **a, DType t) {
    (void)v;
    return dtype_is_float(t) ? cu_str(CU, "-%s", P(k, a[0])) : iarith(k, t, "0", '-', a[0]);
}
static const char *e_abs(CuKern *k, const Value *v, const char **a, DType t) {
    (void)v;
    if (dtype_is_float(t)) return fn1(k, t, "fabs", a[0]);
    if (kd_unsigned(t)) return a[0];
    return sel(k, cu_str(CU, "%s < 0", P(k, a[0])), iarith(k, t, "0", '-', a[0]), a[0]);
}
static const char *e_sign(CuKern *k, const Value *v, const char **a, DType t) {
    (void)v;
    if (t == DT_BOOL) return a[0];
    if (dtype_is_float(t)) {
        /* (x > 0) - (x < 0): 0 for NaN, as the CPU backend. */
        const char *ct = cu_ctype(t), *z = fc(k, t, 0);
        return cu_str(CU, "(%s)(%s > %s) - (%s)(%s < %s)", ct, P(k, a[0]), z, ct, P(k, a[0]), z);
    }
    if (kd_unsigned(t)) return cu_str(CU, "%s != 0", P(k, a[0]));
    return cu_str(CU, "(int)(%s > 0) - (int)(%s < 0)", P(k, a[0]), P(k, a[0]));
}
static const char *e_relu(CuKern *k, const Value *v, const char **a, DType t) {
    (void)v;
    /* NaN (not < 0) and -0.0 pass through, as the CPU's select. */
    if (dtype_is_float(t)) {
        const char *z = fc(k, t, 0);
        return sel(k, cu_str(CU, "%s < %s", P(k, a[0]), z), z, a[0]);
    }
    if (kd_unsigned(t)) return a[0];
    return sel(k, cu_str(CU, "%s < 0", P(k, a[0])), cu_const(CU, t, 0), a[0]);
}
#define FROUND(name, fn)                                                                           \
    static const char *e_##name(CuKern *k, const Value *v, const char **a, DType t) {              \
        (void)v;                                                                                   \
        if (!dtype_is_float(t)) return a[0];                                                       \
        return fn1(k, t, fn, a[0]);                                                                \
    }
FROUND(floor, "floor")
FROUND(ceil, "ceil")
FROUND(round, "rint") /* half to even, as torch.round */
FROUND(trunc, "trunc")
static const char *e_square(CuKern *k, const Value *v, const char **a, DType t) {
    return e_mul(k, v, (const char *[]){a[0], a[0]}, t);
}
#define LIBM(name)                                                                                 \
    static const char *e_##name(CuKern *k, const Value *v, const char **a, DType t) {              \
        (void)v;                                                                                   \
        return fn1(k, t, #name, a[0]);                                                             \
    }
LIBM(exp)
LIBM(log)
LIBM(log1p)
LIBM(expm1)
LIBM(sin)
LIBM(cos)
LIBM(tan)
LIBM(asin)
LIBM(acos)
LIBM(atan)
LIBM(sinh)
LIBM(cosh)
LIBM(asinh)
LIBM(acosh)
LIBM(atanh)
LIBM(tanh)
LIBM(erf)
LIBM(sqrt)
static const char *e_rsqrt(CuKern *k, const Value *v, const char **a, DType t) {
    (void)v;
    /* 1 / sqrt(x), both correctly rounded, as the CPU (not rsqrtf's
     * approximation). */
    return cu_str(CU, "%s / %s", fc(k, t, 1), fn1(k, t, "sqrt", a[0]));
}
static const char *e_reciprocal(CuKern *k, const Value *v, const char **a, DType t) {
    (void)v;
    return cu_str(CU, "%s / %s", fc(k, t, 1), P(k, a[0]));
}
static const char *e_sigmoid(CuKern *k, const Value *v, const char **a, DType t) {
    (void)v;
    return tgf(k, t, "sigmoid", a[0]);
}
static const char *e_silu(CuKern *k, const Value *v, const char **a, DType t) {
    (void)v;
    return fmul(k, t, a[0], tgf(k, t, "sigmoid", a[0]));
}
static const char *e_gelu(CuKern *k, const Value *v, const char **a, DType t) {
    bool tanh_mode = v->nargs > 1 && v->args[1].kind == ARG_STR && !strcmp(v->args[1].s, "tanh");
    return tgf(k, t, tanh_mode ? "gelu_tanh" : "gelu", a[0]);
}

/* ---- activations: the CPU backend's formulas (codegen/llvm/expr.c) ----
 * The user's numbers (slope, alpha, beta, threshold) in the compute
 * precision (fc: float for f16/bf16, not rounded to 16 bits); hardtanh's
 * bounds are clamp's. */

static const char *e_hardswish(CuKern *k, const Value *v, const char **a, DType t) {
    (void)v;
    return tgf(k, t, "hardswish", a[0]);
}
static const char *e_hardsigmoid(CuKern *k, const Value *v, const char **a, DType t) {
    (void)v;
    return tgf(k, t, "hardsigmoid", a[0]);
}
static const char *e_leaky_relu(CuKern *k, const Value *v, const char **a, DType t) {
    /* x > 0 ? x : x * slope (false for NaN: the product, NaN). */
    return sel(k, cu_str(CU, "%s > %s", P(k, a[0]), fc(k, t, 0)), a[0],
               fmul(k, t, a[0], fc(k, t, kd_num_arg(v, 1, 0.01))));
}
static const char *e_elu(CuKern *k, const Value *v, const char **a, DType t) {
    return cu_str(CU, "tg_elu_%s(%s, %s)", t == DT_F64 ? "f64" : "f32", a[0],
                  fc(k, t, kd_num_arg(v, 1, 1.0)));
}
static const char *e_softplus(CuKern *k, const Value *v, const char **a, DType t) {
    return cu_str(CU, "tg_softplus_%s(%s, %s, %s)", t == DT_F64 ? "f64" : "f32", a[0],
                  fc(k, t, kd_num_arg(v, 1, 1)), fc(k, t, kd_num_arg(v, 2, 20)));
}
static const char *e_mish(CuKern *k, const Value *v, const char **a, DType t) {
    (void)v;
    return tgf(k, t, "mish", a[0]);
}
static const char *e_hardtanh(CuKern *k, const Value *v, const char **a, DType t) {
    /* Integer tensors take the bounds truncated toward zero (toLong). */
    double lo = kd_num_arg(v, 1, -1.0), hi = kd_num_arg(v, 2, 1.0);
    if (!dtype_is_float(t)) lo = trunc(lo), hi = trunc(hi);
    return clamp_to(k, a[0], t, &lo, &hi);
}
static const char *e_relu6(CuKern *k, const Value *v, const char **a, DType t) {
    (void)v;
    double lo = 0, hi = 6;
    return clamp_to(k, a[0], t, &lo, &hi);
}

static const char *e_cast(CuKern *k, const Value *v, const char **a, DType t) {
    DType from = in_dt(k, v, 0);
    return cu_convert(k, named(k, from, a[0]), from, t);
}

/* ---- creation and index-dependent ops ---- */

static const char *e_fill(CuKern *k, const Value *v, const char **a, DType t) {
    (void)a;
    double x = v->op == OP_ZEROS || v->op == OP_ZEROS_LIKE ? 0
               : v->op == OP_ONES || v->op == OP_ONES_LIKE ? 1
                                                           : kd_num_arg(v, 1, 0);
    return cu_const(CU, t, x);
}
static const char *e_arange(CuKern *k, const Value *v, const char **a, DType t) {
    (void)a;
    double start = kd_num_arg(v, 0, 0), step = kd_num_arg(v, 2, 1);
    if (v->args[1].kind == ARG_ABSENT) start = 0; /* arange(end) */
    const char *i = cuk_dim_index(k, 0);
    if (!dtype_is_float(t)) {
        /* start + i * step in int64, wrapping, then narrowed. */
        const char *r = cuk_tmp(k, DT_I64,
                                "(long long)((unsigned long long)%s + (unsigned long long)%s * "
                                "(unsigned long long)%s)",
                                i64lit(k, (int64_t)start), P(k, i), i64lit(k, (int64_t)step));
        return cu_convert(k, r, DT_I64, t);
    }
    /* In double, then converted (rounded once to t), as the CPU backend. */
    const char *r = cuk_tmp(k, DT_F64, "__dadd_rn(%s, __dmul_rn(%s, (double)%s))",
                            cu_const(CU, DT_F64, start), cu_const(CU, DT_F64, step), P(k, i));
    return cu_convert(k, r, DT_F64, t);
}
static const char *e_eye(CuKern *k, const Value *v, const char **a, DType t) {
    (void)a, (void)v;
    const char *eq =
        cuk_tmp(k, DT_BOOL, "%s == %s", P(k, cuk_dim_index(k, 0)), P(k, cuk_dim_index(k, 1)));
    return cu_convert(k, eq, DT_BOOL, t);
}
static const char *e_tri(CuKern *k, const Value *v, const char **a, DType t) {
    int n = v->ndim;
    int64_t diag = v->args[1].kind == ARG_INT ? v->args[1].i : 0;
    const char *keep =
        cuk_tmp(k, DT_BOOL, "(long long)%s - (long long)%s %s %s", P(k, cuk_dim_index(k, n - 1)),
                P(k, cuk_dim_index(k, n - 2)), v->op == OP_TRIL ? "<=" : ">=", i64lit(k, diag));
    DType from = in_dt(k, v, 0);
    const char *x = named(k, t, cu_convert(k, named(k, from, a[0]), from, t));
    return sel(k, keep, x, cu_const(CU, t, 0));
}

/* dropout_apply: x * noise, the noise kept or not by the prelude's
 * Philox draw of the element's index over the first nmask dims
 * (ir/dropout.h), as the LLVM backend computes it. */
static const char *e_dropout_apply(CuKern *k, const Value *v, const char **a, DType t) {
    const char *lin = "0ULL";
    for (int d = 0; d < (int)v->args[5].i; d++)
        lin = cu_str(CU, "%s * %lluULL + (tg_u64)%s", P(k, lin), (unsigned long long)v->shape[d],
                     P(k, cuk_dim_index(k, d)));
    const char *r = cuk_tmp_c(k, "unsigned", "tg_philox((tg_u64)%s, %s, %uu, (tg_u64)%s)",
                              P(k, a[1]), P(k, lin), (unsigned)v->args[4].i, P(k, a[2]));
    double p = v->args[3].f;
    const char *keep = cuk_tmp(k, DT_BOOL, "(%s >> 8) < %uu", r, dropout_threshold(p));
    const char *noise =
        named(k, t, sel(k, keep, cu_const(CU, t, dropout_scale(p, t)), cu_const(CU, t, 0)));
    return fmul(k, t, a[0], noise);
}

/* Float to f16 bits, rounded to nearest even (the literal as the 16-bit
 * type holds it, as the CPU backend's constant folding gives it). */
static uint16_t host_f2h(float x) {
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
    uint32_t m = u & 0x7fffffffu;
    if (m > 0x7f800000u) return sign | 0x7e00u | (uint16_t)((m >> 13) & 0x3ffu); /* NaN */
    if (m >= 0x477ff000u) return sign | 0x7c00u; /* >= 65520 (and inf): inf */
    if (m >= 0x38800000u) {
        /* A normal half: rebias the exponent, round the mantissa to 10 bits
         * (a carry into the exponent is the right result). */
        uint32_t r = m - 0x38000000u;
        r += 0xfffu + ((r >> 13) & 1u);
        return sign | (uint16_t)(r >> 13);
    }
    if (m < 0x33000000u) return sign; /* <= 2^-25: zero */
    /* A subnormal half, in units of 2^-24. */
    uint32_t e = m >> 23, mant = (m & 0x7fffffu) | 0x800000u;
    uint32_t shift = 126u - e;
    uint32_t h = mant >> shift, rem = mant & ((1u << shift) - 1u), half = 1u << (shift - 1u);
    if (rem > half || (rem == half && (h & 1u))) h++;
    return sign | (uint16_t)h;
}
/* The bits of literal element x stored as dtype t (integers wrap as a C
 * cast through int64 does, saturating at int64's ends: cg_const). */
static uint64_t literal_bits(DType t, double x) {
    switch (t) {
    case DT_BOOL: return x != 0;
    case DT_F16: return host_f2h((float)x);
    case DT_BF16: {
        float f = (float)x;
        uint32_t u;
        memcpy(&u, &f, sizeof u);
        return isnan(f) ? 0x7fc0 : (u + 0x7fff + ((u >> 16) & 1)) >> 16;
    }
    case DT_F32: {
        float f = (float)x;
        uint32_t u;
        memcpy(&u, &f, sizeof u);
        return u;
    }
    case DT_F64: {
        uint64_t u;
        memcpy(&u, &x, sizeof u);
        return u;
    }
    default: {
        if (t == DT_U64 && x >= 0x1p63) return x >= 0x1p64 ? UINT64_MAX : (uint64_t)x;
        int64_t i = x >= 9.2e18 ? INT64_MAX : x <= -9.2e18 ? INT64_MIN : (int64_t)x;
        int bits = 8 * (int)dtype_size(t);
        uint64_t u = (uint64_t)i;
        return bits == 64 ? u : u & ((1ULL << bits) - 1);
    }
    }
}
static const char *e_tensor(CuKern *k, const Value *v, const char **a, DType t) {
    (void)a;
    /* The literal's data as a static const array declared at the top of
     * the kernel: NVRTC places it once in global memory (read through the
     * read-only cache) instead of building it per thread. Elements are
     * stored as unsigned bit patterns of the storage width, so every value
     * (inf, NaN, -0.0, INT64_MIN) has an exact constant initialiser. */
    int64_t n = value_numel(v);
    int size = (int)dtype_size(t);
    const char *ut = size == 1   ? "unsigned char"
                     : size == 2 ? "unsigned short"
                     : size == 4 ? "unsigned int"
                                 : "unsigned long long";
    const char *name = cu_str(CU, "lit%d", k->ntmp++);
    sb_printf(&k->head, "    static const %s %s[%lld] = {", ut, name, (long long)(n > 0 ? n : 1));
    for (int64_t i = 0; i < n; i++)
        sb_printf(&k->head, "%s%s0x%llxu%s", i ? "," : "", i % 8 ? " " : "\n        ",
                  (unsigned long long)literal_bits(t, v->args[0].data[i]), size == 8 ? "ll" : "");
    sb_printf(&k->head, "%s};\n", n > 0 ? "" : "0");
    /* The row-major offset of the element at the kernel's dim indices. */
    const char *off = "0";
    int64_t s = 1;
    for (int d = v->ndim - 1; d >= 0; d--) {
        off = cu_str(CU, "%s + (long long)%s * %s", off, P(k, cuk_dim_index(k, d)), i64lit(k, s));
        s *= v->shape[d];
    }
    const char *e = cu_str(CU, "%s[%s]", name, off);
    switch (t) {
    case DT_BOOL: return cu_str(CU, "%s != 0", e);
    case DT_F16: return cu_str(CU, "tg_h2f(%s)", e);
    case DT_BF16: return cu_str(CU, "tg_b2f(%s)", e);
    case DT_F32: return cu_str(CU, "__uint_as_float(%s)", e);
    case DT_F64: return cu_str(CU, "__longlong_as_double((long long)%s)", e);
    default: return cu_str(CU, "(%s)%s", cu_ctype(t), e);
    }
}

/* Which builder computes each op: the EXPR column of ir/emit.def. */
static const EmitFn emit_op[OP_COUNT] = {
#define EXPR(op, builder, round, flops) [OP_##op] = e_##builder,
#include "ir/emit.def"
};

/* Whether v's f16/bf16 result is already a value of the 16-bit type, so
 * that rounding it again would change nothing (the round column of
 * ir/emit.def): conversions and literals (cu_convert and cu_const round
 * them), and selections among operands or exact functions of one (neg,
 * abs, floor, ...) when every data operand has v's dtype. */
enum { EMIT_ROUNDED, EMIT_EXACT, EMIT_EXACT_SAME };
static const unsigned char round_rule[OP_COUNT] = {
#define EXPR(op, builder, round, flops) [OP_##op] = round,
#include "ir/emit.def"
};
static bool exact_op(CuKern *k, const Value *v, DType t) {
    if (round_rule[v->op] != EMIT_EXACT_SAME) return round_rule[v->op] == EMIT_EXACT;
    for (int i = 0; i < v->nin; i++) {
        DType d = in_dt(k, v, i);
        if (d != t && d != DT_BOOL) return false;
    }
    return true;
}

static bool reads_operands(const Value *v) {
    /* *_like read only their operand's shape. */
    return !(op_info(v->op)->flags & OPF_CREATION);
}

const char *cu_expr(CuKern *k, const Value *v, bool compute) {
    Cu *cu = k->cu;
    DType t = kd_dt(cu->p, v);
    if (k->ov == v) return cuk_load(k, &k->ov_access);
    if (v->storage->op == OP_SCALAR) return cu_const(cu, t, v->storage->scalar);
    if (!compute && !kd_is_inlined(cu->p, v)) {
        Access a;
        kd_access_of(cu->p, v, &a);
        return cuk_load(k, &a);
    }
    EmitFn fn = (unsigned)v->op < OP_COUNT ? emit_op[v->op] : NULL;
    if (!fn) {
        cu_fail(cu, "internal: no element expression for op '%s'", op_display_name(v));
        return cu_const(cu, t, 0);
    }
    const char *ops[8] = {0};
    if (reads_operands(v))
        for (int i = 0; i < v->nin && i < 8; i++)
            ops[i] = cu_expr(k, v->in[i], false);
    const char *r = fn(k, v, ops, t);
    /* The op's result in its compute type, rounded once for f16/bf16. */
    if ((t == DT_F16 || t == DT_BF16) && !exact_op(k, v, t)) r = cu_round(k, named(k, t, r), t);
    return named(k, t, r);
}
