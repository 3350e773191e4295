/* Writing safetensors files: the weights a --quantize build embeds, an
 * ONNX model's initializers, and the made-up weights of
 * `tgc report --accuracy`. */
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

/* The blobs of an ONNX model's initializers (im->nparams of them, pointing
 * into im), for st_write: what tgc import writes and what tgc build embeds.
 * The caller frees the array; NULL when out of memory. */
struct OnnxImport;
StBlob *st_blobs_of_onnx(const struct OnnxImport *im);
#endif
