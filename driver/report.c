/* `tgc report`'s figures: counts, the memory plan, the weights' storage
 * choices, the target's fixed needs, and the assumptions behind them. */
#include "driver/report.h"

#include "codegen/codegen.h"

#include <stdlib.h>
#include <string.h>

#include "driver/report_train.h"
#include "passes/flops.h"
#include "passes/fusion.h"

const char *report_target_name(Target t) {
    return t == TARGET_CUDA ? "cuda" : "cpu";
}

/* The precision to show when the graph keeps its declared dtypes: the one
 * floating dtype it uses, or "mixed". */
static const char *declared_precision(const Graph *g) {
    DType seen = DT_NONE;
    for (int i = 0; i < g->nvalues; i++) {
        const Value *v = g->values[i];
        if (v->dead || v->op == OP_SCALAR || !dtype_is_float(v->dtype)) continue;
        if (seen == DT_NONE)
            seen = v->dtype;
        else if (seen != v->dtype)
            return "mixed";
    }
    return seen == DT_NONE ? "declared" : dtype_name(seen);
}

/* The storage choices (the by_dtype table): each row is what `tgc build`
 * with that --precision (or --quantize, over the report's own precision)
 * would plan, from a fresh compilation by fn; then ranked by peak. */
void report_choices(Report *r, const PrecisionPolicy *base, ReportOfPolicy fn, void *ctx) {
    static const char *names[REPORT_NQUANT] = {"f32",       "bf16", "f16", "mixed-bf16",
                                               "mixed-f16", "int8", "int4"};
    static const Precision precs[REPORT_NQUANT] = {PREC_F32, PREC_BF16, PREC_F16, PREC_MIXED_BF16,
                                                   PREC_MIXED_F16};
    /* A training step builds only f32 and the mixed precisions (f32 master
     * weights): pure bf16/f16 and --quantize are refused for training
     * (driver/train_options.c), so their rows have no figures (-1, as a
     * choice that does not build; cli.md keeps every row in by_dtype) and
     * the text and HTML reports leave them out. */
    bool train = r->g->backward_id > 0;
    r->nquant = REPORT_NQUANT;
    for (int q = 0; q < REPORT_NQUANT; q++) {
        ReportQuant *row = &r->quant[q];
        memset(row, 0, sizeof *row);
        row->dtype = names[q];
        if (train && q != 0 && q != 3 && q != 4) {
            row->refused = true;
            row->params_bytes = row->peak_bytes = -1;
            row->scheme = q < 3 ? "refused by --train, which keeps f32 master weights"
                                : "refused by --train: --quantize cannot be combined with it";
            continue;
        }
        PrecisionPolicy pol = *base;
        pol.quant_bits = 0;
        if (q < 5) {
            pol.prec = precs[q];
            row->scheme = q < 3   ? "every floating weight and activation in this dtype"
                          : train ? "f32 master weights and states; products on low-dtype casts, "
                                    "softmax/norms/reductions in f32"
                                  : "weights in the low dtype; products in it, softmax/norms/"
                                    "reductions in f32";
        } else {
            pol.quant_bits = q == 5 ? 8 : 4;
            int64_t gs = base->quant_bits == pol.quant_bits ? base->group_size : 0;
            pol.group_size = gs;
            row->scheme = arena_printf(
                r->a, "weights of matrix products: %s, one f32 scale per %s; the rest %s",
                q == 5 ? "int8" : "int4 (2 per byte)",
                gs       ? arena_printf(r->a, "%lld elements of a row", (long long)gs)
                : q == 5 ? "output channel"
                         : "128 elements of a row",
                r->prec_name);
        }
        row->policy = pol;
        Report *c = fn(ctx, &pol);
        if (!c) {
            row->params_bytes = row->peak_bytes = -1;
            continue;
        }
        row->params_bytes = c->params_bytes;
        row->peak_bytes = report_fit_bytes(c); /* per device under --shard */
        for (int i = 0; i < c->g->nvalues; i++) {
            const Value *v = c->g->values[i];
            if (v->op == OP_PARAM && v->quant)
                row->scale_bytes = sat_add(row->scale_bytes, value_bytes(v->quant->scales));
        }
    }
    /* Rank by peak (insertion sort: 7 rows, stable); rows that failed last. */
    for (int i = 1; i < r->nquant; i++) {
        ReportQuant t = r->quant[i];
        int j = i;
        for (; j > 0; j--) {
            int64_t a = r->quant[j - 1].peak_bytes, b = t.peak_bytes;
            if (!(b >= 0 && (a < 0 || a > b))) break;
            r->quant[j] = r->quant[j - 1];
        }
        r->quant[j] = t;
    }
}

Report *report_build(Arena *a, Graph *g, Precision p, Target t) {
    Report *r = ARENA_NEW(a, Report);
    r->a = a;
    r->g = g;
    r->prec = p;
    r->prec_name = p == PREC_DECLARED ? declared_precision(g) : precision_name(p);
    r->target = t;
    /* The plan tgc build makes: conv epilogues fused, the convs' scratch
     * at the arena's tail, so the report's arena is the executable's. */
    CgProgram cp;
    cg_program_plan_target(a, g, &cp, t == TARGET_CUDA);
    r->dt = cp.dt;
    r->kernels = (struct KernelPlan *)cp.kp;
    r->sched = (Schedule *)cp.sched;
    r->plan = (MemPlan *)cp.plan;
    r->conv_scratch_bytes = cp.conv_scratch_bytes;
    r->attn_scratch_bytes = cp.attn_scratch_bytes;
    r->qmm_scratch_bytes = cp.qmm_scratch_bytes;
    r->conv_prepared_bytes = cp.conv_prepared_bytes;
    for (int i = 0; i < g->nvalues; i++) {
        const Value *v = g->values[i];
        int64_t bytes = schedule_value_bytes(v, r->dt[i]);
        if (v->op == OP_PARAM) {
            r->nparams++;
            r->params_count = sat_add(r->params_count, value_numel(v));
            r->params_bytes = sat_add(r->params_bytes, bytes);
        } else if (v->op == OP_INPUT) {
            r->ninputs++;
            r->inputs_bytes = sat_add(r->inputs_bytes, bytes);
        }
    }
    for (int i = 0; i < g->nvalues; i++) {
        const Value *v = g->values[i];
        if (v->op != OP_PARAM || !v->quant) continue;
        r->scale_bytes = sat_add(r->scale_bytes, value_bytes(v->quant->scales));
        r->quantize = v->quant->bits == 8 ? "int8" : "int4";
        if (!r->group_size || v->quant->group < r->group_size) r->group_size = v->quant->group;
    }
    /* Outputs are caller-owned contiguous buffers, views included; a
     * training step's update written over its param needs none. */
    r->in_place = cp.iface.in_place;
    for (int i = 0; i < g->noutputs; i++) {
        const Value *v = g->outputs[i];
        if (cp.iface.in_place[i]) continue;
        int64_t n = 1;
        for (int k = 0; k < v->ndim; k++)
            n = sat_mul(n, v->shape[k]);
        r->noutputs++;
        r->outputs_bytes =
            sat_add(r->outputs_bytes, sat_mul(n, (int64_t)dtype_size(r->dt[v->order])));
    }
    r->fixed_bytes = t == TARGET_CUDA ? CUDA_CONTEXT_BYTES + CUDA_WORKSPACE_BYTES : 0;
    /* Weights held once (issue 32): params only prepared convs read are
     * released at load (driver/report_process.c). */
    report_process_build(&cp, cp.dt, t == TARGET_CUDA, &r->proc);
    int64_t resident = sat_add(sat_add(r->params_bytes - r->proc.released_bytes, r->fixed_bytes),
                               r->conv_prepared_bytes);
    r->run_peak_bytes = sat_add(sat_add(resident, sat_add(r->inputs_bytes, r->outputs_bytes)),
                                r->plan->arena_bytes);
    r->load_peak_bytes = sat_add(resident, r->proc.load_plain_bytes);
    r->peak_bytes = r->run_peak_bytes > r->load_peak_bytes ? r->run_peak_bytes : r->load_peak_bytes;
    r->flops = flops_graph(g);
    return r;
}

const char **report_assumptions(const Report *r) {
    static const char *common[] = {
        "counted: weights (every declared param), inputs and outputs (caller-owned buffers, "
        "resident for the "
        "whole run), and the arena that holds every intermediate value",
        "views (transpose, slices, expand, reshape that can view...) allocate nothing; a view "
        "keeps its "
        "storage alive until its last use",
        "the arena is planned once: offsets aligned to 64 bytes, greedy by size (Pisarchyk & Lee "
        "2020), "
        "in-place reuse of an elementwise operand that dies there with the output's size",
        "lower bound: the largest sum of (64-byte rounded) intermediate sizes live at one step; "
        "unplanned: "
        "every intermediate allocated once",
        "one step per kernel after fusion (passes/fusion.h): an elementwise chain is computed "
        "inside the kernel of its one consumer and never stored; number literals, and functions "
        "of them such as sqrt(32.0), are folded into the code (0 bytes)",
        "not counted: the executable's code, stacks, the BLAS library's thread buffers and the "
        "allocator's own overhead",
        "weights held once: a param only convolutions oneDNN prepares read is released once "
        "folded (read from a weights file or the embedded image at its storage dtype); the load's "
        "peak holds one convolution's plain f32 weights beside the prepared ones",
        "precision f16/bf16 stores every floating weight and activation in that dtype (integers "
        "and bools unchanged); mixed-f16/bf16 stores weights in the low dtype, runs matrix "
        "products in it and softmax, norms, reductions, exp/log/pow in f32 (docs/precision.md); "
        "reductions and norms accumulate in f32 inside their kernels",
        "FLOPs: 2*m*k*n per matrix product (+1 per output for a bias), 1 per element for "
        "elementwise ops, "
        "gelu 8, silu 4, softmax 5, layer_norm 8, rms_norm 5 per element, reductions 1 per input "
        "element "
        "(var/std 3); copies and integer ops 0",
        "by_dtype: each row is planned as `tgc build` would build it; int8/int4 quantize the "
        "weights of matrix products only (symmetric, f32 scales per output channel or per group "
        "along k); biases, norms and embeddings keep the report's dtype",
        NULL,
    };
    static const char *cuda[] = {
        "cuda: a fixed 544 MiB for the CUDA context with its loaded kernels (512 MiB) and the "
        "cuBLAS "
        "workspace (32 MiB); weights, arena, inputs and outputs live in device memory",
        "cuda: host pinned memory holds one staging copy of the inputs and outputs; weights are "
        "uploaded "
        "once from pageable memory",
        "cuda: transfer times are bytes / effective bandwidth (PCIe 4.0 x16: 25 GB/s, 5.0 x16: 50 "
        "GB/s, "
        "one direction), without per-transfer latency",
        NULL,
    };
    static const char *cpu[] = {
        "cpu: no fixed runtime overhead is added",
        NULL,
    };
    int n = 0;
    const char **all = ARENA_ARRAY(r->a, const char *, 16);
    /* A training step's storage choices are --train's (report_choices). */
    static const char *train_prec =
        "training keeps f32 master weights and f32 optimizer states; mixed-f16/bf16 run matrix "
        "products on low-dtype casts of the weights and softmax, norms, reductions in f32 "
        "(docs/training.md); pure f16/bf16 and --quantize are refused for training";
    static const char *train_rows =
        "by_dtype: f32, mixed-bf16 and mixed-f16 are planned as `tgc build --train` would "
        "build them; the other choices are refused by --train (no figures: -1 in --json)";
    for (int i = 0; common[i]; i++) {
        const char *s = common[i];
        if (r->g->backward_id > 0 && !strncmp(s, "precision ", 10)) s = train_prec;
        if (r->g->backward_id > 0 && !strncmp(s, "by_dtype: ", 10)) s = train_rows;
        all[n++] = s;
    }
    const char **extra = r->target == TARGET_CUDA ? cuda : cpu;
    for (int i = 0; extra[i]; i++)
        all[n++] = extra[i];
    all[n] = NULL;
    return all;
}

static const Report *sort_report;
static int cmp_live(const void *a, const void *b) {
    int x = *(const int *)a, y = *(const int *)b;
    int64_t sx = sort_report->plan->size[x], sy = sort_report->plan->size[y];
    if (sx != sy) return sx > sy ? -1 : 1;
    return x - y;
}

int report_live_at(const Report *r, int step, int *out, int max) {
    const Schedule *s = r->sched;
    int n = 0;
    for (int i = 0; i < s->nbufs && n < max; i++) {
        const SchedBuffer *b = &s->bufs[i];
        if (b->kind != BUF_INTERMEDIATE || step < b->first || step > b->last) continue;
        /* At a hand-over the slot is listed once, under the new value. */
        if (b->last == step && step > b->first) {
            bool handed = false;
            for (int k = 0; k < s->nbufs; k++)
                if (r->plan->inplace_of[k] == i) handed = true;
            if (handed) continue;
        }
        out[n++] = i;
    }
    sort_report = r;
    qsort(out, (size_t)n, sizeof *out, cmp_live);
    return n;
}

const Value *report_step_value(const Report *r, int step) {
    return r->sched->steps[step].writes[0];
}

void report_fmt_bytes(char *buf, size_t n, int64_t b) {
    double x = (double)b;
    if (b < 0) x = -x;
    const char *sign = b < 0 ? "-" : "";
    if (x >= 1099511627776.0)
        snprintf(buf, n, "%s%.2f TiB", sign, x / 1099511627776.0);
    else if (x >= 1073741824.0)
        snprintf(buf, n, "%s%.2f GiB", sign, x / 1073741824.0);
    else if (x >= 1048576.0)
        snprintf(buf, n, "%s%.2f MiB", sign, x / 1048576.0);
    else if (x >= 1024.0)
        snprintf(buf, n, "%s%.1f KiB", sign, x / 1024.0);
    else
        snprintf(buf, n, "%s%lld B", sign, (long long)x);
}

void report_fmt_count(char *buf, size_t n, int64_t v) {
    char digits[32];
    snprintf(digits, sizeof digits, "%lld", (long long)v);
    size_t len = strlen(digits), o = 0;
    for (size_t i = 0; i < len && o + 2 < n; i++) {
        if (i && digits[i - 1] != '-' && (len - i) % 3 == 0) buf[o++] = ',';
        buf[o++] = digits[i];
    }
    buf[o] = 0;
}

void report_fmt_flops(char *buf, size_t n, int64_t f) {
    static const char *units[] = {"", "K", "M", "G", "T", "P", "E"};
    double x = (double)f;
    int u = 0;
    while (x >= 1000.0 && u < 6)
        x /= 1000.0, u++;
    if (u == 0)
        snprintf(buf, n, "%lld FLOP", (long long)f);
    else
        snprintf(buf, n, "%.2f %sFLOP", x, units[u]);
}
