/* The f16 overflow check's view of a weights file: each tensor's range. */
#include "driver/weights_range.h"

#include <math.h>
#include <string.h>

#include "tgcrt.h"

static double element(const RtStTensor *t, int64_t i) {
    const char *p = t->data;
    switch (t->desc.dtype) {
    case RT_F32: {
        float f;
        memcpy(&f, p + 4 * i, 4);
        return f;
    }
    case RT_F64: {
        double f;
        memcpy(&f, p + 8 * i, 8);
        return f;
    }
    case RT_F16:
    case RT_BF16: {
        uint16_t h;
        memcpy(&h, p + 2 * i, 2);
        return t->desc.dtype == RT_F16 ? rt_f16_to_f32(h) : rt_bf16_to_f32(h);
    }
    default: return NAN;
    }
}

bool weights_range(void *ctx, const Value *param, double *lo, double *hi) {
    const RtSafetensors *st = ctx;
    const RtStTensor *t = st && param->name ? rt_st_find(st, param->name) : NULL;
    if (!t || rt_dtype_size(t->desc.dtype) == 0) return false;
    int64_t n = (int64_t)(t->nbytes / rt_dtype_size(t->desc.dtype));
    double a = INFINITY, b = -INFINITY;
    for (int64_t i = 0; i < n; i++) {
        double v = element(t, i);
        if (isnan(v)) return false; /* not a float tensor, or NaN: no claim */
        a = v < a ? v : a;
        b = v > b ? v : b;
    }
    if (n == 0) return false;
    *lo = a, *hi = b;
    return true;
}
