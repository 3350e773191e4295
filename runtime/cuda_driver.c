/* Loading the CUDA driver API (libcuda.so.1) with dlopen, once per process.
 *
 * This is the runtime's one piece of global state, on purpose: the table
 * below is written once, under pthread_once, and only read afterwards, so
 * contexts on different threads share it without locks. Loading it per
 * context would gain nothing (dlopen returns the same library, which is
 * never unloaded: the driver keeps threads and state that do not survive
 * dlclose while the process runs). */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "cuda_driver.h"

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static CuDriver table;
static bool loaded;   /* every symbol resolved */
static char why[512]; /* when not: the message, written once by load() */

#define SYM(name) RT_DL_SYM(CuDriver, name)
static const RtDlSym symbols[] = {
    SYM(cuGetErrorName),
    SYM(cuGetErrorString),
    SYM(cuInit),
    SYM(cuDriverGetVersion),
    SYM(cuDeviceGetCount),
    SYM(cuDeviceGet),
    SYM(cuDeviceGetName),
    SYM(cuDeviceGetAttribute),
    SYM(cuDevicePrimaryCtxRetain),
    SYM(cuDevicePrimaryCtxRelease_v2),
    SYM(cuCtxPushCurrent_v2),
    SYM(cuCtxPopCurrent_v2),
    SYM(cuModuleLoadDataEx),
    SYM(cuModuleUnload),
    SYM(cuModuleGetFunction),
    SYM(cuFuncSetAttribute),
    SYM(cuStreamCreate),
    SYM(cuStreamDestroy_v2),
    SYM(cuStreamSynchronize),
    SYM(cuMemGetInfo_v2),
    SYM(cuMemAlloc_v2),
    SYM(cuMemFree_v2),
    SYM(cuMemHostAlloc),
    SYM(cuMemFreeHost),
    SYM(cuMemcpyHtoD_v2),
    SYM(cuMemcpyHtoDAsync_v2),
    SYM(cuMemcpyDtoHAsync_v2),
    SYM(cuMemcpyDtoH_v2),
    SYM(cuMemcpyDtoDAsync_v2),
    SYM(cuMemsetD8Async),
    SYM(cuLaunchKernel),
    SYM(cuStreamBeginCapture_v2),
    SYM(cuStreamEndCapture),
    SYM(cuGraphInstantiateWithFlags),
    SYM(cuGraphLaunch),
    SYM(cuGraphExecDestroy),
    SYM(cuGraphDestroy),
};
#undef SYM

static void load(void) {
    const char *lib = "libcuda.so.1";
    void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char *e = dlerror();
        /* glibc's message already starts with the library's name. */
        snprintf(why, sizeof why,
                 "this program was built with --target cuda and runs on an NVIDIA GPU, but the "
                 "CUDA driver could not be loaded (%s%s%s): run it on a machine with an NVIDIA "
                 "driver, or rebuild it with --target cpu",
                 e && !strncmp(e, lib, strlen(lib)) ? "" : lib,
                 e && !strncmp(e, lib, strlen(lib)) ? "" : ": ", e ? e : "unknown error");
        return;
    }
    const char *missing = rt_dl_resolve(h, symbols, sizeof symbols / sizeof *symbols, &table);
    if (missing) {
        snprintf(why, sizeof why,
                 "the CUDA driver (%s) has no function %s: it is older than this program "
                 "needs (CUDA 11.4 or later); update the NVIDIA driver",
                 lib, missing);
        return; /* the library stays loaded: harmless, and dlclose of libcuda is not */
    }
    loaded = true;
}

const char *rt_dl_resolve(void *h, const RtDlSym *syms, size_t n, void *table) {
    for (size_t i = 0; i < n; i++) {
        void *f = dlsym(h, syms[i].name);
        if (!f) return syms[i].name;
        /* POSIX guarantees that a function pointer and void * have the same
         * representation; memcpy avoids an object-to-function cast. */
        memcpy((char *)table + syms[i].offset, &f, sizeof f);
    }
    return NULL;
}

const CuDriver *rt_cuda_driver(RtError *err) {
    pthread_once(&load_once, load);
    if (loaded) return &table;
    rt_error_set(err, TGCRT_ERR_DEVICE, "%s", why);
    return NULL;
}

const char *rt_cuda_result_str(const CuDriver *cu, CUresult r, char *buf, size_t cap) {
    const char *name = NULL, *text = NULL;
    if (cu) {
        cu->cuGetErrorName(r, &name);
        cu->cuGetErrorString(r, &text);
    }
    if (name && text)
        snprintf(buf, cap, "%s (%s)", name, text);
    else
        snprintf(buf, cap, "CUDA error %d", r);
    return buf;
}
