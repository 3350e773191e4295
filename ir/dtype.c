#include "ir/dtype.h"

#include <string.h>

/* Names and sizes: the table the runtime shares (DType lists its rows in
 * order, as RtDType does). */
#define DTYPE_VALUE(id) DT_##id
#define DTYPE_VALUES DT_COUNT
#include "runtime/dtype_table.h"

const char *dtype_name(DType t) {
    return dtype_row_name(t);
}
bool dtype_is_float(DType t) {
    return t == DT_F16 || t == DT_BF16 || t == DT_F32 || t == DT_F64;
}
bool dtype_is_int(DType t) {
    return (t >= DT_U8 && t <= DT_I64) || dtype_is_unsigned(t);
}
bool dtype_is_unsigned(DType t) {
    return t == DT_U8 || t == DT_U16 || t == DT_U32 || t == DT_U64;
}
size_t dtype_size(DType t) {
    return dtype_row_size(t);
}

DType dtype_from_name(const char *name) {
    static const struct {
        const char *alias;
        DType t;
    } aliases[] = {
        {"float32", DT_F32},   {"float", DT_F32},   {"float16", DT_F16}, {"half", DT_F16},
        {"bfloat16", DT_BF16}, {"float64", DT_F64}, {"double", DT_F64},  {"int64", DT_I64},
        {"long", DT_I64},      {"int32", DT_I32},   {"int", DT_I32},     {"int16", DT_I16},
        {"short", DT_I16},     {"int8", DT_I8},     {"uint8", DT_U8},    {"uint16", DT_U16},
        {"uint32", DT_U32},    {"uint64", DT_U64},
    };
    int row = dtype_row_find(name);
    if (row >= 0) return (DType)row;
    for (size_t i = 0; i < sizeof aliases / sizeof *aliases; i++)
        if (!strcmp(name, aliases[i].alias)) return aliases[i].t;
    return DT_NONE;
}

DType dtype_promote(DType a, DType b) {
    if (a == DT_NONE) return b;
    if (b == DT_NONE || a == b) return a;
    if (a == DT_BOOL) return b;
    if (b == DT_BOOL) return a;
    bool fa = dtype_is_float(a), fb = dtype_is_float(b);
    if (fa != fb) return fa ? a : b;
    if (fa) {
        if ((a == DT_F16 && b == DT_BF16) || (a == DT_BF16 && b == DT_F16)) return DT_F32;
        return a > b ? a : b;
    }
    if (dtype_is_unsigned(a) && dtype_is_unsigned(b)) return dtype_size(a) > dtype_size(b) ? a : b;
    if (dtype_is_unsigned(a) || dtype_is_unsigned(b)) {
        /* An unsigned type with a signed one: the narrowest signed type
         * holding both (PyTorch's rule for u8; numpy's for u16/u32/u64,
         * which PyTorch 2 refuses to promote with anything but a float).
         * u64 with any signed type has none, so numpy's f64. */
        DType u = dtype_is_unsigned(a) ? a : b, s = u == a ? b : a;
        if (dtype_size(s) > dtype_size(u)) return s;
        switch (u) {
        case DT_U8: return DT_I16;
        case DT_U16: return DT_I32;
        case DT_U32: return DT_I64;
        default: return DT_F64;
        }
    }
    return a > b ? a : b;
}

void dtype_state_init(DTypeState *s) {
    s->dim = s->zero = s->wrapped = DT_NONE;
}

void dtype_state_add(DTypeState *s, DType t, int ndim, bool weak) {
    if (weak) {
        /* A float literal counts as the default dtype, an int literal as i64. */
        DType c = dtype_is_float(t) ? DT_F32 : t;
        s->wrapped = dtype_promote(s->wrapped, c);
    } else if (ndim > 0) {
        s->dim = dtype_promote(s->dim, t);
    } else {
        s->zero = dtype_promote(s->zero, t);
    }
}

/* c10's combine_categories: a lower-priority operand only matters when it
 * is of a higher category (bool < integer < floating). */
static DType combine(DType higher, DType lower) {
    if (higher != DT_NONE && dtype_is_float(higher)) return higher;
    if (higher == DT_BOOL || (lower != DT_NONE && dtype_is_float(lower)))
        return dtype_promote(higher, lower);
    if (higher != DT_NONE) return higher;
    return lower;
}

DType dtype_state_result(const DTypeState *s) {
    return combine(s->dim, combine(s->zero, s->wrapped));
}
