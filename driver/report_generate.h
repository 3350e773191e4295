/* `tgc report --generate --max-seq S`: the memory of a generating
 * executable (tgc build --generate): one decoder compiled twice, a prefill
 * program (seq = generate_chunk of the prompt bound) and a decode step
 * (seq = 1), over one set of weights, one KV cache (the graph's `state`
 * params, or an ONNX decoder's past keys and values made states) and one
 * arena, the larger of the two programs' (driver/report_generate.c). */
#ifndef TGC_REPORT_GENERATE_H
#define TGC_REPORT_GENERATE_H
#include <stdio.h>

#include "driver/driver.h"
#include "driver/generate.h"
#include "driver/report.h"

/* --cache-dtype D (f32, f16 or bf16): the KV cache's storage dtype; the
 * report and the generating build share this parse. false after a message
 * "tgc CMD: error: ..." naming the flag. */
bool gen_parse_cache_dtype(const char *cmd, const char *s, DType *out);

/* What both programs are compiled from: the source, the options with the
 * generation's dims set (-D batch at its bound, seq at the chunk, max_seq
 * at --max-seq), the target and the cache dtype. */
typedef struct GenPlan {
    const SrcFile *file;
    const Options *o; /* its dims: batch=HI, seq=chunk, max_seq=S and the user's others */
    Target target;
    DType cache_dtype; /* DT_NONE: the states' storage dtype */
    int64_t batch_lo, seq_lo, seq_hi;
    int64_t chunk;   /* generate_chunk(seq_hi); each plan clamps it to its max_seq, as the build */
    const char *fit; /* --fit as given: "batch" or "seq" (the dim max_seq), or NULL */
    /* An ONNX decoder (NULL: a .tg): imported from its bytes for each
     * program, as tgc build --generate does (driver/generate_onnx.c). */
    const GenOnnx *onnx;
    const uint8_t *model;
    size_t model_len;
    int64_t onnx_chunk; /* the prefill's chunk gen_prefill_graph planned (1 after a fallback) */
} GenPlan;

/* The figures of a generating executable (Report.gen). */
typedef struct ReportGen {
    const GenPlan *plan;
    int64_t batch, max_seq, chunk;
    int nstates;
    const char *state_dtype; /* the states' storage dtype under the policy ("mixed" if several) */
    const char *cache_dtype; /* the dtype the KV cache is counted at */
    int64_t weights_bytes;   /* the params that are not states, as tgc report counts params */
    int64_t weight_tensors;
    int64_t kv_cache_bytes;     /* the states at the cache dtype */
    int64_t kv_bytes_per_token; /* kv_cache_bytes / max_seq: a token of context, all layers */
    int64_t prefill_arena_bytes, step_arena_bytes, arena_bytes; /* arena: the larger */
    int64_t prefill_io_bytes, step_io_bytes; /* each program's inputs and outputs */
    int64_t fixed_bytes;                     /* the target's (CUDA context and workspace) */
    int64_t total_bytes;                     /* the executable's peak: what a budget holds */
} ReportGen;

/* Checks --generate's options before anything is compiled: -D ranges only
 * for batch and seq, no --train. 0, or the exit code after a message. */
int gen_check_options(const Options *o);

/* The options the graph is first loaded with (for gen_prepare's checks),
 * first a copy of the user's o: for a .tg, a -D seq at 1 token, since a
 * prompt's bound may be longer than the declared cache (the plans clamp
 * the chunk to it); for an ONNX decoder (*onnx set, in a), the decode
 * step's import (its axes at one token, its cache made states).
 * max_seq: --max-seq, 0 when not given. 0, or the exit code after a
 * message. */
int gen_declared_dims(const Options *o, Options *first, int64_t max_seq, Arena *a,
                      const GenOnnx **onnx);

/* g is the graph loaded with gen_declared_dims's options:
 * checks that it can generate (dimensions max_seq and seq, at least one
 * state), then fills *gp and *og: og
 * is a copy of o whose dims are the prefill's (batch at its bound, seq at
 * the chunk, max_seq). max_seq 0: -D max_seq's. o: the user's options;
 * onnx: gen_declared_dims's (NULL for a .tg). 0, or the exit code
 * after a message naming the graph. */
int gen_prepare(const Graph *g, const Options *o, const SrcFile *file, int64_t max_seq,
                DType cache_dtype, const GenOnnx *onnx, Options *og, GenPlan *gp);
/* The prefill program's graph, which the report is built from, under
 * pol: a .tg at og's dims; an ONNX decoder at its chunk, else (a model
 * that does not build for one) at one token with a note, as tgc build
 * --generate falls back (gp->onnx_chunk says which). NULL after errors. */
Graph *gen_prefill_graph(Arena *a, Diag *d, GenPlan *gp, const PrecisionPolicy *pol);

/* r is the prefill program's report (tgc report built it from gp's
 * options): compiles and plans the decode step with msgs for its
 * messages (NULL: silent), fills r->gen and makes r's peaks the
 * executable's (weights + KV cache at the cache dtype + the larger arena
 * + both programs' inputs and outputs + fixed), which the verdict, the
 * storage choices and --fit hold to the budget. false when the step does
 * not compile. */
bool report_generate_finish(Report *r, const GenPlan *gp, const PrecisionPolicy *pol, FILE *msgs);

/* Both programs at dim = value (dim NULL: as gp) under pol, silently: the
 * prefill's Report finished as above, or NULL when one does not compile.
 * Allocates in a. */
Report *report_generate_at(Arena *a, const GenPlan *gp, const PrecisionPolicy *pol, const char *dim,
                           int64_t value);
/* report_choices' ReportOfPolicy over a GenChoiceCtx. */
typedef struct GenChoiceCtx {
    Arena *a;
    const GenPlan *gp;
} GenChoiceCtx;
Report *report_generate_of_policy(void *ctx, const PrecisionPolicy *pol);
/* The dim --fit NAME re-plans under --generate: batch, or max_seq for seq;
 * NULL (after a message) for any other name. */
const char *gen_fit_dim(const char *fit);

void report_generate_text(FILE *out, const Report *r);
struct cJSON;
/* The "generate" object (cli.md): nothing when r has no generation. */
void report_generate_json(struct cJSON *root, const Report *r);
#endif
