/* The f16 overflow check's view of a weights file: each tensor's range. */
#include "driver/weights_range.h"

#include <math.h>

#include "tgcrt.h"

bool weights_range(void *ctx, const Value *param, double *lo, double *hi) {
    const RtSafetensors *st = ctx;
    const RtStTensor *t = st && param->name ? rt_st_find(st, param->name) : NULL;
    RtDType dt = t ? t->desc.dtype : RT_DTYPE_NONE;
    if (dt != RT_F32 && dt != RT_F64 && dt != RT_F16 && dt != RT_BF16) return false;
    int64_t n = (int64_t)(t->nbytes / rt_dtype_size(t->desc.dtype));
    double a = INFINITY, b = -INFINITY;
    for (int64_t i = 0; i < n; i++) {
        double v = rt_load_float(t->data, dt, (size_t)i);
        if (isnan(v)) return false; /* NaN: no claim */
        a = v < a ? v : a;
        b = v > b ? v : b;
    }
    if (n == 0) return false;
    *lo = a, *hi = b;
    return true;
}
