/* A fake CUDA driver (built as libcuda.so.1 in a directory of its own) for
 * testing the runtime's CUDA contexts on a machine without a GPU: device
 * memory is host memory, streams run every operation at once, kernels are
 * host functions the test registers by name, and graphs record launches
 * (with their parameters copied, as the driver copies them) to replay.
 * It counts what is alive (allocations, pinned buffers, streams, modules,
 * graphs, context references) so the test can check that a context frees
 * everything, and can fail the n-th call of a chosen function to test
 * every error path. Control functions are prefixed fake_; the test finds
 * them with dlsym. Only what the runtime uses is implemented. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef int CUresult;
typedef unsigned long long CUdeviceptr;
typedef void (*FakeKernel)(void **params, unsigned grid[3], unsigned block[3]);

#define MAX_KERNELS 16
#define MAX_PARAMS 8
#define MAX_RECORDED 64

typedef struct Kernel {
    char name[64];
    FakeKernel fn;
    int nparams;
    size_t sizes[MAX_PARAMS];
} Kernel;

typedef struct Launch {
    Kernel *k;
    unsigned grid[3], block[3];
    unsigned char params[MAX_PARAMS][512];
} Launch;

typedef struct Graph {
    int n;
    Launch l[MAX_RECORDED];
} Graph;

/* The fake's state: the test is single-threaded against it. */
static struct {
    int ndev, sm, ordinal;
    char name[64];
    size_t total, used;
    Kernel kernels[MAX_KERNELS];
    int nkernels;
    char loaded[64]; /* the image last loaded (a copy: PTX may be a temporary) */
    const char *fail_name;
    int fail_nth, fail_result, calls;
    long allocs, pinned, streams, modules, graphs, execs, retains, pushes;
    int captures, capturing, launches;
    Graph *rec;
} F = {.ndev = 1, .sm = 90, .name = "Fake GPU", .total = 1 << 30};

/* Whether this call of `name` is the one to fail. */
static CUresult fail(const char *name) {
    if (!F.fail_name || strcmp(F.fail_name, name)) return 0;
    return ++F.calls == F.fail_nth ? F.fail_result : 0;
}

#define FAIL(name)                                                                                 \
    do {                                                                                           \
        CUresult r_ = fail(name);                                                                  \
        if (r_) return r_;                                                                         \
    } while (0)

/* ---- control ---- */

void fake_config(int ndev, int sm, size_t total) {
    F.ndev = ndev, F.sm = sm, F.total = total;
}
void fake_fail(const char *name, int nth, int result) {
    F.fail_name = name, F.fail_nth = nth, F.fail_result = result, F.calls = 0;
}
void fake_kernel(const char *name, FakeKernel fn, int nparams, const size_t *sizes) {
    Kernel *k = &F.kernels[F.nkernels++];
    strncpy(k->name, name, sizeof k->name - 1);
    k->fn = fn;
    k->nparams = nparams;
    memcpy(k->sizes, sizes, (size_t)nparams * sizeof *sizes);
}
/* What is alive, summed: 0 when everything was released. */
long fake_alive(void) {
    return F.allocs + F.pinned + F.streams + F.modules + F.graphs + F.execs + F.retains + F.pushes;
}
const char *fake_loaded(void) {
    return F.loaded;
}
int fake_ordinal(void) {
    return F.ordinal;
}
int fake_captures(void) {
    return F.captures;
}
int fake_launches(void) {
    return F.launches;
}

/* ---- the driver API ---- */

CUresult cuGetErrorName(CUresult r, const char **s) {
    *s = r == 2     ? "CUDA_ERROR_OUT_OF_MEMORY"
         : r == 200 ? "CUDA_ERROR_INVALID_IMAGE"
         : r == 500 ? "CUDA_ERROR_NOT_FOUND"
         : r == 719 ? "CUDA_ERROR_LAUNCH_FAILED"
                    : "CUDA_ERROR_UNKNOWN";
    return 0;
}
CUresult cuGetErrorString(CUresult r, const char **s) {
    *s = r == 2 ? "out of memory" : "fake error";
    return 0;
}
CUresult cuInit(unsigned flags) {
    FAIL("cuInit");
    return flags ? 1 : 0;
}
CUresult cuDriverGetVersion(int *v) {
    *v = 13000;
    return 0;
}
CUresult cuDeviceGetCount(int *n) {
    *n = F.ndev;
    return 0;
}
CUresult cuDeviceGet(int *d, int ordinal) {
    if (ordinal < 0 || ordinal >= F.ndev) return 101; /* CUDA_ERROR_INVALID_DEVICE */
    *d = ordinal;
    F.ordinal = ordinal;
    return 0;
}
CUresult cuDeviceGetName(char *name, int len, int d) {
    (void)d;
    strncpy(name, F.name, (size_t)len);
    return 0;
}
CUresult cuDeviceGetAttribute(int *v, int attr, int d) {
    (void)d;
    *v = attr == 75 ? F.sm / 10 : attr == 76 ? F.sm % 10 : 0;
    return 0;
}
CUresult cuDevicePrimaryCtxRetain(void **ctx, int d) {
    FAIL("cuDevicePrimaryCtxRetain");
    *ctx = (void *)(uintptr_t)(0x1000 + d);
    F.retains++;
    return 0;
}
CUresult cuDevicePrimaryCtxRelease_v2(int d) {
    (void)d;
    F.retains--;
    return 0;
}
CUresult cuCtxPushCurrent_v2(void *ctx) {
    (void)ctx;
    F.pushes++;
    return 0;
}
CUresult cuCtxPopCurrent_v2(void **ctx) {
    *ctx = NULL;
    F.pushes--;
    return 0;
}
CUresult cuModuleLoadDataEx(void **m, const void *image, unsigned n, int *opts, void **vals) {
    (void)n, (void)opts, (void)vals;
    FAIL("cuModuleLoadDataEx");
    if (strncmp(image, "FAKE", 4)) return 200; /* CUDA_ERROR_INVALID_IMAGE */
    strncpy(F.loaded, image, sizeof F.loaded - 1);
    *m = (void *)0x2000;
    F.modules++;
    return 0;
}
CUresult cuModuleUnload(void *m) {
    (void)m;
    F.modules--;
    return 0;
}
CUresult cuModuleGetFunction(void **f, void *m, const char *name) {
    (void)m;
    FAIL("cuModuleGetFunction");
    for (int i = 0; i < F.nkernels; i++)
        if (!strcmp(F.kernels[i].name, name)) {
            *f = &F.kernels[i];
            return 0;
        }
    return 500; /* CUDA_ERROR_NOT_FOUND */
}
CUresult cuFuncSetAttribute(void *f, int attr, int v) {
    (void)f, (void)attr, (void)v;
    return 0;
}
CUresult cuStreamCreate(void **s, unsigned flags) {
    FAIL("cuStreamCreate");
    if (flags != 1) return 1; /* the runtime asks for CU_STREAM_NON_BLOCKING */
    *s = (void *)0x3000;
    F.streams++;
    return 0;
}
CUresult cuStreamDestroy_v2(void *s) {
    (void)s;
    F.streams--;
    return 0;
}
CUresult cuStreamSynchronize(void *s) {
    (void)s;
    FAIL("cuStreamSynchronize");
    return 0;
}
CUresult cuMemGetInfo_v2(size_t *fr, size_t *total) {
    *fr = F.total - F.used, *total = F.total;
    return 0;
}
CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t n) {
    FAIL("cuMemAlloc_v2");
    if (n == 0) return 1; /* CUDA_ERROR_INVALID_VALUE, as the driver says */
    if (n > F.total - F.used) return 2;
    /* The size in front, for cuMemFree and the free-memory figure. */
    size_t *b = malloc(n + 16);
    if (!b) return 2;
    b[0] = n;
    F.used += n;
    F.allocs++;
    *p = (CUdeviceptr)(uintptr_t)(b + 2);
    return 0;
}
CUresult cuMemFree_v2(CUdeviceptr p) {
    size_t *b = (size_t *)(uintptr_t)p - 2;
    F.used -= b[0];
    F.allocs--;
    free(b);
    return 0;
}
CUresult cuMemHostAlloc(void **p, size_t n, unsigned flags) {
    (void)flags;
    FAIL("cuMemHostAlloc");
    if (n == 0) return 1;
    *p = malloc(n);
    F.pinned++;
    return 0;
}
CUresult cuMemFreeHost(void *p) {
    free(p);
    F.pinned--;
    return 0;
}
CUresult cuMemcpyHtoD_v2(CUdeviceptr d, const void *s, size_t n) {
    CUresult r = fail("cuMemcpyHtoD_v2");
    if (!r) memcpy((void *)(uintptr_t)d, s, n);
    return r;
}
CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr d, const void *s, size_t n, void *st) {
    (void)st;
    if (F.capturing) return 900; /* the runtime copies outside the graph */
    memcpy((void *)(uintptr_t)d, s, n);
    return 0;
}
CUresult cuMemcpyDtoHAsync_v2(void *d, CUdeviceptr s, size_t n, void *st) {
    (void)st;
    if (F.capturing) return 900;
    memcpy(d, (void *)(uintptr_t)s, n);
    return 0;
}
CUresult cuMemcpyDtoH_v2(void *d, CUdeviceptr s, size_t n) {
    CUresult r = fail("cuMemcpyDtoH_v2");
    if (!r) memcpy(d, (void *)(uintptr_t)s, n);
    return r;
}

CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr d, CUdeviceptr s, size_t n, void *st) {
    (void)st;
    if (F.capturing) return 900;
    CUresult r = fail("cuMemcpyDtoDAsync_v2");
    if (!r) memmove((void *)(uintptr_t)d, (void *)(uintptr_t)s, n);
    return r;
}

CUresult cuMemsetD8Async(CUdeviceptr d, unsigned char v, size_t n, void *st) {
    (void)st;
    if (F.capturing) return 900;
    memset((void *)(uintptr_t)d, v, n);
    return 0;
}
static void run_launch(Launch *l) {
    void *params[MAX_PARAMS];
    for (int i = 0; i < l->k->nparams; i++)
        params[i] = l->params[i];
    F.launches++;
    l->k->fn(params, l->grid, l->block);
}
CUresult cuLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                        unsigned bz, unsigned smem, void *st, void **params, void **extra) {
    (void)smem, (void)st;
    FAIL("cuLaunchKernel");
    Kernel *k = f;
    if (!k || extra || !gx || !gy || !gz || !bx || !by || !bz || bx * by * bz > 1024) return 1;
    Launch l = {k, {gx, gy, gz}, {bx, by, bz}, {{0}}};
    for (int i = 0; i < k->nparams; i++) /* copied now, as the driver does */
        memcpy(l.params[i], params[i], k->sizes[i]);
    if (F.capturing) {
        if (F.rec->n == MAX_RECORDED) return 1;
        F.rec->l[F.rec->n++] = l;
        return 0;
    }
    run_launch(&l);
    return 0;
}
CUresult cuStreamBeginCapture_v2(void *st, int mode) {
    (void)st;
    FAIL("cuStreamBeginCapture_v2");
    if (F.capturing || mode != 2) return 1;
    F.rec = calloc(1, sizeof *F.rec);
    F.capturing = 1;
    F.captures++;
    return 0;
}
CUresult cuStreamEndCapture(void *st, void **g) {
    (void)st;
    F.capturing = 0;
    CUresult r = fail("cuStreamEndCapture");
    if (r) {
        free(F.rec);
        *g = NULL;
        return r;
    }
    *g = F.rec;
    F.graphs++;
    return 0;
}
CUresult cuGraphInstantiateWithFlags(void **e, void *g, unsigned long long flags) {
    FAIL("cuGraphInstantiateWithFlags");
    if (flags) return 1;
    Graph *x = malloc(sizeof *x);
    memcpy(x, g, sizeof *x);
    *e = x;
    F.execs++;
    return 0;
}
CUresult cuGraphLaunch(void *e, void *st) {
    (void)st;
    FAIL("cuGraphLaunch");
    Graph *x = e;
    for (int i = 0; i < x->n; i++)
        run_launch(&x->l[i]);
    return 0;
}
CUresult cuGraphExecDestroy(void *e) {
    free(e);
    F.execs--;
    return 0;
}
CUresult cuGraphDestroy(void *g) {
    free(g);
    F.graphs--;
    return 0;
}
