/* Element types in CUDA C: how each dtype is stored and computed, literals
 * and conversions. bool is a byte in memory and `bool` in registers; f16
 * and bf16 are their 16-bit patterns in memory and float in registers,
 * rounded after every op by the prelude's tg_rh / tg_rb (as PyTorch's CPU
 * kernels and the LLVM backend do). */
#include <math.h>
#include <stdio.h>

#include "codegen/cuda/cu.h"

const char *cu_ctype(DType t) {
    switch (t) {
    case DT_BOOL: return "bool";
    case DT_U8: return "unsigned char";
    case DT_I8: return "signed char";
    case DT_I16: return "short";
    case DT_I32: return "int";
    case DT_I64: return "long long";
    case DT_U16: return "unsigned short";
    case DT_U32: return "unsigned int";
    case DT_U64: return "unsigned long long";
    case DT_F64: return "double";
    default: return "float";
    }
}

const char *cu_stype(DType t) {
    switch (t) {
    case DT_BOOL: return "unsigned char";
    case DT_F16:
    case DT_BF16: return "unsigned short";
    default: return cu_ctype(t);
    }
}

static const char *float_literal(Cu *cu, double x, bool dbl) {
    /* A NaN keeps its sign, as torch.full(..., -nan) does. */
    if (isnan(x))
        return signbit(x) ? (dbl ? "(-(double)TG_NAN)" : "(-TG_NAN)")
                          : (dbl ? "((double)TG_NAN)" : "TG_NAN");
    if (isinf(x))
        return x > 0 ? (dbl ? "((double)TG_INF)" : "TG_INF")
                     : (dbl ? "(-(double)TG_INF)" : "(-TG_INF)");
    /* %a is exact: the literal is the value the graph holds. */
    return dbl ? cu_str(cu, "(%a)", x) : cu_str(cu, "(%af)", (double)(float)x);
}

/* x as an int64, as cg_const takes it: saturated at int64's ends (a C
 * cast of a double out of range is undefined), NaN as 0. */
static long long wrap_i64(double x) {
    if (x != x) return 0;
    return x >= 0x1p63 ? INT64_MAX : x <= -0x1p63 ? INT64_MIN : (long long)x;
}

const char *cu_const(Cu *cu, DType t, double x) {
    switch (t) {
    case DT_BOOL: return x != 0 ? "true" : "false";
    case DT_F64: return float_literal(cu, x, true);
    case DT_F32: return float_literal(cu, x, false);
    case DT_F16: return cu_str(cu, "tg_rh(%s)", float_literal(cu, x, false));
    case DT_BF16: return cu_str(cu, "tg_rb(%s)", float_literal(cu, x, false));
    case DT_I64: {
        /* Saturate as cg_const does; INT64_MIN has no literal of its own. */
        if (!(x > -9223372036854775808.0)) return "(-9223372036854775807LL - 1)";
        if (x >= 9223372036854775807.0) return "(9223372036854775807LL)";
        return cu_str(cu, "(%lldLL)", (long long)x);
    }
    case DT_U8: return cu_str(cu, "((unsigned char)%u)", (unsigned)(uint8_t)(long long)x);
    case DT_U16: return cu_str(cu, "((unsigned short)%u)", (unsigned)(uint16_t)wrap_i64(x));
    case DT_U32: return cu_str(cu, "(%uU)", (unsigned)(uint32_t)wrap_i64(x));
    case DT_U64: {
        /* As cg_const: from 2^63 up the value itself, saturated at 2^64 - 1;
         * below, wrapped through int64 (-1 -> 2^64 - 1). */
        unsigned long long u = x >= 0x1p64                     ? ~0ULL
                               : x >= 0x1p63                   ? (unsigned long long)x
                               : !(x > -9223372036854775808.0) ? 1ULL << 63
                                                               : (unsigned long long)(long long)x;
        return cu_str(cu, "(%lluULL)", u);
    }
    default: return cu_str(cu, "((%s)%lld)", cu_ctype(t), (long long)x);
    }
}

const char *cu_round(CuKern *k, const char *x, DType t) {
    if (t == DT_F16) return cuk_tmp(k, t, "tg_rh(%s)", x);
    if (t == DT_BF16) return cuk_tmp(k, t, "tg_rb(%s)", x);
    return x;
}

const char *cu_convert(CuKern *k, const char *x, DType from, DType to) {
    if (from == to) return x;
    if (to == DT_BOOL) return cuk_tmp(k, to, "(%s != 0)", x);
    if (from == DT_BOOL) return cuk_tmp(k, to, "(%s)(%s ? 1 : 0)", cu_ctype(to), x);
    bool ff = dtype_is_float(from), ft = dtype_is_float(to);
    if (ff && !ft) {
        /* Float to integer truncates toward zero, through i64 so that
         * narrow types wrap as on the CPU instead of saturating; u64 from
         * 2^63 up directly, as the LLVM backend does. */
        if (to == DT_U64)
            return cuk_tmp(k, to,
                           "((%s) >= 9223372036854775808.0 ? (unsigned long long)(%s) : "
                           "(unsigned long long)(long long)(%s))",
                           x, x, x);
        return cuk_tmp(k, to, "(%s)(long long)(%s)", cu_ctype(to), x);
    }
    const char *r = cuk_tmp(k, to, "(%s)(%s)", cu_ctype(to), x);
    return cu_round(k, r, to);
}
