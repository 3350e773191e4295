/* f32 matrix products through oneDNN's matmul primitive (matmul.c decides
 * which products come here; docs/runtime.md "Matrix products").
 *
 * A primitive is made once per shape, strides and accumulation per context
 * and kept in the context's pool (rt_pool_mm_lock), with the engine, the
 * stream and the three memory objects whose data handles each call points
 * at its operands: oneDNN's own dnnl_sgemm makes its primitive on every
 * call, which costs more than the product at small shapes (16 x 1000 x 2048
 * ran at 8 GFLOP/s through it, measured). Operands are described by their
 * strides, so transposed and sliced operands are read in place; a batch
 * dimension in which an operand is broadcast is given size 1 (oneDNN's
 * broadcast). A layout only oneDNN's reference kernel takes is refused, and
 * so is any shape that fails, and the refusal is kept too, so that the
 * caller's OpenBLAS path runs it without trying again.
 *
 * oneDNN runs on OpenMP, the program's one threading runtime; its thread
 * count is the context's, set on the calling thread for the call and
 * restored after (as conv.c does). */
#include <oneapi/dnnl/dnnl.h>
#include <stdlib.h>
#include <string.h>

#include "rt_internal.h"

void omp_set_num_threads(int n);
int omp_get_max_threads(void);

/* Shapes kept per context; past this a new shape goes to OpenBLAS (a
 * program has a fixed set of products, so only a pathological one gets
 * here). */
#define MM_CACHE_MAX 512

typedef struct Key {
    int nd; /* 2 + batch dims */
    bool acc;
    int64_t dims[3][RT_MM_DNNL_MAX_DIMS];    /* src, weights, dst */
    int64_t strides[3][RT_MM_DNNL_MAX_DIMS]; /* likewise */
} Key;

typedef struct Entry {
    Key key;
    dnnl_primitive_t prim; /* NULL: refused (the caller uses OpenBLAS) */
    dnnl_memory_t mem[3];
    char impl[64];
} Entry;

struct RtMmCache {
    dnnl_engine_t eng;
    dnnl_stream_t stream;
    bool broken; /* no engine or stream: every product goes to OpenBLAS */
    Entry *e;
    int n, cap;
};

static void entry_free(Entry *e) {
    for (int i = 0; i < 3; i++)
        if (e->mem[i]) dnnl_memory_destroy(e->mem[i]);
    if (e->prim) dnnl_primitive_destroy(e->prim);
}

static void cache_free(RtMmCache *c) {
    if (!c) return;
    for (int i = 0; i < c->n; i++)
        entry_free(&c->e[i]);
    free(c->e);
    if (c->stream) dnnl_stream_destroy(c->stream);
    if (c->eng) dnnl_engine_destroy(c->eng);
    free(c);
}

static RtMmCache *cache_get(RtMmCache **slot) {
    if (*slot) return *slot;
    RtMmCache *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    if (dnnl_engine_create(&c->eng, dnnl_cpu, 0) ||
        dnnl_stream_create(&c->stream, c->eng, dnnl_stream_default_flags))
        c->broken = true;
    *slot = c;
    return c;
}

/* Makes e's primitive (with `threads` OpenMP threads current, which oneDNN
 * sizes its work split by); leaves e->prim NULL when oneDNN has only its
 * reference kernel or nothing for the layout. */
static void entry_make(RtMmCache *c, Entry *e, int threads) {
    const Key *k = &e->key;
    dnnl_memory_desc_t md[3];
    for (int i = 0; i < 3; i++)
        if (dnnl_memory_desc_init_by_strides(&md[i], k->nd, k->dims[i], dnnl_f32, k->strides[i]))
            return;
    dnnl_matmul_desc_t desc;
    if (dnnl_matmul_desc_init(&desc, &md[0], &md[1], NULL, &md[2])) return;
    dnnl_primitive_attr_t attr = NULL;
    dnnl_post_ops_t po = NULL;
    if (dnnl_primitive_attr_create(&attr)) return;
    if (k->acc && (dnnl_post_ops_create(&po) || dnnl_post_ops_append_sum(po, 1.0f) ||
                   dnnl_primitive_attr_set_post_ops(attr, po))) {
        if (po) dnnl_post_ops_destroy(po);
        dnnl_primitive_attr_destroy(attr);
        return;
    }
    if (po) dnnl_post_ops_destroy(po);
    int saved = omp_get_max_threads();
    omp_set_num_threads(threads);
    dnnl_primitive_desc_t pd = NULL;
    dnnl_status_t st = dnnl_primitive_desc_create(&pd, &desc, attr, c->eng, NULL);
    omp_set_num_threads(saved);
    dnnl_primitive_attr_destroy(attr);
    if (st) return;
    const char *name = NULL;
    if (dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &name) || !name ||
        !strncmp(name, "ref", 3)) {
        /* The reference kernel is a plain loop: OpenBLAS is faster. */
        dnnl_primitive_desc_destroy(pd);
        return;
    }
    snprintf(e->impl, sizeof e->impl, "%s", name);
    bool ok = !dnnl_primitive_create(&e->prim, pd);
    for (int i = 0; ok && i < 3; i++)
        ok = !dnnl_memory_create(&e->mem[i], &md[i], c->eng, DNNL_MEMORY_NONE);
    dnnl_primitive_desc_destroy(pd);
    if (!ok) {
        entry_free(e);
        memset(e->mem, 0, sizeof e->mem);
        e->prim = NULL;
    }
}

/* The entry for k: found, or made and added; NULL when the cache is full
 * or memory is short. */
static Entry *lookup(RtMmCache *c, const Key *k, int threads) {
    for (int i = 0; i < c->n; i++)
        if (!memcmp(&c->e[i].key, k, sizeof *k)) return &c->e[i];
    if (c->n == MM_CACHE_MAX) return NULL;
    if (c->n == c->cap) {
        int cap = c->cap ? 2 * c->cap : 8;
        Entry *e = realloc(c->e, (size_t)cap * sizeof *e);
        if (!e) return NULL;
        c->e = e;
        c->cap = cap;
    }
    Entry *e = &c->e[c->n++];
    memset(e, 0, sizeof *e);
    e->key = *k;
    entry_make(c, e, threads);
    return e;
}

/* An operand's dims and strides: a stride 0 (broadcast) batch dimension
 * becomes size 1, and a dimension of size 1 gets a stride oneDNN accepts
 * (its strides must not be negative, and a size-1 dimension's is never
 * used). False when a stride is negative. */
static bool describe(const RtMmOperand *x, int nd, int64_t *dims, int64_t *strides) {
    for (int i = 0; i < nd; i++) {
        dims[i] = x->dims[i];
        strides[i] = x->strides[i];
        if (strides[i] < 0) return false;
        if (strides[i] == 0) dims[i] = 1;
    }
    for (int i = 0; i < nd; i++)
        if (dims[i] == 1) strides[i] = 1;
    return true;
}

bool rt_matmul_dnnl(RtPool *pool, int nd, bool acc, const RtMmOperand ops[3]) {
    if (!pool || nd < 2 || nd > RT_MM_DNNL_MAX_DIMS) return false;
    Key k;
    memset(&k, 0, sizeof k); /* compared bytewise, padding included */
    k.nd = nd;
    k.acc = acc;
    for (int i = 0; i < 3; i++)
        if (!describe(&ops[i], nd, k.dims[i], k.strides[i])) return false;
    /* The destination is written at every index: never broadcast. */
    for (int i = 0; i < nd; i++)
        if (k.dims[2][i] != ops[2].dims[i]) return false;
    int threads = rt_pool_threads(pool);
    RtMmCache **slot = rt_pool_mm_lock(pool, cache_free);
    RtMmCache *c = cache_get(slot);
    Entry *e = c && !c->broken ? lookup(c, &k, threads) : NULL;
    bool done = false;
    if (e && e->prim) {
        dnnl_status_t st = dnnl_success;
        for (int i = 0; i < 3 && !st; i++)
            st = dnnl_memory_set_data_handle(e->mem[i], (void *)ops[i].p);
        dnnl_exec_arg_t args[3] = {
            {DNNL_ARG_SRC, e->mem[0]}, {DNNL_ARG_WEIGHTS, e->mem[1]}, {DNNL_ARG_DST, e->mem[2]}};
        int saved = omp_get_max_threads();
        omp_set_num_threads(threads);
        if (!st) st = dnnl_primitive_execute(e->prim, c->stream, 3, args);
        if (!st) st = dnnl_stream_wait(c->stream);
        omp_set_num_threads(saved);
        /* oneDNN checks the arguments before it runs anything, and they
         * were checked when the primitive was made: a failure here is not
         * expected; the caller's OpenBLAS path computes C then. */
        done = !st;
    }
    rt_pool_mm_unlock(pool);
    return done;
}
