/* Writing safetensors files: the weights a --quantize build embeds, and
 * the made-up weights of `tgc report --accuracy`. */
#ifndef TGC_ST_WRITE_H
#define TGC_ST_WRITE_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tgcrt.h"

/* One tensor: data is nbytes of it in C order; owned, when set, is what
 * the writer's caller frees afterwards. */
typedef struct StBlob {
    const char *name;
    RtDType dtype;
    int ndim;
    int64_t shape[RT_MAX_DIMS];
    const void *data;
    size_t nbytes;
    void *owned;
} StBlob;

/* Writes the n tensors, laid out in order, to path; false with a message
 * (prefixed "tgc CMD:") when the file cannot be written. */
bool st_write(const char *cmd, const char *path, const StBlob *b, int n);
#endif
