/* `tgc report --generate`: a generating executable's memory. tgc build
 * --generate compiles the decoder twice, the prefill at seq = chunk and
 * the decode step at seq = 1, and the two contexts share the weights, the
 * states (the KV cache) and one arena (rt_context_create_shared), so the
 * executable holds the weights and the cache once, the larger arena, and
 * each program's inputs and outputs. This file plans both programs and
 * counts that; the verdict, the storage choices and --fit then hold the
 * total to the budget through Report.peak_bytes. An ONNX decoder's two
 * programs are imported as the build imports them (driver/
 * generate_onnx.c: the model's axes at each program's sizes, its past
 * keys and values made states), and the cache is those states. */
#include "driver/report_generate.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "driver/generate.h"
#include "frontend/frontend.h"
#include "frontend/onnx/onnx_import.h"

bool gen_parse_cache_dtype(const char *cmd, const char *s, DType *out) {
    DType t = dtype_from_name(s);
    if (t != DT_F32 && t != DT_F16 && t != DT_BF16) {
        fprintf(stderr, "tgc %s: error: --cache-dtype %s: expected f32, f16 or bf16\n", cmd, s);
        return false;
    }
    *out = t;
    return true;
}

const char *gen_fit_dim(const char *fit) {
    if (!strcmp(fit, "batch")) return "batch";
    if (!strcmp(fit, "seq")) return "max_seq";
    fprintf(stderr,
            "tgc report: error: --fit %s: with --generate, expected batch (the largest batch) or "
            "seq (the largest context, --max-seq)\n",
            fit);
    return NULL;
}

int gen_check_options(const Options *o) {
    if (o->has_train) {
        fprintf(stderr, "tgc report: error: --generate does not apply to --train (a generating "
                        "executable runs the forward only)\n");
        return 1;
    }
    for (int i = 0; i < o->ndims; i++) {
        const DimOverride *d = &o->dims[i];
        if (d->range && strcmp(d->name, "batch") && strcmp(d->name, "seq")) {
            fprintf(stderr,
                    "tgc report: error: -D %s=%lld:%lld: with --generate a range is accepted for "
                    "batch and seq (the prompt's length) only\n",
                    d->name, (long long)d->lo, (long long)d->value);
            return 1;
        }
    }
    return 0;
}

static const Dim *find_dim(const Graph *g, const char *name) {
    for (int i = 0; i < g->ndims; i++)
        if (!strcmp(g->dims[i].name, name)) return &g->dims[i];
    return NULL;
}

static const DimOverride *find_override(const Options *o, const char *name) {
    for (int i = 0; i < o->ndims; i++)
        if (!strcmp(o->dims[i].name, name)) return &o->dims[i];
    return NULL;
}

static int missing_dim(const Graph *g, const char *name, const char *why) {
    fprintf(stderr, "tgc report: error: --generate: graph '%s' has no dimension '%s' (%s)\n",
            g->name, name, why);
    fprintf(stderr, "  the graph's dimensions:");
    for (int i = 0; i < g->ndims; i++)
        fprintf(stderr, " %s", g->dims[i].name);
    fprintf(stderr, "%s\n", g->ndims ? "" : " none");
    return 1;
}

int gen_declared_dims(const Options *o, Options *first, int64_t max_seq, Arena *a,
                      const GenOnnx **onnx) {
    *onnx = NULL;
    if (onnx_is_model_path(o->file)) {
        GenOnnx *m = ARENA_NEW(a, GenOnnx);
        if (!generate_onnx_read("report", o, max_seq, a, m) ||
            !generate_onnx_dims(m, m->batch, m->max_seq, 1, a, stderr, first->dims, &first->ndims))
            return 1;
        first->gen_cache = true;
        *onnx = m;
        return 0;
    }
    for (int i = 0; i < first->ndims; i++)
        if (!strcmp(first->dims[i].name, "seq")) first->dims[i] = (DimOverride){"seq", 1, 1, false};
    return 0;
}

/* An ONNX decoder's plan: its sizes come from generate_onnx_read, its
 * cache from the import (g, the step, has it as states); the model's
 * bytes are kept in g's arena for each program's import. */
static int prepare_onnx(const Graph *g, const Options *o, const SrcFile *file, DType cache_dtype,
                        const GenOnnx *m, Options *og, GenPlan *gp) {
    int nstates = 0;
    for (int i = 0; i < g->nvalues; i++)
        nstates += g->values[i]->op == OP_PARAM && g->values[i]->state;
    if (!nstates) { /* pass_cache_state refuses a model without its cache first */
        fprintf(stderr, "tgc report: error: --generate: %s: the model has no KV cache\n", o->file);
        return 1;
    }
    int len = 0;
    char *bytes = driver_read_file(o->file, &len);
    if (!bytes) return 1;
    memset(gp, 0, sizeof *gp);
    gp->model = arena_dup(g->arena, bytes, (size_t)len);
    gp->model_len = (size_t)len;
    free(bytes);
    gp->file = file;
    gp->o = og;
    gp->onnx = m;
    gp->cache_dtype = cache_dtype;
    gp->seq_hi = m->seq_given ? m->seq_hi : m->max_seq;
    gp->seq_lo = m->seq_lo;
    gp->batch_lo = m->batch_lo;
    gp->chunk = generate_onnx_chunk(gp->seq_hi, m->max_seq);
    *og = *o; /* its dims unused: each program is imported at its own */
    return 0;
}

int gen_prepare(const Graph *g, const Options *o, const SrcFile *file, int64_t max_seq,
                DType cache_dtype, const GenOnnx *onnx, Options *og, GenPlan *gp) {
    if (onnx) return prepare_onnx(g, o, file, cache_dtype, onnx, og, gp);
    const DimOverride *dm = find_override(o, "max_seq");
    if (dm && max_seq && dm->value != max_seq) {
        fprintf(stderr, "tgc report: error: -D max_seq=%lld and --max-seq %lld disagree\n",
                (long long)dm->value, (long long)max_seq);
        return 1;
    }
    if (!max_seq && dm) max_seq = dm->value;
    if (max_seq < 1) {
        fprintf(stderr, "tgc report: error: --generate needs --max-seq S (the cache's length in "
                        "tokens, at least 1)\n");
        return dm ? 1 : 2;
    }
    if (!find_dim(g, "max_seq"))
        return missing_dim(g, "max_seq", "--max-seq sets it: the KV cache's length");
    const Dim *seq = find_dim(g, "seq");
    if (!seq) return missing_dim(g, "seq", "the tokens of one run: the prompt's chunk, then 1");
    int nstates = 0;
    for (int i = 0; i < g->nvalues; i++)
        nstates += g->values[i]->op == OP_PARAM && g->values[i]->state;
    if (!nstates) {
        fprintf(stderr,
                "tgc report: error: --generate: graph '%s' declares no state (a KV cache: "
                "`state k_cache : f32[batch, n_kv_head, max_seq, head_dim]`), so it keeps nothing "
                "between runs\n",
                g->name);
        return 1;
    }
    const DimOverride *ds = find_override(o, "seq"), *db = find_override(o, "batch");
    const Dim *batch = find_dim(g, "batch");
    memset(gp, 0, sizeof *gp);
    gp->file = file;
    gp->o = og;
    gp->cache_dtype = cache_dtype;
    gp->seq_hi = ds ? ds->value : seq->value;
    gp->seq_lo = ds ? ds->lo : seq->value;
    /* As tgc build --generate (driver/cmd_generate.c), before the cache's
     * length bounds it (at each max_seq planned: generate_chunk). */
    gp->chunk = generate_chunk(gp->seq_hi, INT64_MAX);
    gp->batch_lo = db ? db->lo : batch ? batch->value : 1;
    if (gp->seq_lo < 1 || gp->batch_lo < 1) {
        fprintf(stderr, "tgc report: error: --generate: -D %s: expected at least 1 (%s)\n",
                gp->seq_lo < 1 ? "seq" : "batch",
                gp->seq_lo < 1 ? "a prompt's tokens" : "sequences");
        return 1;
    }
    /* The prefill's sizes: ranges at their upper bounds, seq at the chunk. */
    *og = *o;
    og->ndims = 0;
    for (int i = 0; i < o->ndims; i++) {
        const char *nm = o->dims[i].name;
        if (strcmp(nm, "max_seq") && strcmp(nm, "seq") && strcmp(nm, "batch"))
            og->dims[og->ndims++] = o->dims[i];
    }
    if (og->ndims > 61) {
        fprintf(stderr, "tgc report: error: too many -D options\n");
        return 2;
    }
    if (batch) og->dims[og->ndims++] = (DimOverride){"batch", batch->value, batch->value, false};
    int64_t chunk = generate_chunk(gp->seq_hi, max_seq);
    og->dims[og->ndims++] = (DimOverride){"seq", chunk, chunk, false};
    og->dims[og->ndims++] = (DimOverride){"max_seq", max_seq, max_seq, false};
    return 0;
}

/* An ONNX decoder's batch and cache length at dim = value (dim NULL:
 * the plan's). */
static void onnx_sizes(const GenPlan *gp, const char *dim, int64_t value, int64_t *batch,
                       int64_t *max_seq) {
    *batch = gp->onnx->batch;
    *max_seq = gp->onnx->max_seq;
    if (dim && !strcmp(dim, "batch")) *batch = value;
    if (dim && !strcmp(dim, "max_seq")) *max_seq = value;
}

/* An ONNX decoder's prefill chunk at a cache of max_seq, as tgc build
 * --generate picks it (without -D seq, the prompt may fill the cache). */
static int64_t onnx_chunk(const GenPlan *gp, int64_t max_seq) {
    return generate_onnx_chunk(gp->onnx->seq_given ? gp->onnx->seq_hi : max_seq, max_seq);
}

/* The ONNX decoder imported for seq tokens a run at dim = value. */
static Graph *import_at(Arena *a, const GenPlan *gp, const PrecisionPolicy *pol, const char *dim,
                        int64_t value, int64_t seq, FILE *msgs, bool prefill) {
    int64_t batch, max_seq;
    onnx_sizes(gp, dim, value, &batch, &max_seq);
    DimOverride ov[64];
    int n = 0;
    if (batch < 1 || seq < 1 || max_seq <= seq ||
        !generate_onnx_dims(gp->onnx, batch, max_seq, seq, a, msgs, ov, &n))
        return NULL;
    Diag d;
    diag_init(&d, msgs);
    return generate_onnx_load(a, &d, gp->onnx->o->file, gp->model, gp->model_len, ov, n, pol,
                              prefill);
}

/* gp's program at seq (the prefill's chunk or the step's 1) and dim =
 * value (dim NULL: none), messages to msgs (NULL: silent). */
static Graph *compile_at(Arena *a, const GenPlan *gp, const PrecisionPolicy *pol, const char *dim,
                         int64_t value, int64_t seq, FILE *msgs, bool prefill) {
    if (gp->onnx) return import_at(a, gp, pol, dim, value, seq, msgs, prefill);
    DimOverride ov[66];
    int n = 0;
    for (int i = 0; i < gp->o->ndims; i++) {
        const char *nm = gp->o->dims[i].name;
        if (strcmp(nm, "seq") && !(dim && !strcmp(nm, dim))) ov[n++] = gp->o->dims[i];
    }
    ov[n++] = (DimOverride){"seq", seq, seq, false};
    if (dim) ov[n++] = (DimOverride){dim, value, value, false};
    Diag d;
    diag_init(&d, msgs);
    return generate_graph(a, &d, gp->file, ov, n, pol, false, prefill);
}

static int64_t dim_value_of(const Options *o, const char *name) {
    const DimOverride *d = find_override(o, name);
    return d ? d->value : 0;
}

static int64_t dim_value(const Graph *g, const char *name, int64_t dflt) {
    const Dim *d = find_dim(g, name);
    return d ? d->value : dflt;
}

/* The ONNX prefill at its chunk, else at one token (as the build falls
 * back; a note to msgs): *chunk the one used. */
static Graph *onnx_prefill_at(Arena *a, const GenPlan *gp, const PrecisionPolicy *pol,
                              const char *dim, int64_t value, FILE *msgs, int64_t *chunk) {
    int64_t batch, max_seq;
    onnx_sizes(gp, dim, value, &batch, &max_seq);
    *chunk = onnx_chunk(gp, max_seq);
    if (*chunk > 1) {
        Graph *g = import_at(a, gp, pol, dim, value, *chunk, NULL, true);
        if (g) return g;
        if (msgs)
            fprintf(msgs,
                    "tgc report: note: --generate: %s: the model does not build for a chunk of "
                    "%lld tokens; planned as tgc build --generate falls back, one token a run\n",
                    gp->onnx->o->file, (long long)*chunk);
        *chunk = 1;
    }
    return import_at(a, gp, pol, dim, value, 1, msgs, true);
}

Graph *gen_prefill_graph(Arena *a, Diag *d, GenPlan *gp, const PrecisionPolicy *pol) {
    if (gp->onnx) return onnx_prefill_at(a, gp, pol, NULL, 0, stderr, &gp->onnx_chunk);
    return generate_graph(a, d, gp->file, gp->o->dims, gp->o->ndims, pol, false, true);
}

/* chunk: the ONNX prefill's (a .tg's is its graph's seq). */
static bool finish_at(Report *r, const GenPlan *gp, const PrecisionPolicy *pol, const char *dim,
                      int64_t value, int64_t chunk, FILE *msgs) {
    Graph *gs = compile_at(r->a, gp, pol, dim, value, 1, msgs, false);
    if (!gs) return false;
    Report *s = report_build(r->a, gs, pol->prec, gp->target);
    ReportGen *gen = ARENA_NEW(r->a, ReportGen);
    gen->plan = gp;
    gen->chunk = dim_value(r->g, "seq", gp->chunk);
    gen->batch = dim_value(r->g, "batch", 1);
    gen->max_seq = dim_value(r->g, "max_seq", 1);
    if (gp->onnx) { /* the model's own axes are named otherwise */
        onnx_sizes(gp, dim, value, &gen->batch, &gen->max_seq);
        gen->chunk = chunk;
    }
    DType sdt = DT_NONE;
    bool mixed = false;
    int64_t state_storage = 0;
    for (int i = 0; i < r->g->nvalues; i++) {
        const Value *v = r->g->values[i];
        if (v->op != OP_PARAM) continue;
        DType t = r->dt[v->order];
        if (!v->state) {
            gen->weight_tensors++;
            continue;
        }
        gen->nstates++;
        state_storage = sat_add(state_storage, schedule_value_bytes(v, t));
        DType c = gp->cache_dtype != DT_NONE ? gp->cache_dtype : t;
        gen->kv_cache_bytes = sat_add(gen->kv_cache_bytes, schedule_value_bytes(v, c));
        if (sdt != DT_NONE && sdt != t) mixed = true;
        sdt = t;
    }
    gen->state_dtype = mixed ? "mixed" : dtype_name(sdt);
    gen->cache_dtype = gp->cache_dtype != DT_NONE ? dtype_name(gp->cache_dtype) : gen->state_dtype;
    gen->weights_bytes = r->params_bytes - state_storage;
    gen->kv_bytes_per_token = gen->max_seq > 0 ? gen->kv_cache_bytes / gen->max_seq : 0;
    gen->prefill_arena_bytes = r->plan->arena_bytes;
    gen->step_arena_bytes = s->plan->arena_bytes;
    gen->arena_bytes = gen->prefill_arena_bytes > gen->step_arena_bytes ? gen->prefill_arena_bytes
                                                                        : gen->step_arena_bytes;
    gen->prefill_io_bytes = sat_add(r->inputs_bytes, r->outputs_bytes);
    gen->step_io_bytes = sat_add(s->inputs_bytes, s->outputs_bytes);
    gen->fixed_bytes = r->fixed_bytes;
    /* As report_build counts one program, with the cache at its dtype,
     * the shared arena and both programs' caller-owned buffers. */
    int64_t resident =
        sat_add(sat_add(gen->weights_bytes - r->proc.released_bytes, gen->kv_cache_bytes),
                sat_add(r->fixed_bytes, r->conv_prepared_bytes));
    r->run_peak_bytes = sat_add(sat_add(resident, gen->arena_bytes),
                                sat_add(gen->prefill_io_bytes, gen->step_io_bytes));
    r->load_peak_bytes = sat_add(resident, r->proc.load_plain_bytes);
    r->peak_bytes = r->run_peak_bytes > r->load_peak_bytes ? r->run_peak_bytes : r->load_peak_bytes;
    gen->total_bytes = r->peak_bytes;
    r->gen = gen;
    return true;
}

bool report_generate_finish(Report *r, const GenPlan *gp, const PrecisionPolicy *pol, FILE *msgs) {
    return finish_at(r, gp, pol, NULL, 0, gp->onnx_chunk, msgs);
}

Report *report_generate_at(Arena *a, const GenPlan *gp, const PrecisionPolicy *pol, const char *dim,
                           int64_t value) {
    int64_t chunk = 0;
    Graph *g;
    if (gp->onnx) {
        g = onnx_prefill_at(a, gp, pol, dim, value, NULL, &chunk);
    } else {
        int64_t max_seq = dim && !strcmp(dim, "max_seq") ? value : dim_value_of(gp->o, "max_seq");
        g = compile_at(a, gp, pol, dim, value, generate_chunk(gp->seq_hi, max_seq), NULL, true);
    }
    if (!g) return NULL;
    Report *r = report_build(a, g, pol->prec, gp->target);
    return finish_at(r, gp, pol, dim, value, chunk, NULL) ? r : NULL;
}

Report *report_generate_of_policy(void *ctx, const PrecisionPolicy *pol) {
    GenChoiceCtx *c = ctx;
    Report *r = report_generate_at(c->a, c->gp, pol, NULL, 0);
    /* The storage choices' weights column: the cache is not a weight (its
     * bytes are in the row's peak, at the cache dtype). */
    if (r) r->params_bytes = r->gen->weights_bytes;
    return r;
}

static const char *B(char *buf, int64_t b) {
    report_fmt_bytes(buf, 32, b);
    return buf;
}

void report_generate_text(FILE *out, const Report *r) {
    const ReportGen *g = r->gen;
    if (!g) return;
    const GenPlan *gp = g->plan;
    char b[32], c[32], e[32];
    fprintf(out, "\ngeneration (tgc build --generate; target %s, precision %s)\n",
            report_target_name(r->target), r->prec_name);
    fprintf(out, "  batch %lld", (long long)g->batch);
    if (gp->batch_lo != g->batch)
        fprintf(out, " (-D batch=%lld:%lld, planned at the bound)", (long long)gp->batch_lo,
                (long long)g->batch);
    fprintf(out, ", context %lld tokens (max_seq); prefill %lld tokens a run",
            (long long)g->max_seq, (long long)g->chunk);
    if (gp->seq_lo != gp->seq_hi)
        fprintf(out, " (-D seq=%lld:%lld)", (long long)gp->seq_lo, (long long)gp->seq_hi);
    fprintf(out, ", then 1 a step\n");
    report_fmt_count(c, sizeof c, g->weight_tensors);
    fprintf(out, "  %-14s %12s   %s tensors%s\n", "weights", B(b, g->weights_bytes), c,
            r->quantize ? arena_printf(r->a, " (matrix products' weights %s)", r->quantize) : "");
    fprintf(out, "  %-14s %12s   %d states at %s%s\n", "KV cache", B(b, g->kv_cache_bytes),
            g->nstates, g->cache_dtype,
            strcmp(g->cache_dtype, g->state_dtype)
                ? arena_printf(r->a, " (--cache-dtype; stored %s otherwise)", g->state_dtype)
                : "");
    fprintf(out, "  %-14s %12s   per token of context, all layers, the batch's %lld sequences\n",
            "  per token", B(b, g->kv_bytes_per_token), (long long)g->batch);
    fprintf(out, "  %-14s %12s   the larger of the prefill's %s and the step's %s (one arena)\n",
            "arena", B(b, g->arena_bytes), B(c, g->prefill_arena_bytes), B(e, g->step_arena_bytes));
    fprintf(out, "  %-14s %12s   both programs' token ids, position and logits\n", "inputs/outputs",
            B(b, g->prefill_io_bytes + g->step_io_bytes));
    if (g->fixed_bytes)
        fprintf(out, "  %-14s %12s   CUDA context + cuBLAS workspace\n", "fixed (cuda)",
                B(b, g->fixed_bytes));
    if (r->proc.released_bytes)
        fprintf(out, "  %-14s %12s   params only prepared convs read, released once folded\n",
                "released", B(b, -r->proc.released_bytes));
    fprintf(out, "  %-14s %12s   the generating executable's peak%s\n", "total",
            B(b, g->total_bytes), r->load_peak_bytes > r->run_peak_bytes ? " (at load)" : "");
    if (r->proc.has_runtime)
        fprintf(out, "  %-14s %12s   + runtime and libraries (%s): the process's peak RSS\n",
                "process peak", B(b, r->proc.peak_bytes), B(c, r->proc.runtime_bytes));
    if (r->has_budget)
        fprintf(out, "  %s %s\n", g->total_bytes <= r->budget_bytes ? "fits" : "does not fit",
                r->budget_label);
}

static cJSON *num(int64_t v) {
    return cJSON_CreateNumber((double)v);
}

void report_generate_json(cJSON *root, const Report *r) {
    const ReportGen *g = r->gen;
    if (!g) return;
    cJSON *o = cJSON_AddObjectToObject(root, "generate");
    struct {
        const char *k;
        int64_t v;
    } rows[] = {
        {"weights_bytes", g->weights_bytes},
        {"kv_cache_bytes", g->kv_cache_bytes},
        {"kv_bytes_per_token", g->kv_bytes_per_token},
        {"arena_bytes", g->arena_bytes},
        {"prefill_arena_bytes", g->prefill_arena_bytes},
        {"step_arena_bytes", g->step_arena_bytes},
        {"prefill_io_bytes", g->prefill_io_bytes},
        {"step_io_bytes", g->step_io_bytes},
        {"fixed_bytes", g->fixed_bytes},
        {"max_seq", g->max_seq},
        {"batch", g->batch},
        {"batch_lo", g->plan->batch_lo},
        {"chunk", g->chunk},
        {"seq_lo", g->plan->seq_lo},
        {"seq_hi", g->plan->seq_hi},
        {"states", g->nstates},
        {"total_bytes", g->total_bytes},
    };
    for (size_t i = 0; i < sizeof rows / sizeof *rows; i++)
        cJSON_AddItemToObject(o, rows[i].k, num(rows[i].v));
    cJSON_AddStringToObject(o, "cache_dtype", g->cache_dtype);
    cJSON_AddStringToObject(o, "state_dtype", g->state_dtype);
    if (r->has_budget)
        cJSON_AddBoolToObject(o, "fits", g->total_bytes <= r->budget_bytes);
    else
        cJSON_AddNullToObject(o, "fits");
    const ReportFit *f = &r->fit;
    if (f->present && g->plan->fit) {
        cJSON *fo = cJSON_AddObjectToObject(o, "fit");
        cJSON_AddStringToObject(fo, "dim", g->plan->fit);
        cJSON_AddItemToObject(fo, "value", num(f->value));
        cJSON_AddItemToObject(fo, "peak_bytes",
                              f->value > 0 ? num(f->peak_at) : cJSON_CreateNull());
        cJSON_AddItemToObject(fo, "next_peak_bytes",
                              f->peak_next >= 0 && !f->capped ? num(f->peak_next)
                                                              : cJSON_CreateNull());
        cJSON_AddBoolToObject(fo, "capped", f->capped);
    }
}
