/* `tgc report --html FILE`: one self-contained page. Inline SVG and CSS
 * only (no script, no font or image from the network), so it opens the
 * same anywhere, offline, and can be mailed as one file. Native <title>
 * tooltips give per-step detail without a script. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "driver/report.h"
#include "driver/report_train.h"
#include "support/atomic_file.h"

#define TL_W 860 /* timeline plot area */
#define TL_H 240
#define TL_X 90
#define TL_Y 30
#define TL_MAX_COLS 480
#define DEV_X 110
#define DEV_W 620
#define DEV_ROW 28

static const char *COLOR_WEIGHTS = "#4e79a7", *COLOR_IO = "#f28e2b", *COLOR_ACT = "#59a14f";

static void esc(FILE *f, const char *s) {
    for (; *s; s++)
        switch (*s) {
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        case '&': fputs("&amp;", f); break;
        case '"': fputs("&quot;", f); break;
        default: fputc(*s, f);
        }
}

static const char *B(char *buf, int64_t b) {
    report_fmt_bytes(buf, 32, b);
    return buf;
}

static void head(FILE *f, const Report *r) {
    fputs("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n<title>tgc report: ",
          f);
    esc(f, r->g->name);
    fputs("</title>\n<style>\n"
          "body{font-family:sans-serif;margin:24px 32px;color:#222;max-width:1100px}\n"
          "h1{font-size:22px}h2{font-size:17px;margin-top:28px}\n"
          "table{border-collapse:collapse}td,th{padding:3px "
          "12px;text-align:right;border-bottom:1px solid #eee}\n"
          "td:first-child,th:first-child{text-align:left}td.note{text-align:left;color:#666}\n"
          ".verdict{font-size:18px}.fits{color:#1a7f37;font-weight:bold}.nofit{color:#c62828;font-"
          "weight:bold}\n"
          "svg text{font-family:sans-serif;font-size:12px;fill:#333}li{margin:3px 0;color:#444}\n"
          "</style></head><body>\n",
          f);
}

static void verdict(FILE *f, const Report *r) {
    char b1[32], b2[32], b3[32];
    fputs("<h1>", f);
    esc(f, r->g->name);
    for (int i = 0; i < r->g->ndims; i++) {
        fputs(i ? ", " : " (", f);
        esc(f, r->g->dims[i].name);
        fprintf(f, "=%lld", (long long)r->g->dims[i].value);
    }
    fprintf(f, "%s</h1>\n<p class=\"verdict\">", r->g->ndims ? ")" : "");
    if (r->has_budget) {
        int64_t peak = report_fit_bytes(r); /* per device under --shard */
        bool fits = peak <= r->budget_bytes;
        int64_t head = r->budget_bytes - peak;
        fprintf(f, "On ");
        esc(f, r->budget_label);
        fprintf(f, ": <span id=\"verdict\" class=\"%s\">%s</span>, peak %s of %s, %s %s.",
                fits ? "fits" : "nofit", fits ? "fits" : "does not fit", B(b1, peak),
                B(b2, r->budget_bytes), fits ? "headroom" : "short by", B(b3, fits ? head : -head));
    } else {
        fprintf(f, "Peak %s.", B(b1, r->peak_bytes));
    }
    fprintf(f, " Target %s, precision %s.", report_target_name(r->target), r->prec_name);
    if (r->fit.present) {
        const ReportFit *ft = &r->fit;
        fputs("<br>Largest ", f);
        esc(f, ft->dim);
        if (ft->value == 0 && ft->first_value == 0)
            fprintf(f, ": the graph does not compile at 1..64.");
        else if (ft->value == 0)
            fprintf(f, ": does not fit even at %lld (peak %s).", (long long)ft->first_value,
                    B(b1, ft->peak_next));
        else if (ft->capped)
            fprintf(f, " that fits: %lld (search capped there).", (long long)ft->value);
        else
            fprintf(f, " that fits: <b>%lld</b> (peak %s; %s at %lld).", (long long)ft->value,
                    B(b1, ft->peak_at), ft->peak_next >= 0 ? B(b2, ft->peak_next) : "no compile",
                    (long long)ft->value + 1);
    }
    fputs("</p>\n", f);
}

static void summary(FILE *f, const Report *r) {
    char b[32], c[32];
    const MemPlan *p = r->plan;
    fputs("<h2>Summary</h2>\n<table id=\"summary\">\n", f);
    report_fmt_count(c, sizeof c, r->params_count);
    fprintf(f,
            "<tr><td>params</td><td>%s</td><td class=\"note\">%d tensors, %s elements</td></tr>\n",
            B(b, r->params_bytes), r->nparams, c);
    fprintf(f, "<tr><td>inputs</td><td>%s</td><td class=\"note\">caller-owned</td></tr>\n",
            B(b, r->inputs_bytes));
    fprintf(f, "<tr><td>outputs</td><td>%s</td><td class=\"note\">caller-owned</td></tr>\n",
            B(b, r->outputs_bytes));
    fprintf(
        f,
        "<tr><td>arena</td><td>%s</td><td class=\"note\">%.3f &times; lower bound, %s</td></tr>\n",
        B(b, p->arena_bytes),
        p->lower_bound_bytes ? (double)p->arena_bytes / (double)p->lower_bound_bytes : 1.0,
        p->strategy);
    fprintf(f,
            "<tr><td>lower bound</td><td>%s</td><td class=\"note\">largest sum live at one "
            "step</td></tr>\n",
            B(b, p->lower_bound_bytes));
    fprintf(f,
            "<tr><td>unplanned sum</td><td>%s</td><td class=\"note\">every intermediate "
            "once</td></tr>\n",
            B(b, p->unplanned_bytes));
    if (r->fixed_bytes)
        fprintf(f,
                "<tr><td>fixed (cuda)</td><td>%s</td><td class=\"note\">context + cuBLAS "
                "workspace</td></tr>\n",
                B(b, r->fixed_bytes));
    fprintf(f,
            "<tr><td><b>peak</b></td><td><b>%s</b></td><td class=\"note\">params + inputs + "
            "outputs + arena%s</td></tr>\n",
            B(b, r->peak_bytes), r->fixed_bytes ? " + fixed" : "");
    /* the whole process, as the text report's last memory lines */
    if (r->proc.released_bytes)
        fprintf(f,
                "<tr id=\"released\" data-bytes=\"%lld\"><td>released</td><td>-%s</td>"
                "<td class=\"note\">%d params only prepared convolutions read, released once "
                "folded</td></tr>\n",
                (long long)r->proc.released_bytes, B(b, r->proc.released_bytes), r->proc.nreleased);
    if (r->proc.has_runtime) {
        fprintf(f,
                "<tr id=\"runtime\" data-bytes=\"%lld\"><td>runtime</td><td>%s</td>"
                "<td class=\"note\">runtime and libraries (%s) at %d thread%s",
                (long long)r->proc.runtime_bytes, B(b, r->proc.runtime_bytes), r->proc.libraries,
                r->proc.threads, r->proc.threads == 1 ? "" : "s");
        if (r->proc.nconvs) fprintf(f, ", %d convolutions", r->proc.nconvs);
        fprintf(f,
                "</td></tr>\n<tr id=\"process-peak\" data-bytes=\"%lld\"><td><b>process "
                "peak</b></td><td><b>%s</b></td><td class=\"note\">peak + runtime: the "
                "executable's peak RSS</td></tr>\n",
                (long long)r->proc.peak_bytes, B(b, r->proc.peak_bytes));
    }
    report_fmt_flops(b, sizeof b, r->flops);
    fprintf(f, "<tr><td>FLOPs</td><td>%s</td><td class=\"note\">one run</td></tr>\n</table>\n", b);
}

static void rect(FILE *f, const char *cls, const char *color, double x, double y, double w,
                 double h) {
    if (h <= 0) return;
    fprintf(f,
            "<rect class=\"%s\" x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\" fill=\"%s\"/>",
            cls, x, y, w, h, color);
}

/* A round tick step (1, 2 or 5 times a power of 1024 times a power of 10)
 * that splits max into about four parts. */
static double tick_step(double max) {
    double unit = 1;
    while (max / unit >= 1024)
        unit *= 1024;
    double raw = max / unit / 4, p10 = 1;
    while (p10 * 10 <= raw)
        p10 *= 10;
    double m = raw / p10 <= 1 ? 1 : raw / p10 <= 2 ? 2 : raw / p10 <= 5 ? 5 : 10;
    return m * p10 * unit;
}

/* Stacked columns: weights, inputs and outputs, and the activations live
 * at the step (the largest in a column that covers several steps). The
 * CUDA runtime's fixed part is constant and would dwarf small graphs: it
 * is stated, not drawn. */
static void timeline(FILE *f, const Report *r) {
    const MemPlan *p = r->plan;
    int n = r->sched->nsteps;
    int cols = n < TL_MAX_COLS ? (n > 0 ? n : 1) : TL_MAX_COLS;
    double colw = (double)TL_W / cols;
    int64_t io = r->inputs_bytes + r->outputs_bytes;
    int64_t base = r->params_bytes + io, top = r->peak_bytes - r->fixed_bytes;
    double step = tick_step((double)(top > 0 ? top : 1) * 1.05);
    int nticks = (int)((double)(top > 0 ? top : 1) * 1.05 / step) + 1;
    double ymax = step * nticks;
    char b[32], b2[32];
    fputs("<h2>Memory timeline</h2>\n", f);
    fprintf(
        f,
        "<p>What is resident at each step: weights, inputs and outputs (all the run long) and the "
        "intermediate values live in the arena%s.</p>\n",
        r->fixed_bytes
            ? arena_printf(r->a, "; the CUDA runtime's fixed %s comes on top and is not drawn",
                           B(b, r->fixed_bytes))
            : "");
    fprintf(f,
            "<svg id=\"timeline\" xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
            "role=\"img\">\n",
            TL_X + TL_W + 20, TL_Y + TL_H + 60);
    for (int t = 0; t <= nticks; t++) {
        double y = TL_Y + TL_H - TL_H * (step * t) / ymax;
        fprintf(f, "<line x1=\"%d\" x2=\"%d\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>", TL_X,
                TL_X + TL_W, y, y);
        fprintf(f, "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%s</text>\n", TL_X - 6, y + 4,
                B(b, (int64_t)(step * t)));
    }
    fputs("<g class=\"columns\">\n", f);
    for (int c = 0; c < cols; c++) {
        int s0 = (int)((int64_t)c * n / cols), s1 = (int)((int64_t)(c + 1) * n / cols) - 1, at = s0;
        if (s1 < s0) s1 = s0;
        int64_t act = 0;
        for (int s = s0; s <= s1 && s < n; s++)
            if (p->step_live[s] >= act) act = p->step_live[s], at = s;
        double x = TL_X + c * colw, y = TL_Y + TL_H;
        fputs("<g class=\"step\">", f);
        if (n > 0) {
            fprintf(f, "<title>step %d: %s -&gt; ", at, r->sched->steps[at].op);
            esc(f, value_name(r->a, report_step_value(r, at)));
            fprintf(f, "; activations %s, resident %s</title>", B(b, act), B(b2, base + act));
        }
        double parts[3] = {(double)r->params_bytes, (double)io, (double)act};
        const char *cls[3] = {"bar-weights", "bar-io", "bar-act"};
        const char *col[3] = {COLOR_WEIGHTS, COLOR_IO, COLOR_ACT};
        for (int k = 0; k < 3; k++) {
            double h = parts[k] / ymax * TL_H;
            rect(f, cls[k], col[k], x, y - h, colw > 1.5 ? colw - 0.5 : colw, h);
            y -= h;
        }
        fputs("</g>\n", f);
    }
    fputs("</g>\n", f);
    double py = TL_Y + TL_H - (double)top / ymax * TL_H;
    fprintf(f,
            "<line id=\"peak-line\" x1=\"%d\" x2=\"%d\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#c62828\" "
            "stroke-dasharray=\"5,4\"/>",
            TL_X, TL_X + TL_W, py, py);
    fprintf(f,
            "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\" fill=\"#c62828\">with the whole arena: "
            "%s</text>\n",
            TL_X + TL_W, py - 4, B(b, top));
    fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">step (%d in all)</text>\n",
            TL_X + TL_W / 2, TL_Y + TL_H + 18, n);
    const char *names[3] = {"weights", "inputs/outputs", "activations"};
    const char *col[3] = {COLOR_WEIGHTS, COLOR_IO, COLOR_ACT};
    for (int k = 0; k < 3; k++) {
        int lx = TL_X + 160 * k;
        fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"12\" height=\"12\" fill=\"%s\"/>", lx,
                TL_Y + TL_H + 34, col[k]);
        fprintf(f, "<text x=\"%d\" y=\"%d\">%s</text>", lx + 16, TL_Y + TL_H + 44, names[k]);
    }
    fputs("\n</svg>\n", f);
}

/* One bar per device: its memory, and this graph's peak on it (the CUDA
 * runtime's fixed needs counted on GPUs, not on the cpu row). */
static void devices(FILE *f, const Report *r) {
    int n = devices_count();
    int rows = n + (r->has_budget && !devices_find(r->budget_name) ? 1 : 0);
    int64_t cpu_peak = r->peak_bytes - r->fixed_bytes,
            gpu_peak = cpu_peak + CUDA_CONTEXT_BYTES + CUDA_WORKSPACE_BYTES;
    double scale = (double)gpu_peak;
    for (int i = 0; i < n; i++)
        if ((double)devices_get(i)->bytes > scale) scale = (double)devices_get(i)->bytes;
    if (rows > n && (double)r->budget_bytes > scale) scale = (double)r->budget_bytes;
    scale *= 1.02;
    char b1[32], b2[32];
    fputs("<h2>Devices</h2>\n", f);
    fprintf(f,
            "<p>Grey: the device's memory; coloured: this graph's peak (green fits, red does not). "
            "GPU rows add "
            "the CUDA runtime's fixed %s.</p>\n",
            B(b1, CUDA_CONTEXT_BYTES + CUDA_WORKSPACE_BYTES));
    fprintf(f,
            "<svg id=\"devices\" xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
            "role=\"img\">\n",
            DEV_X + DEV_W + 260, rows * DEV_ROW + 10);
    for (int i = 0; i < rows; i++) {
        bool custom = i == n;
        const Device *d = custom ? NULL : devices_get(i);
        const char *name = custom ? "budget" : d->name;
        int64_t cap = custom ? r->budget_bytes : d->bytes;
        int64_t need = custom ? r->peak_bytes : (d->gpu ? gpu_peak : cpu_peak);
        bool fits = need <= cap;
        double y = 5 + i * DEV_ROW;
        double wcap = (double)cap / scale * DEV_W, wneed = (double)need / scale * DEV_W;
        if (wneed < 3) wneed = 3;
        fprintf(f, "<g class=\"device %s\" data-device=\"%s\">", fits ? "dev-fits" : "dev-over",
                name);
        fprintf(f, "<title>%s: %s of memory, peak %s</title>", name, B(b1, cap), B(b2, need));
        fprintf(f, "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%s</text>", DEV_X - 8, y + 14,
                name);
        rect(f, "capacity", "#e3e3e3", DEV_X, y, wcap, 18);
        rect(f, "need", fits ? "#2e9e4f" : "#d9433b", DEV_X, y + 3, wneed, 12);
        fprintf(f, "<text x=\"%d\" y=\"%.1f\">%s %s %s</text></g>\n", DEV_X + DEV_W + 8, y + 14,
                B(b1, cap), fits ? "&#8212; fits," : "&#8212; short by",
                B(b2, fits ? cap - need : need - cap));
    }
    fputs("</svg>\n", f);
}

static void tables(FILE *f, const Report *r) {
    char b1[32], b2[32];
    fputs("<h2>Weights by storage dtype</h2>\n<table "
          "id=\"by-dtype\"><tr><th>dtype</th><th>weights</th><th>peak</th>",
          f);
    fputs(r->has_budget ? "<th>fits</th>" : "", f);
    fputs("<th>scheme</th></tr>\n", f);
    for (int q = 0; q < r->nquant; q++) {
        const ReportQuant *row = &r->quant[q];
        if (row->refused) continue; /* --train does not build it */
        fprintf(f, "<tr><td>%s</td><td>%s</td><td>%s</td>", row->dtype, B(b1, row->params_bytes),
                B(b2, row->peak_bytes));
        if (r->has_budget)
            fprintf(f, "<td>%s</td>", row->peak_bytes <= r->budget_bytes ? "yes" : "no");
        fprintf(f, "<td class=\"note\">%s</td></tr>\n", row->scheme);
    }
    fputs("</table>\n<h2>Assumptions</h2>\n<ul>\n", f);
    const char **as = report_assumptions(r);
    for (int i = 0; as[i]; i++) {
        fputs("<li>", f);
        esc(f, as[i]);
        fputs("</li>\n", f);
    }
    fputs("</ul>\n", f);
}

/* Written whole or not at all through a unique temporary beside path
 * (rt_atomic.h): concurrent reports to one file never mix, and a reader
 * sees an old page or a new one. False with errno set on failure. */
bool report_html(const char *path, const Report *r) {
    RtAtomicFile af;
    int e = rt_afile_begin(&af, path);
    FILE *f = e ? NULL : rt_afile_stream(&af);
    if (!f) {
        if (!e) e = errno ? errno : ENOMEM;
        rt_afile_abort(&af);
        errno = e;
        return false;
    }
    head(f, r);
    verdict(f, r);
    summary(f, r);
    timeline(f, r);
    devices(f, r);
    tables(f, r);
    fputs("<p style=\"color:#888\">Written by tgc report.</p>\n</body></html>\n", f);
    e = ferror(f) ? (errno ? errno : EIO) : rt_afile_commit(&af, 0666);
    if (e) {
        rt_afile_abort(&af);
        errno = e;
    }
    return !e;
}
