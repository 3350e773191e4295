/* tgc build --generate: a decoder compiled twice over one KV cache, the
 * prefill (seq = the chunk, driver/generate.h) and the decoding step
 * (seq = 1), each through tgc build's own steps (build_internal.h) as a
 * program without a main, then linked into one executable whose main is
 * the runtime's rt_gen_main. The two programs declare the same params and
 * states (the cache); the runtime shares them, and one arena sized for the
 * larger of the two, between the programs' contexts. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "driver/build_cc.h"
#include "driver/build_internal.h"
#include "driver/generate.h"
#include "driver/toolchain.h"
#include "passes/logits_row.h"
#include "tgcrt.h"

/* The inputs and outputs rt_gen_main drives, found by the conventions of
 * cli.md "Additions (round 3)": the token ids (the i64 input of rank 2),
 * `pos` (i64[]), `logits` ([batch, seq, vocab], floating). */
typedef struct GenIface {
    int ids, pos, logits;
    int mask, positions; /* an ONNX decoder's attention_mask and position_ids, or -1 */
    int keys_last; /* the prefill attends to its chunk as the cache's last rows (cache_state.h) */
    int row;       /* the prefill's gen_row input (passes/logits_row.h), or -1 */
    int64_t batch, vocab;
    int nstates;
} GenIface;

static bool named(const Value *v, const char *name) {
    return v->name && !strcmp(v->name, name);
}

/* onnx: an ONNX decoder, whose attention_mask and position_ids the
 * runtime fills (their shapes checked there) and whose ids are named. */
static bool find_iface(const char *cmd, const Graph *g, const CgInterface *it, bool onnx,
                       GenIface *gi) {
    gi->ids = gi->pos = gi->logits = gi->mask = gi->positions = gi->row = -1;
    gi->keys_last = 0;
    for (int i = 0; i < it->ninputs; i++) {
        const Value *v = it->inputs[i];
        if (named(v, "pos") && v->dtype == DT_I64 && v->ndim == 0)
            gi->pos = i;
        else if (named(v, LOGITS_ROW_INPUT) && v->dtype == DT_I64 && v->ndim == 1)
            gi->row = i; /* made by the build (logits_row.h), never the user's */
        else if (onnx && named(v, "attention_mask"))
            gi->mask = i;
        else if (onnx && named(v, "position_ids"))
            gi->positions = i;
        else if (v->dtype == DT_I64 && v->ndim == 2 && gi->ids < 0 &&
                 (!onnx || named(v, "input_ids")))
            gi->ids = i;
        else {
            fprintf(stderr,
                    "tgc %s: error: --generate: input '%s' of graph '%s': a generating graph "
                    "takes the token ids (i64[batch, seq]) and its first position `pos` (i64[])%s, "
                    "nothing else\n",
                    cmd, v->name ? v->name : "?", g->name,
                    onnx ? " (an ONNX decoder: input_ids, attention_mask, position_ids and its "
                           "past keys and values)"
                         : "");
            return false;
        }
    }
    for (int i = 0; i < it->noutputs; i++) {
        const Value *v = it->outputs[i];
        if (v->name && !strcmp(v->name, "logits")) gi->logits = i;
    }
    gi->nstates = 0;
    for (int i = 0; i < it->nparams; i++)
        gi->nstates += it->params[i]->state;
    const char *missing = gi->ids < 0      ? "an input of token ids i64[batch, seq]"
                          : gi->pos < 0    ? "an input `pos : i64[]` (the first token's position)"
                          : gi->logits < 0 ? "an output named `logits` [batch, seq, vocab]"
                          : !gi->nstates   ? "a `state` (the KV cache the steps write)"
                                           : NULL;
    if (missing) {
        fprintf(stderr, "tgc %s: error: --generate: graph '%s' has no %s\n", cmd, g->name, missing);
        return false;
    }
    const Value *lg = it->outputs[gi->logits], *ids = it->inputs[gi->ids];
    if (lg->ndim != 3 || !dtype_is_float(lg->dtype) || lg->shape[0] != ids->shape[0] ||
        lg->shape[1] != (gi->row >= 0 ? 1 : ids->shape[1])) {
        fprintf(stderr,
                "tgc %s: error: --generate: output 'logits' of graph '%s' must be floating "
                "[batch, seq, vocab] over the token ids' [batch, seq]\n",
                cmd, g->name);
        return false;
    }
    gi->batch = ids->shape[0];
    gi->vocab = lg->shape[2];
    return true;
}

static const Dim *graph_dim(const Graph *g, const char *name) {
    for (int i = 0; i < g->ndims; i++)
        if (!strcmp(g->dims[i].name, name)) return &g->dims[i];
    return NULL;
}

/* The user's -D list with `seq` set to seq and every range at its upper
 * bound (the batch: a smaller one runs padded, rows being independent). */
static void part_dims(BuildOpts *pb, int64_t seq) {
    bool has_seq = false;
    for (int i = 0; i < pb->o.ndims; i++) {
        DimOverride *d = &pb->o.dims[i];
        d->range = false;
        d->lo = d->value;
        if (!strcmp(d->name, "seq")) {
            d->value = d->lo = seq;
            has_seq = true;
        }
    }
    if (!has_seq) pb->o.dims[pb->o.ndims++] = (DimOverride){"seq", seq, seq, false};
}

/* The graph as the user's flags give it, to read its dims (seq, max_seq). */
static bool read_dims(const BuildOpts *b, int64_t *seq, int64_t *max_seq) {
    Arena a = {0};
    Diag d;
    diag_init(&d, stderr);
    SrcFile file;
    Options o = b->o;
    for (int i = 0; i < o.ndims; i++)
        o.dims[i].range = false;
    Graph *g = load_graph(&a, &d, &o, &file);
    bool ok = g != NULL;
    const Dim *s = g ? graph_dim(g, "seq") : NULL, *m = g ? graph_dim(g, "max_seq") : NULL;
    if (g && (!s || !m)) {
        fprintf(stderr,
                "tgc %s: error: --generate: graph '%s' declares no dimension '%s' (a generating "
                "graph has `seq`, the tokens of a run, and `max_seq`, the cache's length)\n",
                b->cmd, g->name, !s ? "seq" : "max_seq");
        ok = false;
    }
    if (ok) {
        *seq = s->value;
        *max_seq = m->value;
    }
    if (!g && d.errors > 1 && d.out) fprintf(stderr, "%d errors\n", d.errors);
    arena_free(&a);
    return ok;
}

/* onnx: b's -D list is onnx_dims's, the model's own axes. */
static void part_init(Build *s, const BuildOpts *b, const char *part, int64_t seq, bool onnx) {
    memset(s, 0, sizeof *s);
    s->b = *b;
    s->b.gen_part = part;
    s->b.o.gen_cache = onnx;
    s->b.o.gen_logits_row = !strcmp(part, "prefill");
    if (!onnx) part_dims(&s->b, seq);
    build_begin(s);
}

/* The glue over both programs: the executable's main (rt_gen_main), or
 * tgc compile's API (NAME_gen_create, NAME_generate, ...) over rt_gen. */
static bool write_glue(const char *path, Build *parts, const GenIface *gi, int64_t chunk,
                       int64_t max_seq, const char *name, bool api) {
    FILE *f = fopen(path, "w");
    if (!f) return false;
    const char *pre = parts[0].g->name, *step = parts[1].g->name;
    fprintf(f,
            "/* Generated by tgc %s --generate. */\n#include \"tgcrt.h\"\n\n"
            "const RtProgram *%s_program(void);\nconst RtProgram *%s_program(void);\n\n"
            "static RtGenProgram tgc_gen(void) {\n"
            "    RtGenProgram g = {%s_program(), %s_program(), %lld, %lld, %lld, %lld, %d, %d, "
            "%d, %d, %d, %d, %d};\n    return g;\n}\n",
            api ? "compile" : "build", pre, step, pre, step, (long long)gi->batch, (long long)chunk,
            (long long)max_seq, (long long)gi->vocab, gi->ids, gi->pos, gi->logits, gi->mask,
            gi->positions, gi->keys_last, gi->row >= 0);
    if (!api)
        fputs("int main(int argc, char **argv) {\n    RtGenProgram g = tgc_gen();\n"
              "    return rt_gen_main(&g, argc, argv);\n}\n",
              f);
    else
        fprintf(f,
                "typedef struct %1$s_gen %1$s_gen;\n"
                "int %1$s_gen_create(%1$s_gen **out, const char *weights_path, int threads) {\n"
                "    RtGen *g = NULL;\n    if (!out) return (int)TGCRT_ERR_ARG;\n"
                "    RtGenProgram p = tgc_gen();\n"
                "    int s = (int)rt_gen_create(&p, weights_path, threads, &g);\n"
                "    *out = (%1$s_gen *)g;\n    return s;\n}\n"
                "int %1$s_generate(%1$s_gen *g, const int64_t *prompt, int64_t batch, "
                "int64_t prompt_len, int64_t max_new, double temperature, int64_t top_k, "
                "double top_p, uint64_t seed, int64_t *tokens) {\n"
                "    RtSampling s = {temperature, top_k, top_p, seed};\n"
                "    if (!g) return (int)TGCRT_ERR_ARG;\n"
                "    return (int)rt_gen_generate((RtGen *)g, prompt, batch, prompt_len, max_new, "
                "&s, tokens);\n}\n"
                "const char *%1$s_gen_error(const %1$s_gen *g) {\n"
                "    return g ? rt_gen_error((const RtGen *)g) : \"out of memory\";\n}\n"
                "void %1$s_gen_destroy(%1$s_gen *g) { rt_gen_destroy((RtGen *)g); }\n",
                name);
    bool bad = ferror(f);
    return fclose(f) == 0 && !bad;
}

/* tgc compile --generate's header: the API write_glue defines. */
static bool write_header(Build *s, const GenIface *gi, int64_t chunk, int64_t max_seq,
                         const char *name) {
    char line[512];
    if (!link_line_format(&s->needs, NULL, line, sizeof line)) line[0] = '\0';
    FILE *h = rt_afile_stream(&s->hdrf);
    if (!h) return false;
    fprintf(h,
            "/* Generated by tgc compile --generate: text generation with a KV cache over\n"
            " * graph '%1$s' (batch %2$lld, prompt chunks of %3$lld tokens, %4$lld tokens of\n"
            " * context, vocabulary %5$lld). Link: %6$s */\n"
            "#ifndef %1$s_GEN_H\n#define %1$s_GEN_H\n#include <stdint.h>\n\n"
            "typedef struct %1$s_gen %1$s_gen;\n\n"
            "/* Loads the weights (a safetensors file; NULL: embedded or initialisers) and\n"
            " * starts `threads` threads (0: one per core). On failure *out is still set\n"
            " * (NULL only when out of memory): read %1$s_gen_error(*out), then destroy it. */\n"
            "int %1$s_gen_create(%1$s_gen **out, const char *weights_path, int threads);\n"
            "/* prompt: [batch, prompt_len] token ids (1 <= batch <= %2$lld); tokens:\n"
            " * [batch, prompt_len + max_new], the prompt then the new tokens; prompt_len +\n"
            " * max_new <= %4$lld. temperature 0 is greedy; top_k 0 and top_p 1 keep every\n"
            " * token. The cache starts empty at each call. Returns 0 or a status (tgcrt.h\n"
            " * RtStatus) with %1$s_gen_error saying why. */\n"
            "int %1$s_generate(%1$s_gen *g, const int64_t *prompt, int64_t batch, "
            "int64_t prompt_len,\n                 int64_t max_new, double temperature, "
            "int64_t top_k, double top_p,\n                 uint64_t seed, int64_t *tokens);\n"
            "const char *%1$s_gen_error(const %1$s_gen *g); /* \"\" when there was none */\n"
            "void %1$s_gen_destroy(%1$s_gen *g);\n\n#endif\n",
            name, (long long)gi->batch, (long long)chunk, (long long)max_seq, (long long)gi->vocab,
            line);
    return !ferror(h);
}

/* Both programs' objects and the glue over them, linked into -o: an
 * executable, or tgc compile's object and header. */
static bool link_all(Build *parts, const GenIface *gi, int64_t chunk, int64_t max_seq,
                     const char *name) {
    Build *s = &parts[0];
    const BuildOpts *b = &s->b;
    char dir[PATH_MAX + 8], objs[2][PATH_MAX + 32], kern[PATH_MAX + 32], mainc[PATH_MAX + 32];
    snprintf(dir, sizeof dir, "%s/gen", s->tmp);
    if (mkdir(dir, 0700) != 0) {
        fprintf(stderr, "tgc %s: error: cannot create '%s': %s\n", b->cmd, dir, strerror(errno));
        return false;
    }
    for (int k = 0; k < 2; k++) {
        snprintf(objs[k], sizeof objs[k], "%s/part%d.o", dir, k);
        if (build_cc_link_object(b->cmd, parts[k].tmp, true, objs[k], parts[k].g->name))
            return false;
    }
    /* Both programs as the kernels' object of the main's link. */
    snprintf(kern, sizeof kern, "%s/kernels.o", dir);
    char *argv[] = {(char *)toolchain_cc(), "-r", "-nostdlib", "-o", kern, objs[0], objs[1], NULL};
    if (toolchain_exec(argv, false) != 0) {
        fprintf(stderr, "tgc %s: error: cannot link the prefill and step programs\n", b->cmd);
        return false;
    }
    snprintf(mainc, sizeof mainc, "%s/glue.c", dir);
    bool api = b->mode == MODE_COMPILE;
    if (!write_glue(mainc, parts, gi, chunk, max_seq, name, api)) {
        fprintf(stderr, "tgc %s: error: cannot write '%s': %s\n", b->cmd, mainc, strerror(errno));
        return false;
    }
    int rc = build_cc_glue(b->cmd, s->inc, dir, api, !api);
    if (rc) {
        s->rc = rc;
        return false;
    }
    snprintf(s->scratch, sizeof s->scratch, "%s/link.out", s->tmp);
    s->dest = rt_afile_path(&s->outf) ? rt_afile_path(&s->outf) : s->scratch;
    if (api)
        return !build_cc_link_object(b->cmd, dir, true, s->dest, b->out) &&
               write_header(s, gi, chunk, max_seq, name);
    return !build_cc_link_exe(b->cmd, s->lib, dir, true, &s->needs, s->dest, b->out);
}

/* Copies what f holds (a plan's captured messages) to stderr and closes
 * it; first: its first line, when asked for (n > 0). */
static void flush_messages(FILE *f, char *first, size_t n) {
    rewind(f);
    char line[1024];
    bool any = false;
    while (fgets(line, sizeof line, f)) {
        if (first && !any) {
            snprintf(first, n, "%s", line);
            first[strcspn(first, "\n")] = '\0';
        } else if (!first) {
            fputs(line, stderr);
        }
        any = true;
    }
    fclose(f);
}

/* An ONNX decoder's prefill (s, its options pb) at the chunk; a model
 * that does not build for one (an axis fixed at one token, a reshape
 * that needs it) falls back to one token a run, with a note: its prompt
 * is then fed as the decoding's steps (slower, the same tokens). The step
 * is planned before, so that the model's own errors are reported there. */
static bool plan_onnx_prefill(const GenOnnx *m, Arena *names, Build *s, BuildOpts *pb,
                              const BuildOpts *step, int64_t *chunk) {
    if (*chunk > 1) {
        FILE *msgs = tmpfile();
        if (!msgs) {
            fprintf(stderr, "tgc %s: error: cannot create a temporary file: %s\n", pb->cmd,
                    strerror(errno));
            part_init(s, pb, "prefill", *chunk, true);
            return false;
        }
        bool ok = generate_onnx_dims(m, m->batch, m->max_seq, *chunk, names, msgs, pb->o.dims,
                                     &pb->o.ndims);
        part_init(s, pb, "prefill", *chunk, true);
        if (ok) {
            s->d.out = msgs;
            ok = build_plan(s);
            s->d.out = stderr;
            if (ok || s->rc > 1) { /* planned (its warnings shown), or not the chunk's fault */
                flush_messages(msgs, NULL, 0);
                return ok;
            }
        }
        char first[1024] = "";
        flush_messages(msgs, first, sizeof first);
        fprintf(stderr,
                "tgc %s: note: --generate: %s: the model does not build for a chunk of %lld "
                "tokens, so the prompt runs one token a run (%s)\n",
                pb->cmd, pb->o.file, (long long)*chunk, first);
        *chunk = 1;
        build_end(s);
    }
    memcpy(pb->o.dims, step->o.dims, sizeof pb->o.dims);
    pb->o.ndims = step->o.ndims;
    part_init(s, pb, "prefill", 1, true);
    return build_plan(s);
}

static int refuse(const BuildOpts *b, const char *why) {
    fprintf(stderr, "tgc %s: error: --generate: %s\n", b->cmd, why);
    return 1;
}

int cmd_generate(const BuildOpts *b) {
    if (b->mode == MODE_RUN)
        return refuse(b, "tgc run does not generate; tgc build --generate makes the program");
    if (b->target && !strcmp(b->target, "cuda"))
        return refuse(b, "generating programs are built for the CPU only in this version");
    if (b->o.tf.loss) return refuse(b, "a generating program does not train (--train)");
    if (b->emit_kind) return refuse(b, "--emit is not supported with --generate");
    bool onnx = onnx_is_model_path(b->o.file);
    int64_t seq, max_seq, chunk;
    Arena names = {0};          /* generate_onnx's -D names, which the parts point at */
    BuildOpts ob[2] = {*b, *b}; /* the prefill's and the step's */
    GenOnnx m;
    if (onnx) {
        if (!generate_onnx_read(b->cmd, &b->o, 0, &names, &m) ||
            !generate_onnx_dims(&m, m.batch, m.max_seq, 1, &names, stderr, ob[1].o.dims,
                                &ob[1].o.ndims)) {
            arena_free(&names);
            return 1;
        }
        max_seq = m.max_seq;
        chunk = generate_onnx_chunk(m.seq_hi, max_seq);
    } else {
        if (!read_dims(b, &seq, &max_seq)) return 1;
        chunk = generate_chunk(seq, max_seq);
        if (chunk < 1 || max_seq < 1) return refuse(b, "seq and max_seq must be at least 1");
    }
    Build parts[2];
    int rc = 1;
    GenIface gi[2];
    bool ok = true;
    if (onnx) {
        part_init(&parts[1], &ob[1], "step", 1, true);
        ok = build_plan(&parts[1]) &&
             find_iface(b->cmd, parts[1].g, &parts[1].p.iface, true, &gi[1]);
        if (ok)
            ok = plan_onnx_prefill(&m, &names, &parts[0], &ob[0], &ob[1], &chunk) &&
                 find_iface(b->cmd, parts[0].g, &parts[0].p.iface, true, &gi[0]);
        else
            part_init(&parts[0], &ob[0], "prefill", chunk, true);
        gi[0].keys_last = chunk > 1;
    } else {
        part_init(&parts[0], &ob[0], "prefill", chunk, false);
        part_init(&parts[1], &ob[1], "step", 1, false);
        for (int k = 0; ok && k < 2; k++)
            ok = build_plan(&parts[k]) &&
                 find_iface(b->cmd, parts[k].g, &parts[k].p.iface, false, &gi[k]);
    }
    /* -o, begun once both programs are planned (the parts do not). */
    int e = ok ? rt_afile_begin(&parts[0].outf, b->out) : 0;
    const char *failed = b->out;
    if (!e && ok && b->mode == MODE_COMPILE) {
        e = rt_afile_begin(&parts[0].hdrf, b->header);
        failed = b->header;
    }
    if (e) {
        fprintf(stderr, "tgc %s: error: cannot write '%s': %s\n", b->cmd, failed, strerror(e));
        ok = false;
    }
    /* One arena serves both: each program declares the larger size. */
    int64_t arena = 0;
    for (int k = 0; ok && k < 2; k++)
        if (parts[k].p.plan->arena_bytes > arena) arena = parts[k].p.plan->arena_bytes;
    for (int k = 0; ok && k < 2; k++) {
        ok = build_stage(&parts[k]) && build_emit(&parts[k]);
        ((MemPlan *)parts[k].p.plan)->arena_bytes = arena; /* planned by this build */
        /* The weights are the prefill's (the context that owns them); the
         * step shares them. */
        if (k == 1) parts[k].b.embed = false;
        ok = ok && build_glue_compile(&parts[k]);
    }
    /* The API's prefix: the graph's own name. */
    const char *name = ok ? arena_strdup(&parts[0].a, parts[0].g->name) : NULL;
    if (name)
        name = arena_printf(&parts[0].a, "%.*s", (int)(strlen(name) - strlen("_prefill")), name);
    if (ok && link_all(parts, &gi[0], chunk, max_seq, name) && build_publish(&parts[0])) rc = 0;
    if (!ok || rc) {
        for (int k = 0; k < 2; k++)
            if (parts[k].rc > 1) rc = parts[k].rc;
    }
    build_end(&parts[0]);
    build_end(&parts[1]);
    arena_free(&names);
    return rc;
}
