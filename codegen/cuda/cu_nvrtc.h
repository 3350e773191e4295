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
 * failure err holds NVRTC's log. */
bool cu_nvrtc_compile(const char *src, const char *name, int sm, bool ptx, NvrtcImage *out,
                      char *err, size_t nerr);
#endif
