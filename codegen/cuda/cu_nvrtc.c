/* NVRTC at build time. Compiled only when the CUDA Toolkit was found
 * (TGC_HAVE_NVRTC); otherwise --target cuda says this tgc lacks it. No
 * fast-math: the kernels must round as PyTorch's do. */
#define _GNU_SOURCE /* dladdr */
#include "codegen/cuda/cu_nvrtc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/codegen.h"

#ifdef TGC_HAVE_NVRTC
#include <dlfcn.h>
#include <nvrtc.h>
#include <sys/stat.h>

#include "codegen/cuda/cu_nvrtc_cache.h"

bool cg_cuda_available(void) {
    return true;
}

/* The PTX that NVRTC made on its way to the last CUBIN. An sm_NN compile
 * returns the same PTX a compute_NN compile of the same program would,
 * byte for byte (tests/cuda/test_nvrtc.c checks it), and a build asks
 * for the highest architecture's CUBIN and then for its PTX: kept, the PTX
 * costs no second NVRTC run (a third of a two-architecture build's NVRTC
 * time). One build at a time: tgc does not compile modules in parallel. */
static struct {
    char *src, *name;
    int sm;
    NvrtcImage ptx;
} kept;
static int runs; /* nvrtcCompileProgram calls, for cu_nvrtc_runs() */

int cu_nvrtc_runs(void) {
    return runs;
}

void cu_nvrtc_forget(void) {
    free(kept.src);
    free(kept.name);
    free(kept.ptx.data);
    memset(&kept, 0, sizeof kept);
}

static bool kept_take(const char *src, const char *name, int sm, NvrtcImage *out) {
    if (!kept.src || kept.sm != sm || strcmp(kept.src, src) || strcmp(kept.name, name))
        return false;
    *out = kept.ptx;
    kept.ptx.data = NULL;
    cu_nvrtc_forget();
    return true;
}

static void keep_ptx(nvrtcProgram prog, const char *src, const char *name, int sm) {
    cu_nvrtc_forget();
    size_t n = 0;
    if (nvrtcGetPTXSize(prog, &n) != NVRTC_SUCCESS || !n) return;
    kept.ptx.data = malloc(n);
    kept.src = strdup(src);
    kept.name = strdup(name);
    if (!kept.ptx.data || !kept.src || !kept.name ||
        nvrtcGetPTX(prog, kept.ptx.data) != NVRTC_SUCCESS) {
        cu_nvrtc_forget();
        return;
    }
    kept.ptx.size = strlen(kept.ptx.data) + 1;
    kept.sm = sm;
}

/* What NVRTC's output depends on besides the options and the source: its
 * version and the library itself (a patch release keeps the version), as
 * "nvrtc MAJOR.MINOR PATH SIZE MTIME". */
static const char *nvrtc_identity(void) {
    static char id[600];
    if (id[0]) return id;
    int major = 0, minor = 0;
    nvrtcVersion(&major, &minor);
    Dl_info info;
    struct stat st;
    memset(&st, 0, sizeof st);
    const char *lib = "?";
    if (dladdr((void *)nvrtcVersion, &info) && info.dli_fname) {
        lib = info.dli_fname;
        stat(lib, &st);
    }
    snprintf(id, sizeof id, "nvrtc %d.%d %.400s %lld %lld", major, minor, lib,
             (long long)st.st_size, (long long)st.st_mtime);
    return id;
}

/* The cache key: everything the image depends on (the architecture
 * option says CUBIN or PTX), the source last. */
static char *cache_key(const char *const *opts, int nopts, const char *name, const char *src,
                       size_t *n) {
    size_t head = 128 + strlen(name) + strlen(nvrtc_identity());
    for (int i = 0; i < nopts; i++)
        head += strlen(opts[i]) + 1;
    size_t nsrc = strlen(src);
    char *k = malloc(head + nsrc + 1);
    if (!k) return NULL;
    int len = snprintf(k, head, "tgc NVRTC image\n%s\noptions:", nvrtc_identity());
    for (int i = 0; i < nopts; i++)
        len += snprintf(k + len, head - (size_t)len, " %s", opts[i]);
    len += snprintf(k + len, head - (size_t)len, "\nname: %s\n", name);
    memcpy(k + len, src, nsrc + 1);
    *n = (size_t)len + nsrc;
    return k;
}

static bool compile(const char *src, const char *name, int sm, bool ptx, const char *const *opts,
                    int nopts, NvrtcImage *out, char *err, size_t nerr) {
    nvrtcProgram prog;
    nvrtcResult r = nvrtcCreateProgram(&prog, src, name, 0, NULL, NULL);
    if (r != NVRTC_SUCCESS) {
        snprintf(err, nerr, "internal error: NVRTC: %s", nvrtcGetErrorString(r));
        return false;
    }
    runs++;
    r = nvrtcCompileProgram(prog, nopts, opts);
    bool ok = r == NVRTC_SUCCESS;
    if (!ok) {
        size_t n = 0;
        nvrtcGetProgramLogSize(prog, &n);
        char *log = malloc(n + 1);
        if (log && nvrtcGetProgramLog(prog, log) == NVRTC_SUCCESS) {
            log[n] = 0;
            snprintf(
                err, nerr,
                "internal error: NVRTC could not compile the generated CUDA C for %s_%d: %.1500s",
                ptx ? "compute" : "sm", sm, log);
        } else {
            snprintf(err, nerr, "internal error: NVRTC: %s", nvrtcGetErrorString(r));
        }
        free(log);
    } else {
        size_t n = 0;
        r = ptx ? nvrtcGetPTXSize(prog, &n) : nvrtcGetCUBINSize(prog, &n);
        out->data = r == NVRTC_SUCCESS ? malloc(n ? n : 1) : NULL;
        if (out->data) r = ptx ? nvrtcGetPTX(prog, out->data) : nvrtcGetCUBIN(prog, out->data);
        ok = out->data && r == NVRTC_SUCCESS;
        if (ok && ptx) n = strlen(out->data) + 1; /* the driver reads PTX up to its NUL */
        out->size = n;
        if (!ok) {
            snprintf(err, nerr, "internal error: NVRTC: cannot get the %s image",
                     ptx ? "PTX" : "CUBIN");
            free(out->data);
            out->data = NULL;
        }
        if (ok && !ptx) keep_ptx(prog, src, name, sm);
    }
    nvrtcDestroyProgram(&prog);
    return ok;
}

bool cu_nvrtc_compile(const char *src, const char *name, int sm, bool ptx, NvrtcImage *out,
                      char *err, size_t nerr) {
    memset(out, 0, sizeof *out);
    char arch[48];
    snprintf(arch, sizeof arch, "--gpu-architecture=%s_%d", ptx ? "compute" : "sm", sm);
    const char *opts[] = {arch, "--std=c++17", "-lineinfo"};
    int nopts = (int)(sizeof opts / sizeof *opts);
    const char *dir = cu_cache_dir();
    size_t nkey = 0;
    char *key = dir ? cache_key(opts, nopts, name, src, &nkey) : NULL;
    bool ok = true;
    if (!(ptx && kept_take(src, name, sm, out))) {
        if (key && cu_cache_get(dir, key, nkey, out)) {
            free(key);
            return true;
        }
        ok = compile(src, name, sm, ptx, opts, nopts, out, err, nerr);
    }
    if (ok && key) cu_cache_put(dir, key, nkey, out);
    free(key);
    return ok;
}
#else
bool cg_cuda_available(void) {
    return false;
}

bool cu_nvrtc_compile(const char *src, const char *name, int sm, bool ptx, NvrtcImage *out,
                      char *err, size_t nerr) {
    (void)src, (void)name, (void)sm, (void)ptx;
    memset(out, 0, sizeof *out);
    snprintf(err, nerr, "error: this tgc was built without NVRTC");
    return false;
}

void cu_nvrtc_forget(void) {}

int cu_nvrtc_runs(void) {
    return 0;
}
#endif
