/* tgc build --generate and tgc report --generate of an ONNX decoder in
 * Hugging Face's convention (docs/generation.md "ONNX decoders"): the
 * sizes its dynamic axes take for a program of `seq` tokens a run. The
 * model is imported with a past of max_seq - seq, so that each
 * Concat(past, new) has the whole cache's length and becomes a state
 * (passes/cache_state.h): the step at seq = 1, the prefill at the chunk. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "driver/driver.h"
#include "driver/generate.h"
#include "frontend/frontend.h"
#include "frontend/onnx/onnx_import.h"
#include "passes/cache_state.h"
#include "passes/logits_row.h"
#include "passes/pipeline.h"

static const OnnxInput *input_named(const OnnxInput *in, int n, const char *name) {
    for (int i = 0; i < n; i++)
        if (!strcmp(in[i].name, name)) return &in[i];
    return NULL;
}

static const DimOverride *user_dim(const Options *o, const char *name) {
    for (int i = 0; i < o->ndims; i++)
        if (!strcmp(o->dims[i].name, name)) return &o->dims[i];
    return NULL;
}

static bool fail(FILE *msgs, const char *cmd, const char *file, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static bool fail(FILE *msgs, const char *cmd, const char *file, const char *fmt, ...) {
    if (!msgs) return false;
    fprintf(msgs, "tgc %s: error: --generate: %s: ", cmd, file);
    va_list ap;
    va_start(ap, fmt);
    vfprintf(msgs, fmt, ap);
    va_end(ap);
    fputc('\n', msgs);
    return false;
}

bool generate_onnx_read(const char *cmd, const Options *o, int64_t max_seq, Arena *a, GenOnnx *m) {
    memset(m, 0, sizeof *m);
    m->cmd = cmd;
    m->o = o;
    int len = 0;
    char *bytes = driver_read_file(o->file, &len);
    if (!bytes) return false;
    Diag d;
    diag_init(&d, stderr);
    bool ok =
        onnx_read_inputs(a, &d, o->file, (const uint8_t *)bytes, (size_t)len, &m->in, &m->nin);
    free(bytes);
    if (!ok) return false;
    const OnnxInput *ids = input_named(m->in, m->nin, "input_ids"), *past = NULL;
    for (int i = 0; i < m->nin && !past; i++)
        if (cache_state_is_past_name(m->in[i].name)) past = &m->in[i];
    if (!ids || ids->ndim != 2 || ids->dtype != DT_I64)
        return fail(stderr, cmd, o->file,
                    "%s: a decoder in the Hugging Face convention takes input_ids%s",
                    ids ? "input 'input_ids' is not i64[batch, seq]" : "no input 'input_ids'",
                    " i64[batch, seq]");
    if (!past || past->ndim != 4)
        return fail(stderr, cmd, o->file,
                    "%s%s (the cache in Hugging Face's convention: --generate turns it into "
                    "states)",
                    past ? "past input is not [batch, heads, past, head_dim]: "
                         : "no input past_key_values.N.key / .value ",
                    past ? past->name : "[batch, heads, past, head_dim]");
    /* The cache has a fixed length; only the mask can hide its rows past
     * the position (zeros, or an earlier generation's keys). */
    const OnnxInput *mask = input_named(m->in, m->nin, "attention_mask");
    if (!mask || mask->ndim != 2)
        return fail(stderr, cmd, o->file,
                    "%s: generating over a cache of fixed length needs the model's "
                    "attention_mask [batch, past + seq] to hide the cache's rows past the "
                    "position (export the model with it)",
                    mask ? "input 'attention_mask' is not [batch, past + seq]"
                         : "no input 'attention_mask'");
    /* The cache's length: --max-seq (the report's), -D max_seq, else the
     * upper bound of -D seq (cli.md's `-D batch=LO:HI -D seq=LO:HI`: the
     * longest sequence). */
    const DimOverride *ms = user_dim(o, "max_seq"), *sq = user_dim(o, "seq"),
                      *bd = user_dim(o, "batch");
    if (ms && max_seq && ms->value != max_seq)
        return fail(stderr, cmd, o->file, "-D max_seq=%lld and --max-seq %lld disagree",
                    (long long)ms->value, (long long)max_seq);
    const char *from = max_seq ? "--max-seq" : ms ? "-D max_seq" : "-D seq";
    if (!max_seq && !ms) ms = sq;
    if (!max_seq && !ms)
        return fail(stderr, cmd, o->file, "needs %s (the cache's length: prompt + new tokens)",
                    !strcmp(cmd, "report") ? "--max-seq S" : "-D max_seq=S or -D seq=LO:S");
    m->max_seq = max_seq ? max_seq : ms->value;
    if (m->max_seq < 2)
        return fail(stderr, cmd, o->file,
                    "%s %lld: expected at least 2 (one cached token and the new one)", from,
                    (long long)m->max_seq);
    m->seq_hi = sq ? sq->value : m->max_seq;
    m->seq_lo = sq ? sq->lo : 1;
    m->seq_given = sq != NULL;
    m->batch = bd ? bd->value : 1; /* a range: built at its upper bound */
    m->batch_lo = bd ? bd->lo : 1;
    if (m->seq_lo < 1 || m->batch_lo < 1)
        return fail(stderr, cmd, o->file, "-D %s: expected at least 1",
                    m->seq_lo < 1 ? "seq" : "batch");
    return true;
}

typedef struct Axes {
    DimOverride *d;
    int n;
} Axes;

/* Axis `k` of input `in` set to v: a named axis once (any other role
 * setting it must agree), a fixed one must already be v. */
static bool set_axis(const GenOnnx *m, FILE *msgs, Axes *ax, const OnnxInput *in, int k, int64_t v,
                     const char *what) {
    const char *p = in->dim_param[k];
    if (!p) {
        if (in->dim_value[k] == v) return true;
        return fail(msgs, m->cmd, m->o->file,
                    "the %s is fixed at %lld, --generate needs %lld (export it as a dynamic axis)",
                    what, (long long)in->dim_value[k], (long long)v);
    }
    for (int i = 0; i < ax->n; i++)
        if (!strcmp(ax->d[i].name, p)) {
            if (ax->d[i].value == v) return true;
            return fail(msgs, m->cmd, m->o->file,
                        "the %s is the axis '%s', which another role sets to another size", what,
                        p);
        }
    if (ax->n == 64) return fail(msgs, m->cmd, m->o->file, "too many dimensions");
    ax->d[ax->n++] = (DimOverride){p, v, v, false};
    return true;
}

bool generate_onnx_dims(const GenOnnx *m, int64_t batch, int64_t max_seq, int64_t seq, Arena *a,
                        FILE *msgs, DimOverride *out, int *nout) {
    Axes ax = {out, 0};
    const OnnxInput *ids = input_named(m->in, m->nin, "input_ids");
    const OnnxInput *mask = input_named(m->in, m->nin, "attention_mask");
    const OnnxInput *posi = input_named(m->in, m->nin, "position_ids");
    if (!set_axis(m, msgs, &ax, ids, 0, batch, "batch (input_ids' dim 0)") ||
        !set_axis(m, msgs, &ax, ids, 1, seq, "sequence (input_ids' dim 1)") ||
        !set_axis(m, msgs, &ax, mask, 1, max_seq, "attention_mask's dim 1") ||
        (posi && posi->ndim == 2 &&
         (!set_axis(m, msgs, &ax, posi, 0, batch, "batch (position_ids' dim 0)") ||
          !set_axis(m, msgs, &ax, posi, 1, seq, "sequence (position_ids' dim 1)"))))
        return false;
    /* Every past input, its axes named alike or not. */
    for (int i = 0; i < m->nin; i++)
        if (cache_state_is_past_name(m->in[i].name) && m->in[i].ndim == 4 &&
            (!set_axis(m, msgs, &ax, &m->in[i], 0, batch, "batch (a past input's dim 0)") ||
             !set_axis(m, msgs, &ax, &m->in[i], 2, max_seq - seq,
                       "past length (a past input's dim 2)")))
            return false;
    /* The user's other -D values, for the model's other axes; batch,
     * max_seq and seq are the generation's. */
    const Options *o = m->o;
    for (int i = 0; i < o->ndims; i++) {
        const DimOverride *u = &o->dims[i];
        bool taken =
            !strcmp(u->name, "batch") || !strcmp(u->name, "max_seq") || !strcmp(u->name, "seq");
        for (int k = 0; k < ax.n && !taken; k++)
            taken = !strcmp(ax.d[k].name, u->name);
        if (taken) continue;
        if (ax.n == 64) return fail(msgs, m->cmd, o->file, "too many dimensions");
        ax.d[ax.n] = *u;
        ax.d[ax.n].name = arena_strdup(a, u->name);
        ax.d[ax.n].range = false;
        ax.d[ax.n].lo = ax.d[ax.n].value;
        ax.n++;
    }
    *nout = ax.n;
    return true;
}

Graph *generate_graph(Arena *a, Diag *d, const SrcFile *file, const DimOverride *dims, int ndims,
                      const PrecisionPolicy *pol, bool cache_state, bool prefill) {
    Program *prog = tgc_frontend_parse(a, d, file);
    Graph *g = prog ? tgc_frontend_graph(a, d, prog, dims, ndims) : NULL;
    if (g && ((cache_state && !pass_cache_state(g, d)) || (prefill && !pass_logits_row(g, d)) ||
              !pipeline_prepare(g, d, pol, NULL)))
        g = NULL;
    return g && !d->errors ? g : NULL;
}

Graph *generate_onnx_load(Arena *a, Diag *d, const char *path, const uint8_t *bytes, size_t len,
                          const DimOverride *dims, int ndims, const PrecisionPolicy *pol,
                          bool prefill) {
    OnnxImport im;
    if (!onnx_import(a, d, path, bytes, len, dims, ndims, &im)) return NULL;
    SrcFile *file = ARENA_NEW(a, SrcFile);
    file->path = arena_printf(a, "%s (imported)", path);
    file->text = arena_strndup(a, im.text, (size_t)im.len);
    file->len = im.len;
    onnx_import_free(&im);
    return generate_graph(a, d, file, dims, ndims, pol, true, prefill);
}
