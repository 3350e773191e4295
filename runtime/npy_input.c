/* Loading a graph input from .npy into a caller-owned buffer: the file's
 * dtype and shape must be the declared ones (cli.md, "Compiled
 * executables"); a bf16 input is read from a float32 array and rounded to
 * nearest even, a chunk at a time so no second full-size buffer is needed. */
#include <stdio.h>
#include <string.h>

#include "npy_internal.h"
#include "tgcrt.h"

static RtStatus load(const char *path, const char *input, const RtDesc *declared, void *dst,
                     RtError *err) {
    size_t want;
    char e[RT_DESC_STR_MAX], f[RT_DESC_STR_MAX];
    if (!rt_desc_nbytes(declared, &want))
        return rt_error_set(err, TGCRT_ERR_ARG, "input '%s': invalid declared type %s", input,
                            rt_desc_format(declared, e, sizeof e));
    FILE *fp;
    RtDesc found;
    size_t nbytes;
    RtStatus s = rt_npy_open(path, &fp, &found, &nbytes, err);
    if (s) return s;

    bool bf16 = declared->dtype == RT_BF16;
    RtDesc stored = *declared;
    if (bf16) stored.dtype = RT_F32;
    if (!rt_desc_equal(&stored, &found)) {
        fclose(fp);
        return rt_error_set(err, stored.dtype != found.dtype ? TGCRT_ERR_DTYPE : TGCRT_ERR_SHAPE,
                            "input '%s' (%s): expected %s%s, found %s", input, path,
                            rt_desc_format(declared, e, sizeof e),
                            bf16 ? " as a float32 array" : "", rt_desc_format(&found, f, sizeof f));
    }
    if (!bf16) {
        s = rt_npy_read_data(fp, path, dst, nbytes, err);
        if (!s && found.dtype == RT_BOOL) rt_npy_normalize_bool(dst, nbytes);
    } else {
        float chunk[1024];
        uint16_t *out = dst;
        for (size_t i = 0, n = nbytes / sizeof(float); !s && i < n; i += 1024) {
            size_t m = n - i < 1024 ? n - i : 1024;
            s = rt_npy_read_data(fp, path, chunk, m * sizeof(float), err);
            if (!s) rt_f32_to_bf16_n(chunk, out + i, m);
        }
    }
    fclose(fp);
    return s;
}

RtStatus rt_npy_load_input(const char *path, const char *input, const RtDesc *declared, void *dst,
                           RtError *err) {
    RtStatus s = load(path, input, declared, dst, err);
    /* Every message names the input, not only the file. */
    if (s && err && strncmp(err->msg, "input '", 7) != 0) {
        char msg[RT_ERROR_MSG_MAX];
        snprintf(msg, sizeof msg, "%s", err->msg);
        rt_error_set(err, s, "input '%s': %s", input, msg);
    }
    return s;
}
