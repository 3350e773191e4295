/* `tgc report` for people: the verdict first, then the summary table, the
 * peak step, the timeline, the weights by dtype, the CUDA figures and the
 * assumptions. */
#include <string.h>

#include "driver/accuracy.h"
#include "driver/report.h"
#include "driver/report_cpu.h"
#include "driver/report_generate.h"
#include "driver/report_train.h"

#define BAR_WIDTH 40
#define TIMELINE_ROWS 48
#define PEAK_LIST 12

static const char *B(char *buf, int64_t b) {
    report_fmt_bytes(buf, 32, b);
    return buf;
}

static void fmt_seconds(char *buf, size_t n, double s) {
    if (s < 1e-3)
        snprintf(buf, n, "%.1f us", s * 1e6);
    else if (s < 1.0)
        snprintf(buf, n, "%.2f ms", s * 1e3);
    else
        snprintf(buf, n, "%.2f s", s);
}

static void print_dims(FILE *out, const Graph *g) {
    for (int i = 0; i < g->ndims; i++)
        fprintf(out, "%s%s=%lld", i ? ", " : " (", g->dims[i].name, (long long)g->dims[i].value);
    if (g->ndims) fprintf(out, ")");
}

static void print_verdict(FILE *out, const Report *r) {
    char b1[32], b2[32], b3[32];
    fprintf(out, "%s", r->g->name);
    print_dims(out, r->g);
    if (!r->has_budget) {
        fprintf(out, ": peak %s (target %s, precision %s)\n", B(b1, r->peak_bytes),
                report_target_name(r->target), r->prec_name);
        fprintf(out, "  give --device NAME or --budget SIZE for a fit verdict (tgc report "
                     "--list-devices)\n");
    } else {
        /* Under --shard the budget is one device's: its peak is held to it. */
        int64_t peak = report_fit_bytes(r);
        bool fits = peak <= r->budget_bytes;
        int64_t head = r->budget_bytes - peak;
        fprintf(out, " on %s: %s%s\n", r->budget_label, fits ? "FITS" : "DOES NOT FIT",
                r->train && r->train->shard
                    ? arena_printf(r->a, " (per device, sharded over %d, ZeRO-%d)", r->train->shard,
                                   r->train->sh.zero)
                    : "");
        double share = (double)peak / (double)r->budget_bytes;
        char why[48];
        if (fits)
            snprintf(why, sizeof why, "%.1f%% free", 100.0 * (1.0 - share));
        else if (share < 2.0)
            snprintf(why, sizeof why, "%.1f%% over", 100.0 * (share - 1.0));
        else
            snprintf(why, sizeof why, "needs %.1fx the budget", share);
        fprintf(out, "  peak %s of %s; %s %s (%s)  [target %s, precision %s]\n", B(b1, peak),
                B(b2, r->budget_bytes), fits ? "headroom" : "short by", B(b3, fits ? head : -head),
                why, report_target_name(r->target), r->prec_name);
    }
    const ReportFit *f = &r->fit;
    if (f->present) {
        if (f->value == 0 && f->first_value == 0) {
            fprintf(out, "  %s: the graph does not compile at any of %s=1..64\n", f->dim, f->dim);
        } else if (f->value == 0) {
            fprintf(out, "  %s: does not fit at %s=%lld (peak %s)\n", f->dim, f->dim,
                    (long long)f->first_value, B(b1, f->peak_next));
        } else {
            char c1[32], c2[32];
            report_fmt_count(c1, sizeof c1, f->peak_at);
            fprintf(out, "  largest %s that fits: %lld (peak %s, %s B); ", f->dim,
                    (long long)f->value, B(b1, f->peak_at), c1);
            if (f->capped) {
                fprintf(out, "the search stopped at %lld, which still fits\n", (long long)f->cap);
            } else if (f->peak_next >= 0) {
                report_fmt_count(c2, sizeof c2, f->peak_next);
                fprintf(out, "%s=%lld needs %s, %s B\n", f->dim, (long long)f->value + 1,
                        B(b2, f->peak_next), c2);
            } else {
                fprintf(out, "the graph does not compile at %s=%lld\n", f->dim,
                        (long long)f->value + 1);
            }
        }
        if (f->failed_value)
            fprintf(out,
                    "  note: the graph does not compile at every value of %s (e.g. %s=%lld); the "
                    "search steps over "
                    "such values\n",
                    f->dim, f->dim, (long long)f->failed_value);
    }
    if (r->note) fprintf(out, "  note: %s\n", r->note);
}

static void print_summary(FILE *out, const Report *r) {
    char b[32], c[32];
    const MemPlan *p = r->plan;
    fprintf(out, "\nsummary (target %s, precision %s)\n", report_target_name(r->target),
            r->prec_name);
    report_fmt_count(c, sizeof c, r->params_count);
    fprintf(out, "  %-14s %12s   %d tensors, %s elements\n", "params", B(b, r->params_bytes),
            r->nparams, c);
    fprintf(out, "  %-14s %12s   %d, caller-owned\n", "inputs", B(b, r->inputs_bytes), r->ninputs);
    fprintf(out, "  %-14s %12s   %d, caller-owned\n", "outputs", B(b, r->outputs_bytes),
            r->noutputs);
    double ratio =
        p->lower_bound_bytes ? (double)p->arena_bytes / (double)p->lower_bound_bytes : 1.0;
    fprintf(out, "  %-14s %12s   planned (%s), %.3f x lower bound, %d in place%s\n", "arena",
            B(b, p->arena_bytes), p->strategy, ratio, p->ninplace,
            r->conv_scratch_bytes || r->attn_scratch_bytes || r->qmm_scratch_bytes
                ? " (scratch included)"
                : "");
    bool gpu = r->target == TARGET_CUDA;
    if (r->conv_scratch_bytes)
        fprintf(out, "  %-14s %12s   %s at the arena's tail (largest conv)\n", "conv scratch",
                B(b, r->conv_scratch_bytes),
                gpu ? "cuDNN's workspace (and staging)" : "oneDNN's scratchpad");
    if (r->attn_scratch_bytes)
        fprintf(out,
                "  %-14s %12s   f32 blocks of scaled_dot_product_attention at the arena's tail\n",
                "attn scratch", B(b, r->attn_scratch_bytes));
    if (r->qmm_scratch_bytes)
        fprintf(out, "  %-14s %12s   the largest quantized weight dequantized for cuBLAS\n",
                "qmm scratch", B(b, r->qmm_scratch_bytes));
    if (r->conv_prepared_bytes)
        fprintf(out, "  %-14s %12s   %s, made at load\n", "conv weights",
                B(b, r->conv_prepared_bytes),
                gpu ? "weights with batch norms folded in, and their shifts, on the GPU"
                    : "weights and biases with batch norms folded in, in oneDNN's layout");
    fprintf(out, "  %-14s %12s   largest sum live at one step\n", "lower bound",
            B(b, p->lower_bound_bytes));
    fprintf(out, "  %-14s %12s   every intermediate allocated once\n", "unplanned sum",
            B(b, p->unplanned_bytes));
    if (r->fixed_bytes)
        fprintf(out, "  %-14s %12s   CUDA context + cuBLAS workspace\n", "fixed (cuda)",
                B(b, r->fixed_bytes));
    if (r->proc.released_bytes)
        fprintf(out, "  %-14s %12s   %d params only prepared convs read, released once folded\n",
                "released", B(b, -r->proc.released_bytes), r->proc.nreleased);
    if (r->load_peak_bytes > r->run_peak_bytes)
        fprintf(out,
                "  %-14s %12s   the load: resident weights + conv weights + the largest conv's "
                "plain f32 weights (%s)\n",
                "peak", B(b, r->peak_bytes), B(c, r->proc.load_plain_bytes));
    else
        fprintf(out, "  %-14s %12s   params%s + inputs + outputs + arena%s%s\n", "peak",
                B(b, r->peak_bytes), r->proc.released_bytes ? " - released" : "",
                r->fixed_bytes ? " + fixed" : "", r->conv_prepared_bytes ? " + conv weights" : "");
    if (r->proc.has_runtime) {
        fprintf(out, "  %-14s %12s   runtime and libraries (%s) at %d thread%s", "runtime",
                B(b, r->proc.runtime_bytes), r->proc.libraries, r->proc.threads,
                r->proc.threads == 1 ? "" : "s");
        if (r->proc.nconvs) fprintf(out, ", %d convolutions", r->proc.nconvs);
        fprintf(out, "\n  %-14s %12s   peak + runtime: the executable's peak RSS\n", "process peak",
                B(b, r->proc.peak_bytes));
    }
    report_fmt_flops(b, sizeof b, r->flops);
    fprintf(out, "  %-14s %12s   one run\n", "FLOPs", b);
}

static void print_peak(FILE *out, const Report *r) {
    char b[32];
    const MemPlan *p = r->plan;
    /* Without intermediates the arena may still hold a library's scratch. */
    const char *arena = p->arena_bytes ? "the arena holds only scratch" : "the arena is empty";
    if (p->peak_step < 0) {
        fprintf(out, "\nno intermediate values: %s\n", arena);
        return;
    }
    if (p->lower_bound_bytes == 0) {
        fprintf(out, "\n%s: every step writes an output (or an empty tensor) directly\n", arena);
        return;
    }
    const Value *v = report_step_value(r, p->peak_step);
    fprintf(out, "\nmemory peaks at step %d of %d (%s -> %s): %s live in the arena\n", p->peak_step,
            r->sched->nsteps, r->sched->steps[p->peak_step].op, value_name(r->a, v),
            B(b, p->lower_bound_bytes));
    int *live = ARENA_ARRAY(r->a, int, r->sched->nbufs + 1);
    int n = report_live_at(r, p->peak_step, live, r->sched->nbufs);
    fprintf(out, "  %-16s %-12s %-5s %-20s %12s  %s\n", "value", "op", "dtype", "shape", "bytes",
            "live steps");
    for (int i = 0; i < n && i < PEAK_LIST; i++) {
        const SchedBuffer *sb = &r->sched->bufs[live[i]];
        const Value *o = sb->owner;
        int from = r->plan->inplace_of[live[i]];
        fprintf(out, "  %-16s %-12s %-5s %-20s %12s  %d-%d%s%s\n", value_name(r->a, o),
                op_display_name(o), dtype_name(r->dt[o->order]), shape_str(r->a, o->shape, o->ndim),
                B(b, sb->bytes), sb->first, sb->last, from >= 0 ? ", in place of " : "",
                from >= 0 ? value_name(r->a, r->sched->bufs[from].owner) : "");
    }
    if (n > PEAK_LIST) fprintf(out, "  ... and %d more\n", n - PEAK_LIST);
    fprintf(out, "  (plus the weights, inputs and outputs, resident for the whole run)\n");
}

static void print_timeline(FILE *out, const Report *r) {
    const MemPlan *p = r->plan;
    int n = r->sched->nsteps;
    if (n == 0) return;
    int per = (n + TIMELINE_ROWS - 1) / TIMELINE_ROWS;
    char b[32];
    int64_t max = p->lower_bound_bytes > 0 ? p->lower_bound_bytes : 1;
    fprintf(out, "\ntimeline: arena bytes live at each step%s (one # = %s)\n",
            per > 1 ? arena_printf(r->a, ", the largest of every %d", per) : "",
            B(b, (max + BAR_WIDTH - 1) / BAR_WIDTH));
    fprintf(out, "  %-11s %-12s %-16s %-*s %s\n", per > 1 ? "steps" : "step", "op", "writes",
            BAR_WIDTH, "", "live");
    for (int s0 = 0; s0 < n; s0 += per) {
        int s1 = s0 + per - 1 < n ? s0 + per - 1 : n - 1, at = s0;
        for (int s = s0; s <= s1; s++)
            if (p->step_live[s] > p->step_live[at]) at = s;
        int len = (int)((double)p->step_live[at] * BAR_WIDTH / (double)max + 0.5);
        if (len == 0 && p->step_live[at] > 0) len = 1;
        char bar[BAR_WIDTH + 1];
        memset(bar, '#', (size_t)len);
        memset(bar + len, '.', (size_t)(BAR_WIDTH - len));
        bar[BAR_WIDTH] = 0;
        char steps[24];
        if (s1 > s0)
            snprintf(steps, sizeof steps, "%d-%d", s0, s1);
        else
            snprintf(steps, sizeof steps, "%d", s0);
        fprintf(out, "  %-11s %-12s %-16s %s %s%s\n", steps, r->sched->steps[at].op,
                value_name(r->a, report_step_value(r, at)), bar, B(b, p->step_live[at]),
                at == p->peak_step ? "  <- peak" : "");
    }
}

static void print_by_dtype(FILE *out, const Report *r) {
    char b1[32], b2[32], e1[32], e2[32];
    bool err = r->quant[0].has_error;
    fprintf(out,
            "\nstorage choices, ranked by peak (as `tgc build --precision/--quantize` plans "
            "them%s)\n",
            r->train && r->train->shard ? "; peaks per device, as the verdict's" : "");
    fprintf(out, "  %-10s %12s %12s %s%s%s\n", "choice", "weights", "peak",
            r->has_budget ? " fits " : "", err ? "   max abs err   max rel err " : "", " scheme");
    for (int q = 0; q < r->nquant; q++) {
        const ReportQuant *row = &r->quant[q];
        if (row->refused) continue; /* said once, after the rows */
        if (row->peak_bytes < 0) {
            fprintf(out, "  %-10s (does not build so)\n", row->dtype);
            continue;
        }
        snprintf(e1, sizeof e1, "%13.3g", row->max_abs);
        snprintf(e2, sizeof e2, "%13.3g", row->max_rel);
        fprintf(out, "  %-10s %12s %12s %s%s%s%s%s %s\n", row->dtype, B(b1, row->params_bytes),
                B(b2, row->peak_bytes),
                r->has_budget ? (row->peak_bytes <= r->budget_bytes ? " yes  " : " no   ") : "",
                err ? " " : "", err ? e1 : "", err ? " " : "", err ? e2 : "", row->scheme);
    }
    if (r->g->backward_id > 0)
        fprintf(out, "  (pure low-precision weights and --quantize are refused by --train, which "
                     "keeps f32 master weights)\n");
}

static void print_accuracy(FILE *out, const Report *r) {
    if (!r->acc) return;
    fprintf(out, "\naccuracy: precision %s%s%s against f32, %d runs on random inputs%s\n",
            r->prec_name, r->quantize ? " + " : "", r->quantize ? r->quantize : "", r->acc_runs,
            r->acc_synthesized ? " (weights made up: uniform +-1/sqrt(fan_in))" : "");
    fprintf(out, "  %-16s %14s %14s\n", "output", "max abs err", "max rel err");
    for (int k = 0; k < r->acc->nout; k++)
        fprintf(out, "  %-16s %14.4g %14.4g\n", r->acc->out[k].name, r->acc->out[k].max_abs,
                r->acc->out[k].max_rel);
}

static void print_cuda(FILE *out, const Report *r) {
    if (r->target != TARGET_CUDA) return;
    char b1[32], b2[32], b3[32], b4[32], t1[32], t2[32];
    int64_t io = r->inputs_bytes + r->outputs_bytes;
    fprintf(out, "\ncuda\n");
    fprintf(out, "  device memory  %s = weights %s + arena %s + inputs/outputs %s + fixed %s\n",
            B(b1, r->peak_bytes), B(b2, r->params_bytes), B(b3, r->plan->arena_bytes), B(b4, io),
            B(t1, r->fixed_bytes));
    fprintf(out, "  host pinned    %s (staging for the inputs and outputs)\n", B(b1, io));
    fprintf(out, "  per run        host->device %s, device->host %s\n", B(b1, r->inputs_bytes),
            B(b2, r->outputs_bytes));
    for (int l = 0; l < 2; l++) {
        const Link *k = &devices_links[l];
        fmt_seconds(t1, sizeof t1, (double)r->inputs_bytes / k->bytes_per_s);
        fmt_seconds(t2, sizeof t2, (double)r->outputs_bytes / k->bytes_per_s);
        fmt_seconds(b3, sizeof b3, (double)r->params_bytes / k->bytes_per_s);
        fprintf(out, "    %-13s (%2.0f GB/s): in %s, out %s; weights once %s\n", k->name,
                k->bytes_per_s / 1e9, t1, t2, b3);
    }
}

static void print_assumptions(FILE *out, const Report *r) {
    fprintf(out, "\nassumptions\n");
    const char **as = report_assumptions(r);
    for (int i = 0; as[i]; i++)
        fprintf(out, "  - %s\n", as[i]);
}

void report_text(FILE *out, const Report *r) {
    print_verdict(out, r);
    /* --generate: the executable's figures; the prefill program's own
     * summary, peak step and timeline would count another peak. */
    if (r->gen) {
        report_generate_text(out, r);
        print_by_dtype(out, r);
        report_cpu_text(out, r->cpu);
        print_assumptions(out, r);
        return;
    }
    print_summary(out, r);
    report_train_text(out, r);
    print_peak(out, r);
    print_timeline(out, r);
    print_by_dtype(out, r);
    print_accuracy(out, r);
    print_cuda(out, r);
    report_cpu_text(out, r->cpu);
    print_assumptions(out, r);
}
