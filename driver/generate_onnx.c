/* tgc build --generate of an ONNX decoder in Hugging Face's convention
 * (docs/generation.md "ONNX decoders"): the -D values its dynamic axes
 * take. The model is imported at one token per run with a past of
 * max_seq - 1, so that each Concat(past, new) has the whole cache's
 * length and becomes a state (passes/cache_state.h). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "driver/build_internal.h"
#include "driver/driver.h"
#include "driver/generate.h"
#include "passes/cache_state.h"

static const OnnxInput *input_named(const OnnxInput *in, int n, const char *name) {
    for (int i = 0; i < n; i++)
        if (!strcmp(in[i].name, name)) return &in[i];
    return NULL;
}

static const DimOverride *user_dim(const BuildOpts *b, const char *name) {
    for (int i = 0; i < b->o.ndims; i++)
        if (!strcmp(b->o.dims[i].name, name)) return &b->o.dims[i];
    return NULL;
}

static bool fail(const BuildOpts *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static bool fail(const BuildOpts *b, const char *fmt, ...) {
    fprintf(stderr, "tgc %s: error: --generate: %s: ", b->cmd, b->o.file);
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    return false;
}

typedef struct Axes {
    DimOverride d[64];
    int n;
} Axes;

/* Axis `k` of input `in` set to v: a named axis by -D (once), a fixed one
 * must already be v. */
static bool set_axis(const BuildOpts *b, Axes *ax, const OnnxInput *in, int k, int64_t v,
                     const char *what) {
    const char *p = in->dim_param[k];
    if (!p) {
        if (in->dim_value[k] == v) return true;
        return fail(b,
                    "the %s is fixed at %lld, --generate needs %lld (export it as a dynamic axis)",
                    what, (long long)in->dim_value[k], (long long)v);
    }
    for (int i = 0; i < ax->n; i++)
        if (!strcmp(ax->d[i].name, p)) {
            if (ax->d[i].value == v) return true;
            return fail(b, "the %s is the axis '%s', which another role sets to another size", what,
                        p);
        }
    if (ax->n == 64) return fail(b, "too many dimensions");
    ax->d[ax->n++] = (DimOverride){p, v, v, false};
    return true;
}

bool generate_onnx_dims(const BuildOpts *b, Arena *a, BuildOpts *out, int64_t *max_seq) {
    int len = 0;
    char *bytes = driver_read_file(b->o.file, &len);
    if (!bytes) return false;
    Diag d;
    diag_init(&d, stderr);
    OnnxInput *in = NULL;
    int nin = 0;
    bool ok = onnx_read_inputs(a, &d, b->o.file, (const uint8_t *)bytes, (size_t)len, &in, &nin);
    free(bytes);
    if (!ok) return false;
    const OnnxInput *ids = input_named(in, nin, "input_ids"), *past = NULL;
    for (int i = 0; i < nin && !past; i++)
        if (cache_state_is_past_name(in[i].name)) past = &in[i];
    if (!ids || ids->ndim != 2 || ids->dtype != DT_I64)
        return fail(b, "%s: a decoder in the Hugging Face convention takes input_ids%s",
                    ids ? "input 'input_ids' is not i64[batch, seq]" : "no input 'input_ids'",
                    " i64[batch, seq]");
    if (!past || past->ndim != 4)
        return fail(b,
                    "%s%s (the cache in Hugging Face's convention: tgc build --generate "
                    "turns it into states)",
                    past ? "past input is not [batch, heads, past, head_dim]: "
                         : "no input past_key_values.N.key / .value ",
                    past ? past->name : "[batch, heads, past, head_dim]");
    /* The cache's length: -D max_seq, else the upper bound of -D seq
     * (cli.md's `-D batch=LO:HI -D seq=LO:HI`: the longest sequence). */
    const DimOverride *ms = user_dim(b, "max_seq"), *bd = user_dim(b, "batch");
    if (!ms) ms = user_dim(b, "seq");
    if (!ms)
        return fail(b, "needs -D max_seq=S or -D seq=LO:S (the cache's length: prompt + new "
                       "tokens)");
    if (ms->value < 2)
        return fail(b, "-D %s must be at least 2 (one cached token and the new one)", ms->name);
    int64_t S = ms->value, B = bd ? bd->value : 1; /* a range: built at its upper bound */
    Axes ax = {.n = 0};
    const OnnxInput *mask = input_named(in, nin, "attention_mask");
    const OnnxInput *posi = input_named(in, nin, "position_ids");
    if (!set_axis(b, &ax, ids, 0, B, "batch (input_ids' dim 0)") ||
        !set_axis(b, &ax, ids, 1, 1, "sequence (input_ids' dim 1)") ||
        (mask && mask->ndim == 2 && !set_axis(b, &ax, mask, 1, S, "attention_mask's dim 1")) ||
        (posi && posi->ndim == 2 &&
         (!set_axis(b, &ax, posi, 0, B, "batch (position_ids' dim 0)") ||
          !set_axis(b, &ax, posi, 1, 1, "sequence (position_ids' dim 1)"))))
        return false;
    /* Every past input, its axes named alike or not. */
    for (int i = 0; i < nin; i++)
        if (cache_state_is_past_name(in[i].name) && in[i].ndim == 4 &&
            (!set_axis(b, &ax, &in[i], 0, B, "batch (a past input's dim 0)") ||
             !set_axis(b, &ax, &in[i], 2, S - 1, "past length (a past input's dim 2)")))
            return false;
    /* The user's other -D values, for the model's other axes; batch,
     * max_seq and seq (the prefill's chunk: one token here) are the
     * generation's. */
    for (int i = 0; i < b->o.ndims; i++) {
        const DimOverride *u = &b->o.dims[i];
        bool taken =
            !strcmp(u->name, "batch") || !strcmp(u->name, "max_seq") || !strcmp(u->name, "seq");
        for (int k = 0; k < ax.n && !taken; k++)
            taken = !strcmp(ax.d[k].name, u->name);
        if (taken) continue;
        if (ax.n == 64) return fail(b, "too many dimensions");
        ax.d[ax.n] = *u;
        ax.d[ax.n].name = arena_strdup(a, u->name);
        ax.d[ax.n].range = false;
        ax.d[ax.n].lo = ax.d[ax.n].value;
        ax.n++;
    }
    *out = *b;
    memcpy(out->o.dims, ax.d, sizeof ax.d[0] * (size_t)ax.n);
    out->o.ndims = ax.n;
    *max_seq = S;
    return true;
}
