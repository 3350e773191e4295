/* Writing safetensors files (tgcrt.h, rt_st_write): the one writer of the
 * project. The runtime's training programs save params with it, and the
 * compiler's driver (driver/st_write.c) writes quantized, imported and
 * made-up weights through it.
 *
 * The header is built with cJSON (names escaped as JSON needs), padded with
 * spaces to a multiple of 8 bytes as the format allows so that the data
 * section starts 8-byte aligned, and followed by the tensors in the order
 * given, which therefore tile the data section as rt_st_open requires. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "support/atomic_file.h"
#include "rt_internal.h"

static const char *st_dtype(RtDType t) {
    static const char *names[RT_DTYPE_COUNT] = {"BOOL", "U8",  "I8",  "I16", "I32", "I64", "F16",
                                                "BF16", "F32", "F64", "U16", "U32", "U64"};
    return t >= 0 && t < RT_DTYPE_COUNT ? names[t] : NULL;
}

static RtStatus check(const char *path, const RtStTensorOut *t, size_t i, RtError *err) {
    size_t nb;
    if (!t->name) return rt_error_set(err, TGCRT_ERR_ARG, "%s: tensor %zu has no name", path, i);
    if (!st_dtype(t->desc.dtype) || t->desc.ndim < 0 || t->desc.ndim > RT_MAX_DIMS ||
        !rt_desc_nbytes(&t->desc, &nb) || nb != t->nbytes || (nb && !t->data))
        return rt_error_set(err, TGCRT_ERR_ARG,
                            "%s: tensor '%s': invalid type, or data that is not its size", path,
                            t->name);
    return TGCRT_OK;
}

static int by_name(const void *a, const void *b) {
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* A name twice (or "__metadata__") would make a file readers refuse. */
static RtStatus check_names(const char *path, const RtStTensorOut *t, size_t n, RtError *err) {
    const char **names = malloc((n + 1) * sizeof *names);
    if (!names) return rt_error_set(err, TGCRT_ERR_NOMEM, "cannot write '%s': out of memory", path);
    for (size_t i = 0; i < n; i++)
        names[i] = t[i].name;
    names[n] = "__metadata__";
    qsort(names, n + 1, sizeof *names, by_name);
    RtStatus s = TGCRT_OK;
    for (size_t i = 1; !s && i <= n; i++)
        if (!strcmp(names[i - 1], names[i]))
            s = rt_error_set(err, TGCRT_ERR_ARG, "%s: tensor name '%s' %s", path, names[i],
                             strcmp(names[i], "__metadata__") ? "is given twice" : "is reserved");
    free(names);
    return s;
}

/* The header's JSON text (malloc'd), NULL when out of memory. */
static char *header_text(const RtStTensorOut *t, size_t n, const char *pair) {
    cJSON *h = cJSON_CreateObject();
    cJSON *meta = cJSON_AddObjectToObject(h, "__metadata__");
    bool ok = meta && cJSON_AddStringToObject(meta, "producer", "tgc");
    if (ok && pair) ok = cJSON_AddStringToObject(meta, RT_ST_PAIR_KEY, pair) != NULL;
    size_t off = 0;
    for (size_t i = 0; ok && i < n; i++) {
        cJSON *e = cJSON_AddObjectToObject(h, t[i].name);
        cJSON *sh = e && cJSON_AddStringToObject(e, "dtype", st_dtype(t[i].desc.dtype))
                        ? cJSON_AddArrayToObject(e, "shape")
                        : NULL;
        ok = sh != NULL;
        for (int d = 0; ok && d < t[i].desc.ndim; d++) {
            cJSON *v = cJSON_CreateNumber((double)t[i].desc.shape[d]);
            ok = v && cJSON_AddItemToArray(sh, v);
        }
        cJSON *o = ok ? cJSON_AddArrayToObject(e, "data_offsets") : NULL;
        cJSON *b = o ? cJSON_CreateNumber((double)off) : NULL;
        ok = b && cJSON_AddItemToArray(o, b);
        cJSON *end = ok ? cJSON_CreateNumber((double)(off + t[i].nbytes)) : NULL;
        ok = end && cJSON_AddItemToArray(o, end);
        off += t[i].nbytes;
    }
    char *text = ok ? cJSON_PrintUnformatted(h) : NULL;
    cJSON_Delete(h);
    return text;
}

RtStatus rt_st_write_begin(RtAtomicFile *af, const char *path, const RtStTensorOut *t, size_t n,
                           const char *pair, RtError *err) {
    rt_afile_init(af);
    if (!path || (n && !t))
        return rt_error_set(err, TGCRT_ERR_ARG, "rt_st_write: no path or tensors");
    for (size_t i = 0; i < n; i++) {
        RtStatus s = check(path, &t[i], i, err);
        if (s) return s;
    }
    RtStatus s = check_names(path, t, n, err);
    if (s) return s;
    char *text = header_text(t, n, pair);
    /* Whole or not at all (rt_atomic.h): a reader of the file never sees
     * half of it, and a failed write leaves an older file as it was. */
    int e = text ? rt_afile_begin(af, path) : ENOMEM;
    /* Buffered: a model has many small tensors (biases, norms). */
    if (!e && !rt_afile_stream(af)) e = errno ? errno : ENOMEM;
    if (!e) {
        size_t len = strlen(text), padded = (len + 7) / 8 * 8;
        uint8_t hdr[8];
        for (int i = 0; i < 8; i++)
            hdr[i] = (uint8_t)((uint64_t)padded >> (8 * i));
        static const char spaces[] = "       "; /* up to 7 */
        e = rt_afile_write(af, hdr, 8);
        if (!e) e = rt_afile_write(af, text, len);
        if (!e) e = rt_afile_write(af, spaces, padded - len);
        for (size_t i = 0; !e && i < n; i++)
            e = rt_afile_write(af, t[i].data, t[i].nbytes);
    }
    if (e) rt_afile_abort(af);
    free(text);
    if (e) return rt_error_set(err, TGCRT_ERR_IO, "cannot write '%s': %s", path, strerror(e));
    return TGCRT_OK;
}

RtStatus rt_st_write_commit(RtAtomicFile *af, RtError *err) {
    char *path = af->dest ? strdup(af->dest) : NULL;
    int e = rt_afile_commit(af, 0666);
    rt_afile_abort(af);
    RtStatus s = TGCRT_OK;
    if (e)
        s = rt_error_set(err, TGCRT_ERR_IO, "cannot write '%s': %s", path ? path : "?",
                         strerror(e));
    free(path);
    return s;
}

RtStatus rt_st_write(const char *path, const RtStTensorOut *t, size_t n, RtError *err) {
    RtAtomicFile af;
    RtStatus s = rt_st_write_begin(&af, path, t, n, NULL, err);
    return s ? s : rt_st_write_commit(&af, err);
}
