/* Writing safetensors files (see st_write.h): a JSON header through cJSON,
 * padded with spaces to 8 bytes as the format allows, then the data. */
#include "driver/st_write.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rt_atomic.h"

static const char *st_dtype(RtDType t) {
    static const char *names[RT_DTYPE_COUNT] = {"BOOL", "U8",  "I8",   "I16", "I32",
                                                "I64",  "F16", "BF16", "F32", "F64"};
    return t >= 0 && t < RT_DTYPE_COUNT ? names[t] : "?";
}

bool st_write(const char *cmd, const char *out, const StBlob *b, int nb) {
    cJSON *h = cJSON_CreateObject();
    cJSON *meta = cJSON_AddObjectToObject(h, "__metadata__");
    cJSON_AddStringToObject(meta, "producer", "tgc");
    size_t off = 0;
    for (int i = 0; i < nb; i++) {
        cJSON *e = cJSON_AddObjectToObject(h, b[i].name);
        cJSON_AddStringToObject(e, "dtype", st_dtype(b[i].dtype));
        cJSON *sh = cJSON_AddArrayToObject(e, "shape");
        for (int d = 0; d < b[i].ndim; d++)
            cJSON_AddItemToArray(sh, cJSON_CreateNumber((double)b[i].shape[d]));
        cJSON *o = cJSON_AddArrayToObject(e, "data_offsets");
        cJSON_AddItemToArray(o, cJSON_CreateNumber((double)off));
        cJSON_AddItemToArray(o, cJSON_CreateNumber((double)(off + b[i].nbytes)));
        off += b[i].nbytes;
    }
    char *text = cJSON_PrintUnformatted(h);
    cJSON_Delete(h);
    /* Whole or not at all (rt_atomic.h): a reader of the file never sees
     * half of it, and a failed write leaves an older file as it was. */
    RtAtomicFile af;
    rt_afile_init(&af);
    int err = text ? rt_afile_begin(&af, out) : ENOMEM;
    FILE *f = err ? NULL : rt_afile_stream(&af);
    if (!err && !f) err = errno ? errno : ENOMEM;
    if (f) {
        size_t len = strlen(text), padded = (len + 7) / 8 * 8;
        uint8_t hdr[8];
        for (int i = 0; i < 8; i++)
            hdr[i] = (uint8_t)((uint64_t)padded >> (8 * i));
        bool ok = fwrite(hdr, 1, 8, f) == 8 && fwrite(text, 1, len, f) == len;
        for (size_t i = len; ok && i < padded; i++)
            ok = fputc(' ', f) != EOF;
        for (int i = 0; ok && i < nb; i++)
            ok = fwrite(b[i].data, 1, b[i].nbytes, f) == b[i].nbytes;
        err = ok ? rt_afile_commit(&af, 0666) : errno ? errno : EIO;
    }
    if (err) {
        rt_afile_abort(&af);
        fprintf(stderr, "tgc %s: error: cannot write '%s': %s\n", cmd, out, strerror(err));
    }
    free(text);
    return !err;
}
