/* slice_scatter's write (tgcrt_abi.h, rt_slice_write): strided copies
 * whose innermost dense run is one memcpy. A KV cache's write of one
 * token ([batch, heads, 1, head_dim] into [batch, heads, max_seq,
 * head_dim] along dim 2) is batch x heads copies of head_dim elements. */
#include <string.h>

#include "tgcrt_abi.h"

enum { MAXD = RT_SLICE_WRITE_MAX_DIMS };

/* dst[i] = src[i] over shape (n dims), element strides, elem bytes each. */
static void copy_strided(char *dst, const int64_t *dst_st, const char *src, const int64_t *src_st,
                         const int64_t *shape, int n, size_t elem) {
    for (int i = 0; i < n; i++)
        if (shape[i] == 0) return;
    /* The trailing dims both sides store densely merge into one run. */
    size_t run = elem;
    int64_t dense = 1;
    while (n > 0 && dst_st[n - 1] == dense && src_st[n - 1] == dense) {
        run *= (size_t)shape[n - 1];
        dense *= shape[n - 1];
        n--;
    }
    int64_t idx[MAXD] = {0};
    for (;;) {
        int64_t od = 0, os = 0;
        for (int i = 0; i < n; i++) {
            od += idx[i] * dst_st[i];
            os += idx[i] * src_st[i];
        }
        memcpy(dst + od * (int64_t)elem, src + os * (int64_t)elem, run);
        int i = n - 1;
        while (i >= 0 && ++idx[i] == shape[i])
            idx[i--] = 0;
        if (i < 0) return;
    }
}

static int64_t read_int(const void *p, int64_t dt) {
    switch (dt) {
    case RT_U8: return *(const uint8_t *)p;
    case RT_I8: return *(const int8_t *)p;
    case RT_I16: return *(const int16_t *)p;
    case RT_I32: return *(const int32_t *)p;
    case RT_U16: return *(const uint16_t *)p;
    case RT_U32: return *(const uint32_t *)p;
    case RT_U64: return (int64_t) * (const uint64_t *)p;
    default: return *(const int64_t *)p;
    }
}

void rt_slice_write(const RtSliceWriteDesc *d, void *dst, const void *input, const void *src,
                    const void *start, int64_t *index_error, const char *what) {
    int n = (int)d->ndim, dim = (int)d->dim;
    if (n < 1 || n > MAXD || dim < 0 || dim >= n) return;
    size_t elem = (size_t)d->elem_bytes;
    int64_t s = d->start;
    if (start) {
        s = read_int(start, d->start_dtype);
        /* U64 values past INT64_MAX read as negative: out of range too. */
        if (s < 0 || s > d->shape[dim] - d->len) {
            int64_t zero = 0;
            if (__atomic_compare_exchange_n(&index_error[0], &zero, (int64_t)(intptr_t)what, false,
                                            __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
                index_error[1] = s;
                index_error[2] = 0;
            }
            return;
        }
    }
    if (input) copy_strided(dst, d->dst_st, input, d->in_st, d->shape, n, elem);
    int64_t shape[MAXD] = {0}, st[MAXD] = {0};
    for (int i = 0; i < n; i++) {
        shape[i] = d->shape[i];
        st[i] = d->dst_st[i];
    }
    shape[dim] = d->len;
    st[dim] *= d->step;
    copy_strided((char *)dst + s * d->dst_st[dim] * (int64_t)elem, st, src, d->src_st, shape, n,
                 elem);
}
