/* Element types: how each dtype is stored and computed, conversions
 * between them, and the f16/bf16 rounding PyTorch applies after each op. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "codegen/llvm/cg.h"

DType cg_dt(Cg *cg, const Value *v) {
    return cg->p->dt[v->order];
}

bool dt_unsigned(DType t) {
    return dtype_is_unsigned(t) || t == DT_BOOL;
}

LLVMTypeRef cg_ctype(Cg *cg, DType t) {
    switch (t) {
    case DT_BOOL: return cg->t_i1;
    case DT_U8:
    case DT_I8: return cg->t_i8;
    case DT_U16:
    case DT_I16: return cg->t_i16;
    case DT_U32:
    case DT_I32: return cg->t_i32;
    case DT_U64:
    case DT_I64: return cg->t_i64;
    case DT_F64: return cg->t_f64;
    default: return cg->t_f32;
    }
}

LLVMTypeRef cg_stype(Cg *cg, DType t) {
    switch (t) {
    case DT_BOOL: return cg->t_i8;
    case DT_F16:
    case DT_BF16: return cg->t_i16;
    default: return cg_ctype(cg, t);
    }
}

LLVMValueRef cg_const_i64(Cg *cg, int64_t x) {
    return LLVMConstInt(cg->t_i64, (unsigned long long)x, true);
}

LLVMValueRef cg_const(Cg *cg, DType t, double x) {
    LLVMTypeRef ty = cg_ctype(cg, t);
    if (dtype_is_float(t)) {
        if (t == DT_F16 || t == DT_BF16) {
            /* The literal as the 16-bit type holds it. */
            float f = (float)x;
            LLVMValueRef c = LLVMConstReal(cg->t_f32, f);
            return cg_round(cg, c, t);
        }
        return LLVMConstReal(ty, t == DT_F32 ? (double)(float)x : x);
    }
    if (t == DT_BOOL) return LLVMConstInt(ty, x != 0, false);
    /* u64 above INT64_MAX is its own value, saturated at 2^64 - 1. */
    if (t == DT_U64 && x >= 0x1p63)
        return LLVMConstInt(ty, x >= 0x1p64 ? UINT64_MAX : (unsigned long long)x, false);
    /* Integers wrap as a C cast through int64 does. */
    int64_t i = x >= 9.2e18 ? INT64_MAX : x <= -9.2e18 ? INT64_MIN : (int64_t)x;
    return LLVMConstInt(ty, (unsigned long long)i, true);
}

LLVMValueRef cg_intrinsic(Cg *cg, const char *name, LLVMTypeRef t, LLVMValueRef *args, int n) {
    unsigned id = LLVMLookupIntrinsicID(name, strlen(name));
    LLVMTypeRef tys[2] = {t, t};
    LLVMValueRef fn = LLVMGetIntrinsicDeclaration(cg->mod, id, tys, 1);
    LLVMTypeRef fty = LLVMIntrinsicGetType(cg->ctx, id, tys, 1);
    return LLVMBuildCall2(cg->b, fty, fn, args, (unsigned)n, "");
}

LLVMValueRef cg_call(Cg *cg, const char *name, LLVMTypeRef ret, LLVMValueRef *args, int n) {
    LLVMTypeRef ps[16];
    TGC_ASSERT(n <= 16);
    for (int i = 0; i < n; i++)
        ps[i] = LLVMTypeOf(args[i]);
    LLVMTypeRef fty = LLVMFunctionType(ret, ps, (unsigned)n, false);
    LLVMValueRef fn = LLVMGetNamedFunction(cg->mod, name);
    if (!fn) {
        fn = LLVMAddFunction(cg->mod, name, fty);
        LLVMSetLinkage(fn, LLVMExternalLinkage);
    }
    return LLVMBuildCall2(cg->b, fty, fn, args, (unsigned)n, "");
}

static LLVMValueRef bf16_bits_to_float(Cg *cg, LLVMValueRef bits16) {
    LLVMValueRef w = LLVMBuildZExt(cg->b, bits16, cg->t_i32, "");
    w = LLVMBuildShl(cg->b, w, LLVMConstInt(cg->t_i32, 16, false), "");
    return LLVMBuildBitCast(cg->b, w, cg->t_f32, "");
}

/* Round to nearest even, NaN -> quiet NaN 0x7fc0: c10's round_to_nearest_even. */
static LLVMValueRef float_to_bf16_bits(Cg *cg, LLVMValueRef f) {
    LLVMBuilderRef b = cg->b;
    LLVMValueRef u = LLVMBuildBitCast(b, f, cg->t_i32, "");
    LLVMValueRef lsb = LLVMBuildAnd(b, LLVMBuildLShr(b, u, LLVMConstInt(cg->t_i32, 16, false), ""),
                                    LLVMConstInt(cg->t_i32, 1, false), "");
    LLVMValueRef r =
        LLVMBuildAdd(b, u, LLVMBuildAdd(b, lsb, LLVMConstInt(cg->t_i32, 0x7fff, false), ""), "");
    r = LLVMBuildLShr(b, r, LLVMConstInt(cg->t_i32, 16, false), "");
    LLVMValueRef isnan = LLVMBuildFCmp(b, LLVMRealUNO, f, f, "");
    r = LLVMBuildSelect(b, isnan, LLVMConstInt(cg->t_i32, 0x7fc0, false), r, "");
    return LLVMBuildTrunc(b, r, cg->t_i16, "");
}

LLVMValueRef cg_round(Cg *cg, LLVMValueRef v, DType t) {
    if (t == DT_F16) {
        LLVMValueRef h = LLVMBuildFPTrunc(cg->b, v, cg->t_half, "");
        return LLVMBuildFPExt(cg->b, h, cg->t_f32, "");
    }
    if (t == DT_BF16) return bf16_bits_to_float(cg, float_to_bf16_bits(cg, v));
    return v;
}

LLVMValueRef cg_load(Kern *k, LLVMValueRef ptr, DType t) {
    Cg *cg = k->cg;
    LLVMTypeRef st = cg_stype(cg, t);
    LLVMValueRef p = LLVMBuildBitCast(cg->b, ptr, LLVMPointerType(st, 0), "");
    LLVMValueRef x = LLVMBuildLoad2(cg->b, st, p, "");
    LLVMSetAlignment(x, (unsigned)dtype_size(t));
    switch (t) {
    case DT_BOOL: return LLVMBuildICmp(cg->b, LLVMIntNE, x, LLVMConstInt(cg->t_i8, 0, false), "");
    case DT_F16:
        return LLVMBuildFPExt(cg->b, LLVMBuildBitCast(cg->b, x, cg->t_half, ""), cg->t_f32, "");
    case DT_BF16: return bf16_bits_to_float(cg, x);
    default: return x;
    }
}

void cg_store(Kern *k, LLVMValueRef ptr, LLVMValueRef v, DType t) {
    Cg *cg = k->cg;
    LLVMTypeRef st = cg_stype(cg, t);
    LLVMValueRef p = LLVMBuildBitCast(cg->b, ptr, LLVMPointerType(st, 0), "");
    LLVMValueRef x = v;
    switch (t) {
    case DT_BOOL: x = LLVMBuildZExt(cg->b, v, cg->t_i8, ""); break;
    case DT_F16:
        x = LLVMBuildBitCast(cg->b, LLVMBuildFPTrunc(cg->b, v, cg->t_half, ""), cg->t_i16, "");
        break;
    case DT_BF16: x = float_to_bf16_bits(cg, v); break;
    default: break;
    }
    LLVMValueRef s = LLVMBuildStore(cg->b, x, p);
    LLVMSetAlignment(s, (unsigned)dtype_size(t));
}

LLVMValueRef cg_truthy(Cg *cg, LLVMValueRef v, DType t) {
    if (t == DT_BOOL) return v;
    if (dtype_is_float(t))
        return LLVMBuildFCmp(cg->b, LLVMRealUNE, v, LLVMConstNull(LLVMTypeOf(v)), "");
    return LLVMBuildICmp(cg->b, LLVMIntNE, v, LLVMConstNull(LLVMTypeOf(v)), "");
}

/* llvm.fptosi.sat / llvm.fptoui.sat of v to i64: NaN gives 0. */
static LLVMValueRef fpto64_sat(Cg *cg, LLVMValueRef v, const char *name) {
    LLVMTypeRef tys[2] = {cg->t_i64, LLVMTypeOf(v)};
    unsigned id = LLVMLookupIntrinsicID(name, strlen(name));
    LLVMValueRef fn = LLVMGetIntrinsicDeclaration(cg->mod, id, tys, 2);
    LLVMTypeRef fty = LLVMIntrinsicGetType(cg->ctx, id, tys, 2);
    return LLVMBuildCall2(cg->b, fty, fn, &v, 1, "");
}

/* Float to integer as a C cast on x86 does for in-range values; out of
 * range saturates rather than being undefined. Narrow types go through
 * int64 and wrap (torch: -1.0 -> uint8 255; numpy: -1.0 -> uint32
 * 4294967295). u64 takes values from 2^63 up unsigned, as numpy does, and
 * negative ones through int64 (-1.0 -> 2^64 - 1). */
static LLVMValueRef float_to_int(Cg *cg, LLVMValueRef v, DType to) {
    LLVMValueRef i = fpto64_sat(cg, v, "llvm.fptosi.sat");
    if (to == DT_U64) {
        LLVMValueRef big =
            LLVMBuildFCmp(cg->b, LLVMRealOGE, v, LLVMConstReal(LLVMTypeOf(v), 0x1p63), "");
        return LLVMBuildSelect(cg->b, big, fpto64_sat(cg, v, "llvm.fptoui.sat"), i, "");
    }
    if (to == DT_I64) return i;
    return LLVMBuildTrunc(cg->b, i, cg_ctype(cg, to), "");
}

LLVMValueRef cg_convert(Cg *cg, LLVMValueRef v, DType from, DType to) {
    if (from == to) return v;
    LLVMBuilderRef b = cg->b;
    LLVMTypeRef tt = cg_ctype(cg, to);
    if (to == DT_BOOL) return cg_truthy(cg, v, from);
    if (dtype_is_float(from) && dtype_is_float(to)) {
        LLVMValueRef r = v;
        if (from == DT_F64 && to != DT_F64)
            r = LLVMBuildFPTrunc(b, v, cg->t_f32, "");
        else if (from != DT_F64 && to == DT_F64)
            r = LLVMBuildFPExt(b, v, cg->t_f64, "");
        return cg_round(cg, r, to);
    }
    if (dtype_is_float(from)) return float_to_int(cg, v, to);
    if (dtype_is_float(to)) {
        LLVMValueRef r =
            dt_unsigned(from) ? LLVMBuildUIToFP(b, v, tt, "") : LLVMBuildSIToFP(b, v, tt, "");
        return cg_round(cg, r, to);
    }
    unsigned fw = LLVMGetIntTypeWidth(LLVMTypeOf(v)), tw = LLVMGetIntTypeWidth(tt);
    if (fw == tw) return v;
    if (fw > tw) return LLVMBuildTrunc(b, v, tt, "");
    return dt_unsigned(from) ? LLVMBuildZExt(b, v, tt, "") : LLVMBuildSExt(b, v, tt, "");
}
