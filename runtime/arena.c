/* 64-byte aligned memory: the activation arena and the buffers the I/O
 * allocates, aligned for the widest vector loads the backend emits. Sizes
 * are rounded up to a multiple of 64 so a kernel may load a whole vector
 * at a buffer's last elements. */
#include "tgcrt.h"

#include <stdlib.h>

static bool round_up(size_t size, size_t *out) {
    if (size > SIZE_MAX - (RT_ALIGN - 1)) return false;
    *out = (size + RT_ALIGN - 1) & ~(size_t)(RT_ALIGN - 1);
    if (!*out) *out = RT_ALIGN; /* size 0: still a unique pointer */
    return true;
}

void *rt_aligned_alloc(size_t size) {
    size_t n;
    void *p = NULL;
    if (!round_up(size, &n) || posix_memalign(&p, RT_ALIGN, n)) return NULL;
    return p;
}

void rt_aligned_free(void *p) {
    free(p);
}

RtStatus rt_arena_init(RtArena *a, size_t size, RtError *err) {
    a->base = NULL;
    a->size = 0;
    size_t n;
    if (!round_up(size, &n))
        return rt_error_set(err, TGCRT_ERR_NOMEM, "activation arena of %zu bytes is too large",
                            size);
    a->base = rt_aligned_alloc(n);
    if (!a->base)
        return rt_error_set(err, TGCRT_ERR_NOMEM,
                            "out of memory allocating the activation arena (%zu bytes)", n);
    a->size = n;
    return TGCRT_OK;
}

void rt_arena_release(RtArena *a) {
    if (!a) return;
    rt_aligned_free(a->base);
    a->base = NULL;
    a->size = 0;
}
