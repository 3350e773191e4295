/* NVRTC: CUDA C source to a CUBIN or PTX image, at build time. */
#ifndef TGC_CU_NVRTC_H
#define TGC_CU_NVRTC_H
#include <stdbool.h>
#include <stddef.h>

typedef struct NvrtcImage {
    char *data; /* malloc'd */
    size_t size;
} NvrtcImage;
/* sm: 80 for sm_80; ptx: PTX for compute_<sm> instead of a CUBIN. On
 * failure err holds NVRTC's log. The PTX of the last CUBIN is kept, so
 * asking for sm_N's CUBIN and then compute_N's PTX of the same source runs
 * NVRTC once; with TGC_NVRTC_CACHE=DIR images come from and go to the
 * cache in DIR (cu_nvrtc_cache.h). */
bool cu_nvrtc_compile(const char *src, const char *name, int sm, bool ptx, NvrtcImage *out,
                      char *err, size_t nerr);
/* Drops the kept PTX (the next PTX is compiled afresh). */
void cu_nvrtc_forget(void);
/* How many times this process has run NVRTC's compiler (tests). */
int cu_nvrtc_runs(void);
#endif
