/* The steps of a CUDA program: checked before anything is loaded (the
 * descriptor is generated code, but a context must not crash or write
 * outside a buffer on a broken one), and every matrix product planned
 * once at creation: cuBLAS where the plan allows it and the library loads,
 * else the module's tg_matmul. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_internal.h"
#include "rt_index_error.h"
#include "rt_internal.h"

void rt_cuda_slot_sizes(const RtProgram *p, size_t *bytes) {
    const RtTensorInfo *lists[3] = {p->inputs, p->params, p->outputs};
    int counts[3] = {p->ninputs, p->nparams, p->noutputs}, at = 1;
    bytes[0] = p->arena_bytes;
    for (int l = 0; l < 3; l++)
        for (int i = 0; i < counts[l]; i++) {
            RtDesc d = lists[l][i].desc;
            d.dtype = lists[l][i].storage;
            bytes[at] = 0;
            rt_desc_nbytes(&d, &bytes[at++]); /* checked by program.c */
        }
    bytes[at] = 8 * RT_INDEX_ERROR_WORDS; /* the error cell */
}

/* ---- checking ---- */

/* The lowest and highest element offsets an operand addresses (every
 * size >= 1); false on overflow. */
static bool extent(int n, const int64_t *size, const int64_t *stride, int64_t *lo, int64_t *hi) {
    *lo = *hi = 0;
    for (int i = 0; i < n; i++) {
        int64_t s = stride[i], k = size[i] - 1;
        if (k == 0 || s == 0) continue;
        if (s > INT64_MAX / k || s < -(INT64_MAX / k)) return false;
        int64_t v = s * k;
        if (v > 0 && *hi > INT64_MAX - v) return false;
        if (v < 0 && *lo < -INT64_MAX - v) return false;
        *(v > 0 ? hi : lo) += v;
    }
    return true;
}

typedef struct Check {
    const RtProgram *p;
    const size_t *bytes;
    int nbufs, step;
    RtError *err;
} Check;

static RtStatus bad(const Check *k, const char *what) {
    return rt_error_set(k->err, TGCRT_ERR_ARG, "program '%s': CUDA step %d: %s",
                        k->p->name ? k->p->name : "?", k->step, what);
}

/* Operand `which` (dims rows x cols, then the batch) lies within its buffer. */
static RtStatus check_operand(const Check *k, const char *which, RtCudaRef r, const RtMatmulDesc *d,
                              int64_t rows, int64_t cols, int64_t rs, int64_t cs,
                              const int64_t *bs) {
    char msg[160];
    int64_t size[2 + RT_MATMUL_MAX_BATCH] = {rows, cols},
                     stride[2 + RT_MATMUL_MAX_BATCH] = {rs, cs};
    for (int i = 0; i < d->nbatch; i++)
        size[2 + i] = d->batch[i], stride[2 + i] = bs[i];
    int64_t es = (int64_t)rt_dtype_size((RtDType)d->dtype), lo, hi;
    if (r.slot < 0 || r.slot >= k->nbufs - 1) {
        snprintf(msg, sizeof msg, "operand %s: slot %d is not a buffer", which, (int)r.slot);
        return bad(k, msg);
    }
    int64_t bytes = (int64_t)(k->bytes[r.slot] > INT64_MAX / 2 ? INT64_MAX / 2 : k->bytes[r.slot]);
    if (r.offset < 0 || r.offset % es || r.offset > bytes) {
        snprintf(msg, sizeof msg, "operand %s: offset %lld is not an element of slot %d", which,
                 (long long)r.offset, (int)r.slot);
        return bad(k, msg);
    }
    if (!extent(2 + (int)d->nbatch, size, stride, &lo, &hi) || lo < -(INT64_MAX / 16) ||
        hi > INT64_MAX / 16 || r.offset + lo * es < 0 || r.offset + (hi + 1) * es > bytes) {
        snprintf(msg, sizeof msg, "operand %s reaches outside slot %d (%lld bytes)", which,
                 (int)r.slot, (long long)bytes);
        return bad(k, msg);
    }
    return TGCRT_OK;
}

/* An empty product: nothing to compute, and no operand to check. */
static bool empty(const RtMatmulDesc *d) {
    bool e = d->m == 0 || d->n == 0;
    for (int i = 0; i < d->nbatch; i++)
        e |= d->batch[i] == 0;
    return e;
}

static RtStatus check_matmul(const Check *k, const RtCudaStep *st) {
    const RtMatmulDesc *d = st->mm;
    if (!d || d->dtype < 0 || d->dtype >= RT_DTYPE_COUNT || d->m < 0 || d->n < 0 || d->k < 0 ||
        d->nbatch < 0 || d->nbatch > RT_MATMUL_MAX_BATCH)
        return bad(k, "malformed matrix product");
    int64_t entries = 1;
    for (int i = 0; i < d->nbatch; i++) {
        if (d->batch[i] < 0) return bad(k, "malformed matrix product");
        if (d->batch[i] && entries > INT64_MAX / d->batch[i])
            return bad(k, "matrix product with too many batch entries");
        entries *= d->batch[i];
    }
    if ((d->n + RT_CUDA_MM_TILE - 1) / RT_CUDA_MM_TILE > INT_MAX)
        return bad(k, "matrix product too wide for the grid");
    if (empty(d)) return TGCRT_OK;
    RtStatus s = check_operand(k, "c", st->c, d, d->m, d->n, d->c_rs, d->c_cs, d->c_bs);
    if (!s && d->k) s = check_operand(k, "a", st->a, d, d->m, d->k, d->a_rs, d->a_cs, d->a_bs);
    if (!s && d->k) s = check_operand(k, "b", st->b, d, d->k, d->n, d->b_rs, d->b_cs, d->b_bs);
    return s;
}

RtStatus rt_cuda_check_program(const RtProgram *p, RtError *err) {
    const RtCudaProgram *cp = p->cuda;
    const char *name = p->name ? p->name : "?";
    if (!cp || cp->nimages < 1 || cp->nimages > RT_CUDA_MAX_IMAGES || !cp->images ||
        cp->nsteps < 0 || (cp->nsteps && !cp->steps) || cp->nerror_names < 0 ||
        (cp->nerror_names && !cp->error_names))
        return rt_error_set(err, TGCRT_ERR_ARG, "program '%s': malformed CUDA descriptor", name);
    if (cp->nmm_images < 0 || cp->nmm_images > RT_CUDA_MAX_IMAGES ||
        (cp->nmm_images && !cp->mm_images))
        return rt_error_set(err, TGCRT_ERR_ARG, "program '%s': malformed CUDA descriptor", name);
    for (int i = 0; i < cp->nimages; i++)
        if (!cp->images[i].data || !cp->images[i].size || cp->images[i].sm <= 0)
            return rt_error_set(err, TGCRT_ERR_ARG, "program '%s': CUDA image %d is malformed",
                                name, i);
    for (int i = 0; i < cp->nmm_images; i++)
        if (!cp->mm_images[i].data || !cp->mm_images[i].size || cp->mm_images[i].sm <= 0)
            return rt_error_set(err, TGCRT_ERR_ARG,
                                "program '%s': tg_matmul's CUDA image %d is malformed", name, i);
    size_t nbufs = 2 + (size_t)p->ninputs + (size_t)p->nparams + (size_t)p->noutputs;
    size_t *bytes = calloc(nbufs, sizeof *bytes);
    if (!bytes) return rt_error_set(err, TGCRT_ERR_NOMEM, "out of memory creating a context");
    rt_cuda_slot_sizes(p, bytes);
    Check k = {p, bytes, (int)nbufs, 0, err};
    RtStatus s = TGCRT_OK;
    for (int i = 0; !s && i < cp->nsteps; i++) {
        const RtCudaStep *st = &cp->steps[i];
        k.step = i;
        if (st->kind == RT_CUDA_LAUNCH) {
            if (!st->kernel || !*st->kernel || st->block < 1 || st->block > 1024)
                s = bad(&k, "malformed kernel launch");
        } else if (st->kind == RT_CUDA_MATMUL) {
            s = check_matmul(&k, st);
        } else if (st->kind == RT_CUDA_CONV) {
            const char *why = rt_cuda_conv_check(st->conv, bytes, (int)nbufs - 1);
            if (why)
                s = bad(&k, why);
            else if (st->kernel && (!*st->kernel || st->block < 1 || st->block > 1024))
                s = bad(&k, "malformed convolution epilogue launch");
        } else {
            s = bad(&k, "unknown step kind");
        }
    }
    free(bytes);
    return s;
}

/* ---- planning ---- */

/* cuBLAS for this context, on its stream; when it cannot be loaded or set
 * up, one warning line and every product runs on tg_matmul. */
static void open_blas(RtCudaCtx *c) {
    char why[512];
    cublasHandle_t h = NULL;
    cublasStatus_t s = 0;
    if (!rt_cuda_blas_load(&c->blas, why, sizeof why)) goto fail;
    if ((s = c->blas.cublasCreate_v2(&h))) {
        h = NULL;
        snprintf(why, sizeof why, "%s: cublasCreate_v2 failed (status %d)", c->blas.soname, s);
        goto fail;
    }
    if ((s = c->blas.cublasSetStream_v2(h, c->stream))) {
        snprintf(why, sizeof why, "%s: cublasSetStream_v2 failed (status %d)", c->blas.soname, s);
        goto fail;
    }
    /* f16/bf16 products with f32 accumulation must round once, as on the
     * CPU: no reduced-precision split-k reductions in the output type.
     * (TF32 stays off: the default math mode, as torch's default.) */
    if (c->blas.cublasSetMathMode(h, CUBLAS_DEFAULT_MATH |
                                         CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION))
        c->blas.cublasSetMathMode(h, CUBLAS_DEFAULT_MATH);
    /* A workspace of our own (cuBLAS's recommended size: 32 MiB on sm_90
     * and newer, 4 MiB before), so that capturing a graph allocates
     * nothing. Without one cuBLAS manages its own: slower, never wrong. */
    size_t ws = c->sm >= 90 ? 32u << 20 : 4u << 20;
    if (c->blas.cublasSetWorkspace_v2 && !c->cu->cuMemAlloc_v2(&c->workspace, ws) &&
        c->blas.cublasSetWorkspace_v2(h, (void *)(uintptr_t)c->workspace, ws)) {
        c->cu->cuMemFree_v2(c->workspace);
        c->workspace = 0;
    }
    c->blas_h = h;
    return;
fail:
    if (h) c->blas.cublasDestroy_v2(h);
    fprintf(stderr,
            "tgcrt: warning: cuBLAS is not used (%s): matrix products run on the built-in "
            "kernel, which is slower\n",
            why);
}

RtStatus rt_cuda_plan_steps(RtCudaCtx *c, RtError *err) {
    const RtCudaProgram *cp = c->p->cuda;
    bool want_blas = false, need_mm = false;
    for (int s = 0; s < cp->nsteps; s++) {
        const RtMatmulDesc *d = cp->steps[s].mm;
        RtCudaMatmul *m = &c->mm[s];
        if (cp->steps[s].kind != RT_CUDA_MATMUL || (m->skip = empty(d))) continue;
        /* cuBLAS has bf16 products from sm_80 (Ampere) on. */
        m->blas = rt_cuda_gemm_plan(d, &m->plan) && !(d->dtype == RT_BF16 && c->sm < 80);
        want_blas |= m->blas;
    }
    /* TGC_CUDA_NO_CUBLAS=1: every product on tg_matmul (to compare the two,
     * or to test without cuBLAS). */
    const char *no = getenv("TGC_CUDA_NO_CUBLAS");
    if (want_blas && !(no && *no && strcmp(no, "0"))) open_blas(c);
    for (int s = 0; s < cp->nsteps; s++) {
        const RtMatmulDesc *d = cp->steps[s].mm;
        RtCudaMatmul *m = &c->mm[s];
        if (cp->steps[s].kind != RT_CUDA_MATMUL || m->skip) continue;
        m->blas &= c->blas_h != NULL;
        if (m->blas) continue;
        int64_t entries = 1, rows = (d->m + RT_CUDA_MM_TILE - 1) / RT_CUDA_MM_TILE;
        for (int i = 0; i < d->nbatch; i++)
            entries *= d->batch[i];
        m->grid[0] = (unsigned)((d->n + RT_CUDA_MM_TILE - 1) / RT_CUDA_MM_TILE);
        m->grid[1] = rows < RT_CUDA_GRID_YZ_MAX ? (unsigned)rows : RT_CUDA_GRID_YZ_MAX;
        m->grid[2] = entries < RT_CUDA_GRID_YZ_MAX ? (unsigned)entries : RT_CUDA_GRID_YZ_MAX;
        need_mm = true;
    }
    if (!need_mm) return TGCRT_OK;
    CUfunction f = NULL;
    CUmodule mod;
    RtStatus st = rt_cuda_matmul_module(c, &mod, err);
    if (st) return st;
    CUresult r = c->cu->cuModuleGetFunction(&f, mod, "tg_matmul");
    if (r == CUDA_ERROR_NOT_FOUND)
        return rt_error_set(err, TGCRT_ERR_INTERNAL,
                            "the module has no kernel 'tg_matmul' (a bug in tgc's code "
                            "generator)");
    if (r) return rt_cuda_fail(c, err, r, "cuModuleGetFunction", "tg_matmul");
    for (int s = 0; s < cp->nsteps; s++)
        if (cp->steps[s].kind == RT_CUDA_MATMUL && !c->mm[s].skip && !c->mm[s].blas) c->fn[s] = f;
    return TGCRT_OK;
}
