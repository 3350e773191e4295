/* Writing safetensors files (see st_write.h): the runtime's writer
 * (rt_st_write, runtime/safetensors_write.c), the project's only one, with
 * the driver's blobs and its "tgc CMD: error:" messages. */
#include "driver/st_write.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frontend/onnx/onnx_import.h"

bool st_write(const char *cmd, const char *out, const StBlob *b, int nb) {
    RtStTensorOut *t = calloc((size_t)(nb > 0 ? nb : 0) + 1, sizeof *t);
    if (!t) {
        fprintf(stderr, "tgc %s: error: cannot write '%s': %s\n", cmd, out, strerror(ENOMEM));
        return false;
    }
    for (int i = 0; i < nb; i++) {
        t[i] = (RtStTensorOut){.name = b[i].name, .data = b[i].data, .nbytes = b[i].nbytes};
        t[i].desc.dtype = b[i].dtype;
        t[i].desc.ndim = b[i].ndim;
        for (int d = 0; d < b[i].ndim && d < RT_MAX_DIMS; d++)
            t[i].desc.shape[d] = b[i].shape[d];
    }
    RtError err;
    rt_error_clear(&err);
    RtStatus s = rt_st_write(out, t, (size_t)(nb > 0 ? nb : 0), &err);
    free(t);
    if (s) fprintf(stderr, "tgc %s: error: %s\n", cmd, err.msg);
    return s == TGCRT_OK;
}

StBlob *st_blobs_of_onnx(const OnnxImport *im) {
    StBlob *blobs = calloc((size_t)im->nparams + 1, sizeof *blobs);
    for (int k = 0; blobs && k < im->nparams; k++) {
        const OnnxParam *p = &im->params[k];
        blobs[k] = (StBlob){.name = p->name,
                            .dtype = (RtDType)p->dtype,
                            .ndim = p->ndim,
                            .data = p->data,
                            .nbytes = p->nbytes};
        memcpy(blobs[k].shape, p->shape, sizeof(int64_t) * (size_t)p->ndim);
    }
    return blobs;
}
