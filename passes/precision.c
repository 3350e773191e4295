/* Storage precision policies (see precision.h). */
#include "passes/precision.h"

#include <string.h>

bool precision_parse(const char *s, Precision *out) {
    DType t = dtype_from_name(s);
    switch (t) {
    case DT_F32: *out = PREC_F32; return true;
    case DT_F16: *out = PREC_F16; return true;
    case DT_BF16: *out = PREC_BF16; return true;
    default: return false;
    }
}

const char *precision_name(Precision p) {
    switch (p) {
    case PREC_F32: return "f32";
    case PREC_F16: return "f16";
    case PREC_BF16: return "bf16";
    default: return "declared";
    }
}

DType precision_float_dtype(Precision p) {
    switch (p) {
    case PREC_F32: return DT_F32;
    case PREC_F16: return DT_F16;
    case PREC_BF16: return DT_BF16;
    default: return DT_NONE;
    }
}

DType precision_apply(Precision p, DType t) {
    if (p == PREC_DECLARED || !dtype_is_float(t)) return t;
    return precision_float_dtype(p);
}

DType *precision_storage_dtypes(Arena *a, const Graph *g, Precision p) {
    DType *dt = ARENA_ARRAY(a, DType, g->nvalues > 0 ? g->nvalues : 1);
    for (int i = 0; i < g->nvalues; i++) {
        const Value *v = g->values[i];
        TGC_ASSERT(v->order == i);
        dt[i] = precision_apply(p, v->dtype);
    }
    return dt;
}
