/* --quantize at build time: the weights file the program embeds.
 *
 * For every quantized param (passes/quantize.c) it reads the source
 * tensor, converts it to f32 and quantizes it symmetrically:
 *   scale = max|w| over the group / qmax      (qmax 127 for int8, 7 for int4)
 *   q     = clamp(round_half_even(w / scale), -qmax - 1, qmax)   (0 when scale is 0)
 * all in f32, as `torch.round(w / scale).clamp(...)` computes it, so a
 * PyTorch reference gets the same bytes. Other params are copied as they
 * are (the program converts them at load as usual). */
#include "driver/quantize_weights.h"

#include "driver/st_write.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tgcrt.h"

/* q and scales of one weight; false (with a message) on non-finite data. */
static bool quantize_one(const char *cmd, const char *path, const RtStTensor *t, const QuantOf *qo,
                         StBlob *qb, StBlob *sb) {
    int64_t n = qo->n, k = qo->k, gsz = qo->group, ng = (k + gsz - 1) / gsz;
    int qmax = qo->bits == 8 ? 127 : 7;
    size_t rowbytes = qo->bits == 8 ? (size_t)k : (size_t)(k + 1) / 2;
    uint8_t *q = calloc((size_t)n, rowbytes);
    float *sc = malloc(sizeof(float) * (size_t)(n * ng));
    float *row = malloc(sizeof(float) * (size_t)k);
    if (!q || !sc || !row) {
        fprintf(stderr, "tgc %s: error: out of memory quantizing '%s'\n", cmd, t->name);
        free(q), free(sc), free(row);
        return false;
    }
    for (int64_t r = 0; r < n; r++) {
        for (int64_t j = 0; j < k; j++) {
            row[j] = (float)rt_load_float(t->data, t->desc.dtype,
                                          (size_t)(qo->transposed ? j * n + r : r * k + j));
            if (!isfinite(row[j])) {
                fprintf(stderr,
                        "tgc %s: error: %s: tensor '%s' holds %s at element %lld: cannot "
                        "quantize it\n",
                        cmd, path, t->name, isnan(row[j]) ? "NaN" : "an infinity",
                        (long long)(qo->transposed ? j * n + r : r * k + j));
                free(q), free(sc), free(row);
                return false;
            }
        }
        for (int64_t gi = 0; gi < ng; gi++) {
            int64_t j0 = gi * gsz, j1 = j0 + gsz < k ? j0 + gsz : k;
            float amax = 0;
            for (int64_t j = j0; j < j1; j++)
                amax = fabsf(row[j]) > amax ? fabsf(row[j]) : amax;
            float scale = amax / (float)qmax;
            sc[r * ng + gi] = scale;
            for (int64_t j = j0; j < j1; j++) {
                float v = scale > 0 ? rintf(row[j] / scale) : 0.0f;
                v = v < (float)(-qmax - 1) ? (float)(-qmax - 1) : v > (float)qmax ? (float)qmax : v;
                int iv = (int)v;
                if (qo->bits == 8)
                    q[r * (int64_t)rowbytes + j] = (uint8_t)(int8_t)iv;
                else
                    q[r * (int64_t)rowbytes + j / 2] |= (uint8_t)((iv & 15) << (j % 2 ? 4 : 0));
            }
        }
    }
    free(row);
    *qb = (StBlob){.dtype = qo->bits == 8 ? RT_I8 : RT_U8,
                   .ndim = 2,
                   .shape = {n, (int64_t)rowbytes},
                   .data = q,
                   .nbytes = (size_t)n * rowbytes,
                   .owned = q};
    *sb = (StBlob){.dtype = RT_F32,
                   .ndim = 2,
                   .shape = {n, ng},
                   .data = sc,
                   .nbytes = sizeof(float) * (size_t)(n * ng),
                   .owned = sc};
    return true;
}

bool quantize_weights_write(const Graph *g, const char *src, const char *out, const char *cmd) {
    RtSafetensors *st = NULL;
    RtError e;
    rt_error_clear(&e);
    if (src && rt_st_open(src, &st, &e) != TGCRT_OK) {
        fprintf(stderr, "tgc %s: error: %s\n", cmd, e.msg);
        return false;
    }
    StBlob *b = calloc((size_t)g->nvalues * 2 + 1, sizeof *b);
    bool *is_scales = calloc((size_t)g->nvalues + 1, sizeof *is_scales);
    int nb = 0;
    bool ok = b && is_scales;
    for (int i = 0; ok && i < g->nvalues; i++)
        if (g->values[i]->quant) is_scales[g->values[i]->quant->scales->order] = true;
    for (int i = 0; ok && i < g->nvalues; i++) {
        const Value *v = g->values[i];
        if (v->op != OP_PARAM || v->dead) continue;
        if (v->quant) {
            const QuantOf *qo = v->quant;
            const RtStTensor *t = st ? rt_st_find(st, qo->source) : NULL;
            int64_t want0 = qo->transposed ? qo->k : qo->n, want1 = qo->transposed ? qo->n : qo->k;
            RtStTensor filled = {.name = qo->source, .desc = {RT_F32, 2, {want0, want1}}};
            if (!t && qo->init.kind != INIT_NONE) {
                /* The initialiser's values, exactly as the program would make them. */
                float *buf = malloc(sizeof(float) * (size_t)(qo->n * qo->k));
                if (buf) {
                    rt_fill(NULL, (int)qo->init.kind, qo->init.a, qo->init.b,
                            (uint64_t)qo->init.seed, qo->source, RT_F32, buf, qo->n * qo->k);
                    filled.data = buf;
                    filled.nbytes = sizeof(float) * (size_t)(qo->n * qo->k);
                    t = &filled;
                }
            }
            if (!t) {
                fprintf(stderr,
                        "tgc %s: error: %s%smissing tensor '%s' (param '%s' has no initialiser, "
                        "and --quantize computes its scales from the weights at build time)\n",
                        cmd, src ? src : "", src ? ": " : "no --weights: ", qo->source, qo->source);
                ok = false;
            } else if (t->desc.ndim != 2 || t->desc.shape[0] != want0 ||
                       t->desc.shape[1] != want1 ||
                       (t->desc.dtype != RT_F32 && t->desc.dtype != RT_F16 &&
                        t->desc.dtype != RT_BF16 && t->desc.dtype != RT_F64)) {
                char found[RT_DESC_STR_MAX];
                rt_desc_format(&t->desc, found, sizeof found);
                fprintf(stderr,
                        "tgc %s: error: %s: tensor '%s': expected a float tensor [%lld, %lld], "
                        "found %s\n",
                        cmd, src, qo->source, (long long)want0, (long long)want1, found);
                ok = false;
            } else if (quantize_one(cmd, src ? src : "initialiser", t, qo, &b[nb], &b[nb + 1])) {
                b[nb].name = v->name;
                b[nb + 1].name = qo->scales->name;
                nb += 2;
            } else {
                ok = false;
            }
            if (t == &filled) free((void *)filled.data);
            continue;
        }
        const RtStTensor *t = is_scales[i] || !st ? NULL : rt_st_find(st, v->name);
        if (!t) continue; /* an initialiser, or missing: the usual check reports it */
        b[nb].name = v->name;
        b[nb].dtype = t->desc.dtype;
        b[nb].ndim = t->desc.ndim;
        for (int d = 0; d < t->desc.ndim; d++)
            b[nb].shape[d] = t->desc.shape[d];
        b[nb].data = t->data;
        b[nb].nbytes = t->nbytes;
        nb++;
    }
    if (ok) ok = st_write(cmd, out, b, nb);
    for (int i = 0; b && i < nb; i++)
        free(b[i].owned);
    free(b);
    free(is_scales);
    rt_st_close(st);
    return ok;
}
