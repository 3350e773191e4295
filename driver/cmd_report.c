/* tgc report: memory planning and the memory-fit report. Parses report's
 * own flags, hands the shared ones (-D, --json, FILE) to options_parse,
 * builds the Report and, for --fit, re-plans the graph at other values of
 * one symbolic dimension. */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "driver/driver.h"
#include "driver/accuracy.h"
#include "driver/outputs.h"
#include "driver/report.h"
#include "driver/report_checkpoint.h"
#include "driver/report_cpu.h"
#include "driver/report_generate.h"
#include "driver/report_train.h"
#include "frontend/onnx/onnx_import.h"
#include "support/atomic_file.h"

#define FIT_CAP ((int64_t)1 << 31)

static const char *USAGE =
    "tgc report FILE [-D NAME=VALUE]... [--json] [--device NAME | --budget SIZE]\n"
    "                  [--fit NAME] [--precision P] [--precision-io D] [--quantize int8|int4]\n"
    "                  [--group-size N] [--accuracy N [--weights W]] [--target cpu|cuda]\n"
    "                  [--html FILE] [--train LOSS [--optimizer O] [--shard N [--zero 1|2|3]]\n"
    "                  [--checkpoint auto] ...] [--cpu LEVEL,...] [--threads N]\n"
    "       tgc report MODEL --generate --max-seq S [--fit batch|seq] [-D batch=B|LO:HI]\n"
    "                  [-D seq=LO:HI] [--cache-dtype f32|f16|bf16] [...]\n"
    "       tgc report --list-devices [--json]";

static void help(void) {
    printf("usage: %s\n\n", USAGE);
    printf(
        "Plans the graph's memory and reports whether it fits, and with how much room.\n\n"
        "  -D NAME=VALUE      set a symbolic dimension\n"
        "  --json             one JSON object on stdout (keys in cli.md)\n"
        "  --device NAME      a device preset (see --list-devices); a GPU implies --target cuda\n"
        "  --budget SIZE      a memory budget: 24GiB, 24GB (10^9), 512MiB, or bytes\n"
        "  --fit NAME         the largest value of dimension NAME whose peak fits the "
        "budget\n" PRECISION_FLAGS_HELP
        "  --accuracy N       build the graph under each storage choice and in f32, run both on\n"
        "                     N random inputs and report the max absolute and relative error\n"
        "  --weights W        the weights --accuracy runs with (default: "
        "uniform(+-1/sqrt(fan_in))\n"
        "                     for params without an initialiser)\n"
        "  --target T         cpu (default) or cuda (adds the CUDA runtime's fixed needs)\n"
        "  --cpu LEVEL,...    the CPU levels tgc build --cpu would compile (default: this\n"
        "                     machine's CPU): what each needs and which one this CPU runs\n"
        "  --threads N        the thread count the program runs with (0, the default: one per\n"
        "                     online core): the process's runtime and library memory\n"
        "  --html FILE        also write a self-contained HTML page with the "
        "charts\n" TRAIN_FLAGS_HELP
        "  --shard N          --train: the per-device peak over N devices as DeepSpeed's ZeRO\n"
        "                     counts it (on paper); the verdict and --fit use it\n"
        "  --zero 1|2|3       with --shard: split optimizer states (1), and gradients (2),\n"
        "                     and params (3, the default)\n"
        "  --checkpoint auto  --train with a budget: recompute activations in the backward pass\n"
        "                     instead of keeping them, until the peak fits (extra FLOPs shown)\n"
        "  --generate         a generating executable (tgc build --generate): weights, the KV\n"
        "                     cache (the graph's states), the larger arena of the prefill\n"
        "                     (seq = the prompt's chunk) and the decode step (seq = 1)\n"
        "  --max-seq S        --generate: the cache's length in tokens (the dimension max_seq)\n"
        "  --cache-dtype D    --generate: the KV cache's dtype, f32, f16 or bf16 (default: the\n"
        "                     states' storage dtype under --precision)\n"
        "  --list-devices     print the device presets and their memory sizes\n");
}

typedef struct ReportOpts {
    const char *device, *budget, *fit, *target, *html, *accuracy, *weights, *shard, *checkpoint,
        *zero, *cpu, *threads, *max_seq, *cache_dtype;
    bool list_devices, json, help, generate;
} ReportOpts;

static int usage_error(const char *msg, const char *arg) {
    fprintf(stderr, "tgc report: %s%s%s\nusage: %s\n", msg, arg ? " " : "", arg ? arg : "", USAGE);
    return 2;
}

/* Takes report's own flags out of argv (into ro) and leaves the rest, in
 * order, in rest[] for options_parse. Returns 0 or an exit code. */
static int split_args(int argc, char **argv, ReportOpts *ro, char **rest, int *nrest) {
    static const struct {
        const char *flag;
        size_t off;
    } valued[] = {
        {"--device", offsetof(ReportOpts, device)},
        {"--budget", offsetof(ReportOpts, budget)},
        {"--fit", offsetof(ReportOpts, fit)},
        {"--target", offsetof(ReportOpts, target)},
        {"--html", offsetof(ReportOpts, html)},
        {"--accuracy", offsetof(ReportOpts, accuracy)},
        {"--weights", offsetof(ReportOpts, weights)},
        {"--shard", offsetof(ReportOpts, shard)},
        {"--checkpoint", offsetof(ReportOpts, checkpoint)},
        {"--zero", offsetof(ReportOpts, zero)},
        {"--cpu", offsetof(ReportOpts, cpu)},
        {"--threads", offsetof(ReportOpts, threads)},
        {"--max-seq", offsetof(ReportOpts, max_seq)},
        {"--cache-dtype", offsetof(ReportOpts, cache_dtype)},
    };
    *nrest = 0;
    rest[(*nrest)++] = argv[0];
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        bool taken = false;
        for (size_t k = 0; k < sizeof valued / sizeof *valued && !taken; k++) {
            size_t n = strlen(valued[k].flag);
            if (strncmp(a, valued[k].flag, n) || (a[n] && a[n] != '=')) continue;
            const char *v = a[n] == '=' ? a + n + 1 : (i + 1 < argc ? argv[++i] : NULL);
            if (!v) return usage_error("missing value after", valued[k].flag);
            *(const char **)((char *)ro + valued[k].off) = v;
            taken = true;
        }
        if (taken) continue;
        if (!strcmp(a, "--list-devices")) {
            ro->list_devices = true;
        } else if (!strcmp(a, "--generate")) {
            ro->generate = true;
        } else if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            ro->help = true;
        } else {
            if (!strcmp(a, "--json")) ro->json = true;
            rest[(*nrest)++] = argv[i];
            /* -D's value travels with it, even when it looks like a flag. */
            if (!strcmp(a, "-D") && i + 1 < argc) rest[(*nrest)++] = argv[++i];
        }
    }
    return 0;
}

static const TrainSpec *train_spec(const Options *o) {
    return o->has_train ? &o->train : NULL;
}

typedef struct FitCtx {
    const CkptInput *in; /* the source, options and budget, as the checkpoint search's */
    const GenPlan *gen;  /* --generate: both programs are planned at each value */
    int64_t failed_value;
    int evaluations;
} FitCtx;

/* The peak at DIM = value, from a fresh compilation and plan; -1 when the
 * graph does not compile there (messages are not printed). */
static int64_t peak_at(FitCtx *c, const char *dim, int64_t value) {
    const CkptInput *in = c->in;
    if (c->gen) {
        Arena a = {0};
        PrecisionPolicy pol = options_policy(in->o);
        Report *r = report_generate_at(&a, c->gen, &pol, dim, value);
        int64_t peak = r ? r->peak_bytes : -1;
        if (!r && !c->failed_value) c->failed_value = value;
        arena_free(&a);
        c->evaluations++;
        return peak;
    }
    DimOverride *ov = calloc((size_t)in->o->ndims + 1, sizeof *ov);
    int n = 0;
    for (int i = 0; i < in->o->ndims; i++)
        if (strcmp(in->o->dims[i].name, dim)) ov[n++] = in->o->dims[i];
    ov[n++] = (DimOverride){dim, value, value, false};
    Arena a = {0};
    Diag d;
    diag_init(&d, NULL);
    PrecisionPolicy pol = options_policy(in->o);
    Graph *g = tgc_frontend_train(&a, &d, in->file, ov, n, &pol, train_spec(in->o));
    int64_t peak = -1;
    if (g && !d.errors) {
        Report *r = report_build(&a, g, in->prec, in->target);
        report_train_build(r, in->shard, in->zero);
        peak = report_fit_bytes(r);
    } else if (!c->failed_value)
        c->failed_value = value;
    arena_free(&a);
    free(ov);
    c->evaluations++;
    return peak;
}

/* The peak at the first value in [v, limit) where the graph compiles,
 * trying at most FIT_HOLE values (a dimension may only allow, say, even
 * values); -1 when none compiles. *at is the value used. */
#define FIT_HOLE 64
static int64_t probe(FitCtx *c, const char *dim, int64_t v, int64_t limit, int64_t *at) {
    for (int64_t k = v; k < limit && k < v + FIT_HOLE; k++) {
        int64_t p = peak_at(c, dim, k);
        if (p >= 0) {
            *at = k;
            return p;
        }
    }
    return -1;
}

/* Doubling, then bisection: lo always fits, hi never does (too big, or no
 * compilation there), so the answer fits and answer + 1 does not, even
 * where the peak is not monotone. */
static void fit_search(FitCtx *c, ReportFit *f) {
    int64_t at = 1, p;
    f->cap = FIT_CAP;
    f->first_value = 1;
    p = probe(c, f->dim, 1, FIT_HOLE + 1, &at);
    if (p < 0 || p > c->in->budget) {
        f->value = 0;
        f->peak_at = -1;
        f->peak_next = p;
        f->first_value = p < 0 ? 0 : at;
        return;
    }
    int64_t lo = at, lo_peak = p, hi, hi_peak = -1;
    for (;;) {
        hi = lo * 2;
        if (hi > FIT_CAP) {
            f->capped = true;
            f->value = lo;
            f->peak_at = lo_peak;
            f->peak_next = -1;
            return;
        }
        p = probe(c, f->dim, hi, hi + FIT_HOLE, &at);
        if (p < 0) break;
        if (p > c->in->budget) {
            hi = at, hi_peak = p;
            break;
        }
        lo = at, lo_peak = p;
    }
    while (hi - lo > 1) {
        int64_t mid = lo + (hi - lo) / 2;
        p = probe(c, f->dim, mid, hi, &at);
        if (p >= 0 && p <= c->in->budget)
            lo = at, lo_peak = p;
        else if (p >= 0 && at == mid)
            hi = mid, hi_peak = p;
        else
            hi = mid,
            hi_peak = -1; /* mid does not compile; larger ones do not fit or compile either */
    }
    f->value = lo;
    f->peak_at = lo_peak;
    f->peak_next = hi_peak;
}

static bool has_dim(const Graph *g, const char *name) {
    for (int i = 0; i < g->ndims; i++)
        if (!strcmp(g->dims[i].name, name)) return true;
    return false;
}

static void list_dims(const Graph *g) {
    if (!g->ndims) {
        fprintf(stderr, "  graph '%s' declares no symbolic dimensions\n", g->name);
        return;
    }
    fprintf(stderr, "  the graph's dimensions:");
    for (int i = 0; i < g->ndims; i++)
        fprintf(stderr, " %s", g->dims[i].name);
    fprintf(stderr, "\n");
}

/* Checks report's own flag values; fills in budget and target. */
static int check_values(const ReportOpts *ro, const Options *o, Precision *prec, Target *target,
                        const Device **dev, int64_t *budget) {
    *prec = o->prec;
    if (ro->target && strcmp(ro->target, "cpu") && strcmp(ro->target, "cuda")) {
        fprintf(stderr, "tgc report: error: --target %s: expected cpu or cuda\n", ro->target);
        return 1;
    }
    if (ro->device && ro->budget) return usage_error("give --device or --budget, not both", NULL);
    *dev = NULL;
    if (ro->device) {
        *dev = devices_find(ro->device);
        if (!*dev) {
            fprintf(stderr, "tgc report: error: unknown device '%s'; known devices:", ro->device);
            for (int i = 0; i < devices_count(); i++)
                fprintf(stderr, " %s", devices_get(i)->name);
            fprintf(stderr, "\n  (tgc report --list-devices shows their sizes; --budget SIZE sets "
                            "any other)\n");
            return 1;
        }
        if ((*dev)->bytes <= 0) {
            fprintf(
                stderr,
                "tgc report: error: cannot read this machine's memory size from /proc/meminfo\n");
            return 1;
        }
        *budget = (*dev)->bytes;
    }
    if (ro->budget && !devices_parse_size(ro->budget, budget)) {
        fprintf(stderr,
                "tgc report: error: --budget %s: expected a size such as 24GiB, 24GB (10^9 bytes), "
                "512MiB "
                "or a number of bytes\n",
                ro->budget);
        return 1;
    }
    if (ro->fit && !ro->device && !ro->budget)
        return usage_error("--fit needs --device NAME or --budget SIZE", NULL);
    *target = ro->target ? (strcmp(ro->target, "cuda") ? TARGET_CPU : TARGET_CUDA)
                         : (*dev && (*dev)->gpu ? TARGET_CUDA : TARGET_CPU);
    return 0;
}

typedef struct ChoiceCtx {
    Arena *a;
    const SrcFile *file;
    const Options *o;
    Target target;
    int shard, zero; /* --shard: the rows' peaks are per device, as the verdict's */
} ChoiceCtx;

static Report *report_of_policy(void *ctx, const PrecisionPolicy *pol) {
    ChoiceCtx *c = ctx;
    Diag d;
    diag_init(&d, NULL);
    Graph *g =
        tgc_frontend_train(c->a, &d, c->file, c->o->dims, c->o->ndims, pol, train_spec(c->o));
    if (!g || d.errors) return NULL;
    Report *r = report_build(c->a, g, pol->prec, c->target);
    report_train_build(r, c->shard, c->zero);
    return r;
}

/* --accuracy: the report's own policy, then every storage choice. */
static bool measure_accuracy(Report *r, const ReportOpts *ro, const Options *o, const SrcFile *file,
                             int runs) {
    Diag d;
    diag_init(&d, NULL);
    Graph *declared = tgc_frontend(r->a, &d, file, o->dims, o->ndims, NULL);
    AccSession s;
    bool ok = declared && accuracy_begin(&s, o, declared, ro->weights, runs);
    PrecisionPolicy pol = options_policy(o);
    if (ok) {
        r->acc = arena_alloc(r->a, sizeof(Accuracy));
        ok = accuracy_measure(&s, &pol, r->g, r->acc);
    }
    for (int q = 0; ok && q < r->nquant; q++) {
        ReportQuant *row = &r->quant[q];
        if (row->peak_bytes < 0) continue;
        Accuracy acc = {0};
        ok = accuracy_measure(&s, &row->policy, r->g, &acc);
        if (ok) {
            row->has_error = true;
            row->max_abs = acc.max_abs;
            row->max_rel = acc.max_rel;
        }
        free(acc.out);
    }
    r->acc_runs = runs;
    r->acc_synthesized = ok && s.synthesized;
    if (declared) accuracy_end(&s);
    return ok;
}

/* A whole number from lo to hi for flag (what: "a run count"), into
 * *out; false after saying what was expected. */
static bool count_arg(const char *flag, const char *s, const char *what, long lo, long hi,
                      int *out) {
    char *end;
    errno = 0;
    long n = strtol(s, &end, 10);
    if (errno || end == s || *end || n < lo || n > hi) {
        fprintf(stderr, "tgc report: error: %s %s: expected %s from %ld to %ld\n", flag, s, what,
                lo, hi);
        return false;
    }
    *out = (int)n;
    return true;
}

/* --generate's flags (and the ones that do not go with it): 0, or the
 * exit code after a message. *max_seq 0 when --max-seq is not given. */
static int generate_args(const ReportOpts *ro, const Options *o, int64_t *max_seq, DType *cache) {
    *max_seq = 0;
    *cache = DT_NONE;
    if (!ro->generate) {
        if (ro->max_seq || ro->cache_dtype)
            return usage_error(ro->max_seq ? "--max-seq needs --generate"
                                           : "--cache-dtype needs --generate",
                               NULL);
        return 0;
    }
    const char *other = ro->html         ? "--html"
                        : ro->accuracy   ? "--accuracy"
                        : ro->checkpoint ? "--checkpoint"
                        : ro->shard      ? "--shard"
                        : ro->zero       ? "--zero"
                                         : NULL;
    if (other) {
        fprintf(stderr, "tgc report: error: %s does not apply to --generate\n", other);
        return 1;
    }
    int rc = gen_check_options(o);
    if (rc) return rc;
    if (ro->max_seq) {
        char *end;
        errno = 0;
        long long n = strtoll(ro->max_seq, &end, 10);
        if (errno || end == ro->max_seq || *end || n < 1 || n > FIT_CAP) {
            fprintf(stderr,
                    "tgc report: error: --max-seq %s: expected the cache's length in tokens, from "
                    "1 to %lld\n",
                    ro->max_seq, (long long)FIT_CAP);
            return 1;
        }
        *max_seq = n;
    }
    if (ro->cache_dtype && !gen_parse_cache_dtype("report", ro->cache_dtype, cache)) return 1;
    if (ro->fit && !gen_fit_dim(ro->fit)) return 1;
    return 0;
}

static int run(const ReportOpts *ro, const Options *o) {
    Precision prec;
    Target target;
    const Device *dev;
    int64_t budget = 0;
    /* Interrupted, the page's temporary and --accuracy's builds go too. */
    rt_tmp_install_signals();
    int rc = check_values(ro, o, &prec, &target, &dev, &budget);
    int64_t max_seq;
    DType cache_dtype;
    if (!rc) rc = generate_args(ro, o, &max_seq, &cache_dtype);
    if (rc) return rc;
    /* as tgc build compiles it for the target (passes/train.h) */
    ((Options *)o)->train.attn_dropout_written = target == TARGET_CUDA;
    Arena a = {0};
    Diag d;
    diag_init(&d, stderr);
    SrcFile file;
    /* The first load keeps an ONNX import for its list of external data
     * files (later loads, for --fit and the choices, drop theirs). */
    OnnxImport im;
    memset(&im, 0, sizeof im);
    Options first = *o;
    first.onnx_out = &im;
    const GenOnnx *onnx = NULL;
    if (ro->generate && (rc = gen_declared_dims(o, &first, max_seq, &a, &onnx))) {
        arena_free(&a);
        return rc;
    }
    Graph *g = load_graph(&a, &d, &first, &file);
    /* Before anything is written: --html may not be a file read, the
     * model's external data included (cli.md). */
    IoSet io;
    ioset_init(&io, "report");
    ioset_read(&io, "the input graph", o->file);
    ioset_read(&io, "the weights", ro->weights);
    ioset_read_all(&io, "the model's external data", im.data_files, im.ndata_files);
    ioset_write(&io, "--html", ro->html);
    bool distinct = !g || ioset_check(&io);
    ioset_free(&io);
    onnx_import_free(&im);
    if (!g || !distinct) {
        if (!g && d.errors > 1 && d.out) fprintf(stderr, "%d errors\n", d.errors);
        arena_free(&a);
        return 1;
    }
    /* --generate: g is the graph as given; the report is the prefill
     * program's (the options og), finished with the decode step's. */
    Options og;
    GenPlan gp;
    const char *fit = ro->fit;
    if (ro->generate) {
        rc = gen_prepare(g, o, &file, max_seq, cache_dtype, onnx, &og, &gp);
        if (rc) {
            arena_free(&a);
            return rc;
        }
        gp.target = target;
        gp.fit = ro->fit;
        if (fit) fit = gen_fit_dim(fit);
        o = &og;
        PrecisionPolicy pol = options_policy(o);
        g = gen_prefill_graph(&a, &d, &gp, &pol);
        if (!g) {
            arena_free(&a);
            return 1;
        }
    }
    /* (an ONNX decoder's axes have the model's names; its plans set them) */
    if (fit && !onnx && !has_dim(g, fit)) {
        fprintf(stderr, "tgc report: error: --fit %s: graph '%s' has no dimension '%s'\n", ro->fit,
                g->name, fit);
        list_dims(g);
        arena_free(&a);
        return 1;
    }
    int runs = 0, threads = 0;
    if (ro->accuracy && !count_arg("--accuracy", ro->accuracy, "a run count", 1, 10000, &runs)) {
        arena_free(&a);
        return 1;
    }
    if (ro->weights && !runs) {
        fprintf(stderr, "tgc report: error: --weights is only used by --accuracy N\n");
        arena_free(&a);
        return 1;
    }
    if (ro->threads &&
        !count_arg("--threads", ro->threads, "a thread count", 0, TGCRT_MAX_THREADS, &threads)) {
        arena_free(&a);
        return 1;
    }
    int shard, zero;
    if (report_train_shard_args(ro->shard, ro->zero, o->has_train, &shard, &zero)) {
        arena_free(&a);
        return 1;
    }
    if (runs && o->has_train) {
        fprintf(stderr, "tgc report: error: --accuracy does not apply to --train\n");
        arena_free(&a);
        return 1;
    }
    if (ro->checkpoint &&
        (strcmp(ro->checkpoint, "auto") || !o->has_train || (!ro->device && !ro->budget))) {
        fprintf(stderr, "tgc report: error: --checkpoint %s: %s\n", ro->checkpoint,
                strcmp(ro->checkpoint, "auto") ? "expected auto"
                : !o->has_train                ? "needs --train LOSS"
                                               : "needs --budget SIZE or --device NAME");
        arena_free(&a);
        return 1;
    }
    /* Kept apart from r: the checkpoint search below may build r again. */
    ReportCpu *cpu = NULL;
    if (target == TARGET_CPU) {
        char cerr[512];
        cpu = ARENA_NEW(&a, ReportCpu);
        if (!report_cpu_levels(ro->cpu, cpu, cerr, sizeof cerr)) {
            fprintf(stderr, "tgc report: error: --cpu %s: %s\n", ro->cpu ? ro->cpu : "", cerr);
            arena_free(&a);
            return 2;
        }
    }
    Report *r = report_build(&a, g, prec, target);
    PrecisionPolicy base = options_policy(o);
    if (ro->generate && !report_generate_finish(r, &gp, &base, stderr)) {
        fprintf(stderr,
                "tgc report: error: --generate: graph '%s' does not compile as the decode step "
                "(seq = 1)\n",
                g->name);
        arena_free(&a);
        return 1;
    }
    /* What the checkpoint search and the --fit search compile and plan. */
    CkptInput plan = {.file = &file,
                      .o = o,
                      .prec = prec,
                      .target = target,
                      .budget = budget,
                      .shard = shard,
                      .zero = zero};
    CkptResult *ck = NULL;
    if (ro->checkpoint) {
        ck = ARENA_NEW(&a, CkptResult);
        report_train_build(r, shard, zero); /* the per-device peak, under --shard */
        report_checkpoint_search(&a, &plan, r, ck);
        if (ck->n) { /* the report of the checkpointed step */
            Options *om = (Options *)o;
            om->train.recompute = ck->ids;
            om->train.nrecompute = ck->n;
            g = load_graph(&a, &d, o, &file);
            if (!g) {
                arena_free(&a);
                return 1;
            }
            r = report_build(&a, g, prec, target);
        }
    }
    report_train_build(r, shard, zero);
    /* The whole process on the CPU: the runtime and its libraries at the
     * run's thread count (issue 32). */
    report_process_runtime(&r->proc, r->g, r->dt, target == TARGET_CUDA, threads, r->peak_bytes);
    r->cpu = cpu;
    if (r->train) r->train->ckpt = ck;
    ChoiceCtx cc = {.a = &a, .file = &file, .o = o, .target = target, .shard = shard, .zero = zero};
    GenChoiceCtx gc = {.a = &a, .gp = &gp};
    if (ro->generate)
        report_choices(r, &base, report_generate_of_policy, &gc);
    else
        report_choices(r, &base, report_of_policy, &cc);
    if (runs && !measure_accuracy(r, ro, o, &file, runs)) {
        if (r->acc) free(r->acc->out);
        arena_free(&a);
        return 1;
    }
    if (ro->device || ro->budget) {
        r->has_budget = true;
        r->budget_bytes = budget;
        r->budget_name = dev ? dev->name : "custom";
        r->budget_label = dev ? dev->name : arena_printf(&a, "a budget of %s", ro->budget);
    }
    if (dev && ro->target && dev->gpu != (target == TARGET_CUDA))
        r->note = dev->gpu ? "the device is a GPU but --target cpu was given: the CUDA runtime's "
                             "fixed needs are not counted"
                           : "--target cuda with the cpu device: the CUDA runtime's fixed needs "
                             "are counted against RAM";
    /* The text report answers "the largest batch that fits" in its first lines
     * unasked when there is a budget and a dimension named batch (the JSON's
     * max_fit stays --fit's, as cli.md says). */
    const char *fit_dim = fit;
    if (!fit_dim && !o->json && r->has_budget && (onnx || has_dim(g, "batch"))) fit_dim = "batch";
    if (fit_dim) {
        FitCtx c = {.in = &plan, .gen = ro->generate ? &gp : NULL};
        r->fit.present = true;
        r->fit.dim = fit_dim;
        fit_search(&c, &r->fit);
        r->fit.evaluations = c.evaluations;
        r->fit.failed_value = c.failed_value;
    }
    if (ro->html && !report_html(ro->html, r)) {
        fprintf(stderr, "tgc report: error: cannot write '%s': %s\n", ro->html, strerror(errno));
        if (r->acc) free(r->acc->out);
        arena_free(&a);
        return 1;
    }
    if (o->json) {
        char *s = report_json(r);
        puts(s);
        free(s);
    } else {
        report_text(stdout, r);
    }
    if (r->acc) free(r->acc->out);
    arena_free(&a);
    return 0;
}

int cmd_report(int argc, char **argv) {
    ReportOpts ro = {0};
    char **rest = calloc((size_t)argc + 1, sizeof *rest);
    int nrest = 0;
    int rc = split_args(argc, argv, &ro, rest, &nrest);
    if (rc || ro.help || ro.list_devices) {
        if (!rc && ro.help)
            help();
        else if (!rc && ro.json) {
            char *s = devices_list_json();
            puts(s);
            free(s);
        } else if (!rc) {
            devices_list_text(stdout);
        }
        free(rest);
        return rc;
    }
    Options o;
    rc = options_parse(&o, nrest, rest, USAGE);
    /* --generate takes ranges for batch and seq (generate_args) */
    if (!rc && !ro.generate && options_refuse_ranges("report", o.dims, o.ndims)) rc = 1;
    o.weights = ro.weights;
    if (!rc)
        rc = run(&ro, &o);
    else if (rc < 0)
        rc = 0;
    options_free(&o);
    free(rest);
    return rc;
}
