/* Element types and dense tensor descriptors: names, sizes, element counts
 * with overflow checks, and the "f32[2, 784]" spelling used in messages. */
#include "tgcrt.h"

#include <stdio.h>
#include <string.h>

/* Names and sizes: the table the compiler shares (RtDType lists its rows
 * in order, as the compiler's DType does). */
#define DTYPE_VALUE(id) RT_##id
#define DTYPE_VALUES RT_DTYPE_COUNT
#include "dtype_table.h"

const char *rt_dtype_name(RtDType t) {
    return dtype_row_name(t);
}
size_t rt_dtype_size(RtDType t) {
    return dtype_row_size(t);
}

RtDType rt_dtype_from_name(const char *name) {
    int row = name ? dtype_row_find(name) : -1;
    return row >= 0 ? (RtDType)row : RT_DTYPE_NONE;
}

bool rt_desc_numel(const RtDesc *d, int64_t *numel) {
    if (d->ndim < 0 || d->ndim > RT_MAX_DIMS) return false;
    int64_t n = 1;
    bool zero = false;
    /* A zero dimension makes the product 0 whatever the others are, but the
     * others must still be valid; overflow is only reported when no
     * dimension is zero. */
    for (int i = 0; i < d->ndim; i++) {
        if (d->shape[i] < 0) return false;
        if (d->shape[i] == 0) zero = true;
    }
    if (zero) {
        *numel = 0;
        return true;
    }
    for (int i = 0; i < d->ndim; i++) {
        if (n > INT64_MAX / d->shape[i]) return false;
        n *= d->shape[i];
    }
    *numel = n;
    return true;
}

bool rt_desc_nbytes(const RtDesc *d, size_t *nbytes) {
    int64_t n;
    size_t es = rt_dtype_size(d->dtype);
    if (!es || !rt_desc_numel(d, &n)) return false;
    if ((uint64_t)n > SIZE_MAX / es) return false;
    *nbytes = (size_t)n * es;
    return true;
}

bool rt_desc_equal(const RtDesc *a, const RtDesc *b) {
    if (a->dtype != b->dtype || a->ndim != b->ndim) return false;
    for (int i = 0; i < a->ndim && i < RT_MAX_DIMS; i++)
        if (a->shape[i] != b->shape[i]) return false;
    return true;
}

char *rt_desc_format(const RtDesc *d, char *buf, size_t cap) {
    if (!cap) return buf;
    size_t at = 0;
    int n = snprintf(buf, cap, "%s[", rt_dtype_name(d->dtype));
    at = n > 0 ? (size_t)n : 0;
    for (int i = 0; i < d->ndim && i < RT_MAX_DIMS && at < cap; i++) {
        n = snprintf(buf + at, cap - at, "%s%lld", i ? ", " : "", (long long)d->shape[i]);
        at += n > 0 ? (size_t)n : 0;
    }
    if (at < cap) snprintf(buf + at, cap - at, "]");
    return buf;
}
