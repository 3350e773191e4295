/* The fake libcuda.so.1 (fake_cuda.c: device memory is host memory,
 * kernels are host functions) as the tests that run CUDA contexts on it see
 * it: its control functions, looked up once it is loaded. */
#ifndef FAKE_CUDA_H
#define FAKE_CUDA_H
#include <dlfcn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

typedef unsigned long long CUdeviceptr;
typedef void (*FakeKernel)(void **params, unsigned grid[3], unsigned block[3]);

static void (*fake_config)(int, int, size_t);
static void (*fake_fail)(const char *, int, int);
static void (*fake_kernel)(const char *, FakeKernel, int, const size_t *);
static long (*fake_alive)(void);
static const char *(*fake_loaded)(void);
static int (*fake_ordinal)(void), (*fake_captures)(void), (*fake_launches)(void);

/* Loads the fake and its control functions, and keeps cuBLAS out
 * (TGC_CUDA_NO_CUBLAS=1: the real one cannot run on a fake driver). False,
 * said so, when the libcuda.so.1 found is not the fake. */
static inline bool fake_cuda_load(void) {
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h || !dlsym(h, "fake_config")) {
        printf("FAIL: run with LD_LIBRARY_PATH set to the fake libcuda.so.1's directory\n");
        return false;
    }
#define FAKE_GET(name) *(void **)&name = dlsym(h, #name)
    FAKE_GET(fake_config);
    FAKE_GET(fake_fail);
    FAKE_GET(fake_kernel);
    FAKE_GET(fake_alive);
    FAKE_GET(fake_loaded);
    FAKE_GET(fake_ordinal);
    FAKE_GET(fake_captures);
    FAKE_GET(fake_launches);
#undef FAKE_GET
    setenv("TGC_CUDA_NO_CUBLAS", "1", 1);
    return true;
}
#endif
