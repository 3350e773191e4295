/* Choosing the program's image for the GPU and loading it as a module.
 *
 * A CUBIN runs on its own compute capability and on later minor versions
 * of the same major one (sm_80 code runs on sm_86, not on sm_90); PTX is
 * compiled by the driver for any GPU at least as new as its target, at
 * load time (slower start, same code). So the order is: the CUBIN built
 * for exactly this GPU, then a CUBIN of the same major version with a
 * lower minor (newest first), then PTX (newest target first). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_internal.h"

#define LOG_MAX 4096

static void image_name(const RtCudaImage *im, char *buf, size_t cap) {
    snprintf(buf, cap, im->ptx ? "compute_%d PTX" : "sm_%d CUBIN", (int)im->sm);
}

/* One program's images: the module's, or tg_matmul's. */
typedef struct {
    const RtCudaImage *images;
    int nimages;
    const char *owner; /* NULL (the module's) or "tg_matmul's", in messages */
} Images;

/* Candidate images, best first, into order[]; returns how many. */
static int candidates(const Images *cp, int sm, int *order) {
    int n = 0;
    for (int i = 0; i < cp->nimages; i++)
        if (!cp->images[i].ptx && cp->images[i].sm == sm) order[n++] = i;
    for (int pass = 0; pass < 2; pass++) {
        /* pass 0: same-major CUBINs below sm; pass 1: PTX at or below sm;
         * each newest first (selection by repeated maximum: few images). */
        int first = n;
        for (;;) {
            int best = -1;
            for (int i = 0; i < cp->nimages; i++) {
                const RtCudaImage *im = &cp->images[i];
                bool ok = pass == 0 ? !im->ptx && im->sm / 10 == sm / 10 && im->sm < sm
                                    : im->ptx && im->sm <= sm;
                bool taken = false;
                for (int j = first; j < n; j++)
                    taken |= order[j] == i;
                if (ok && !taken && (best < 0 || im->sm > cp->images[best].sm)) best = i;
            }
            if (best < 0) break;
            order[n++] = best;
        }
    }
    return n;
}

/* "sm_80, sm_90 and PTX for compute_90": what the program has. */
static void describe_images(const Images *cp, char *buf, size_t cap) {
    size_t at = 0;
    buf[0] = 0;
    for (int i = 0; i < cp->nimages && at < cap; i++) {
        const RtCudaImage *im = &cp->images[i];
        const char *sep = i == 0 ? "" : i == cp->nimages - 1 ? " and " : ", ";
        int w = snprintf(buf + at, cap - at, im->ptx ? "%sPTX for compute_%d" : "%ssm_%d", sep,
                         (int)im->sm);
        if (w < 0) break;
        at += (size_t)w;
    }
}

static RtStatus no_image(RtCudaCtx *c, const Images *ims, RtError *err) {
    char have[512];
    describe_images(ims, have, sizeof have);
    return rt_error_set(err, TGCRT_ERR_DEVICE,
                        "the program has %s%scode for %s, but GPU %d (%s) is sm_%d: rebuild "
                        "it with --gpu-arch sm_%d",
                        ims->owner ? ims->owner : "", ims->owner ? " " : "", have, c->ordinal,
                        c->name, c->sm, c->sm);
}

/* Loads image i; the JIT's error log (PTX) goes into the message. */
static CUresult load_image(RtCudaCtx *c, const RtCudaImage *im, CUmodule *mod, char *log) {
    int opts[2] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
    void *vals[2] = {log, (void *)(size_t)LOG_MAX};
    log[0] = 0;
    /* The driver reads PTX as a C string: an image without its final NUL
     * is loaded from a terminated copy. */
    const char *data = im->data;
    char *copy = NULL;
    if (im->ptx && (im->size == 0 || data[im->size - 1] != 0)) {
        if (!(copy = malloc(im->size + 1))) return CUDA_ERROR_OUT_OF_MEMORY;
        memcpy(copy, data, im->size);
        copy[im->size] = 0;
        data = copy;
    }
    CUmodule m = NULL;
    CUresult r = c->cu->cuModuleLoadDataEx(&m, data, 2, opts, vals);
    free(copy);
    log[LOG_MAX - 1] = 0;
    if (!r) *mod = m;
    return r;
}

/* Loads the best of ims's images for the GPU into *mod. */
static RtStatus load_images(RtCudaCtx *c, const Images *cp, CUmodule *mod, RtError *err) {
    int order[RT_CUDA_MAX_IMAGES], n;
    if (!(n = candidates(cp, c->sm, order))) return no_image(c, cp, err);
    char log[LOG_MAX], name[64];
    CUresult r = CUDA_SUCCESS;
    int i = 0;
    /* An image the driver rejects as not for this GPU (a CUBIN it cannot
     * run, say) falls through to the next candidate; any other failure is
     * reported as it is. */
    for (; i < n; i++) {
        r = load_image(c, &cp->images[order[i]], mod, log);
        if (r != CUDA_ERROR_NO_BINARY_FOR_GPU && r != CUDA_ERROR_INVALID_IMAGE) break;
    }
    if (r) {
        image_name(&cp->images[order[i < n ? i : n - 1]], name, sizeof name);
        char what[128];
        snprintf(what, sizeof what, "(%s %s image)", cp->owner ? cp->owner : "the", name);
        RtStatus s = rt_cuda_fail(c, err, r, "cuModuleLoadDataEx", what);
        size_t len = err ? strlen(err->msg) : 0;
        if (err && r == CUDA_ERROR_UNSUPPORTED_PTX_VERSION)
            snprintf(err->msg + len, sizeof err->msg - len,
                     ": the NVIDIA driver is older than the CUDA that compiled this program; "
                     "update the driver, or rebuild with --gpu-arch sm_%d",
                     c->sm);
        else if (err && log[0])
            snprintf(err->msg + len, sizeof err->msg - len, ": %s", log);
        return s;
    }
    return TGCRT_OK;
}

RtStatus rt_cuda_matmul_module(RtCudaCtx *c, CUmodule *mod, RtError *err) {
    const RtCudaProgram *cp = c->p->cuda;
    if (!cp->nmm_images) {
        *mod = c->mod;
        return TGCRT_OK;
    }
    Images ims = {cp->mm_images, cp->nmm_images, "tg_matmul's"};
    RtStatus s = c->mm_mod ? TGCRT_OK : load_images(c, &ims, &c->mm_mod, err);
    *mod = c->mm_mod;
    return s;
}

RtStatus rt_cuda_load_module(RtCudaCtx *c, RtError *err) {
    const RtCudaProgram *cp = c->p->cuda;
    Images ims = {cp->images, cp->nimages, NULL};
    RtStatus st = load_images(c, &ims, &c->mod, err);
    if (st) return st;
    CUresult r;
    for (int s = 0; s < cp->nsteps; s++) {
        const RtCudaStep *st = &cp->steps[s];
        /* Launches, and the convolutions' epilogues. */
        if (st->kind == RT_CUDA_MATMUL || !st->kernel) continue;
        r = c->cu->cuModuleGetFunction(&c->fn[s], c->mod, st->kernel);
        if (r == CUDA_ERROR_NOT_FOUND)
            return rt_error_set(err, TGCRT_ERR_INTERNAL,
                                "step %d: the module has no kernel '%s' (a bug in tgc's code "
                                "generator)",
                                s, st->kernel);
        char what[200];
        snprintf(what, sizeof what, "kernel '%s'", st->kernel);
        if (r) return rt_cuda_fail(c, err, r, "cuModuleGetFunction", what);
        /* Above 48 KiB a kernel must opt in to its dynamic shared memory. */
        if (st->smem > 48 * 1024 &&
            (r = c->cu->cuFuncSetAttribute(
                 c->fn[s], CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, (int)st->smem)))
            return rt_cuda_fail(c, err, r, "cuFuncSetAttribute", what);
    }
    return TGCRT_OK;
}
