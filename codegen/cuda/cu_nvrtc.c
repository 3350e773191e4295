/* NVRTC at build time. Compiled only when the CUDA Toolkit was found
 * (TGC_HAVE_NVRTC); otherwise --target cuda says this tgc lacks it. No
 * fast-math: the kernels must round as PyTorch's do. */
#include "codegen/cuda/cu_nvrtc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/codegen.h"

#ifdef TGC_HAVE_NVRTC
#include <nvrtc.h>

bool cg_cuda_available(void) {
    return true;
}

bool cu_nvrtc_compile(const char *src, const char *name, int sm, bool ptx, NvrtcImage *out,
                      char *err, size_t nerr) {
    memset(out, 0, sizeof *out);
    nvrtcProgram prog;
    nvrtcResult r = nvrtcCreateProgram(&prog, src, name, 0, NULL, NULL);
    if (r != NVRTC_SUCCESS) {
        snprintf(err, nerr, "internal error: NVRTC: %s", nvrtcGetErrorString(r));
        return false;
    }
    char arch[48];
    snprintf(arch, sizeof arch, "--gpu-architecture=%s_%d", ptx ? "compute" : "sm", sm);
    const char *opts[] = {arch, "--std=c++17", "-lineinfo"};
    r = nvrtcCompileProgram(prog, 3, opts);
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
    }
    nvrtcDestroyProgram(&prog);
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
#endif
