/* `tgc report --json`: the keys cli.md fixes, and a few more (buffers,
 * peak_step, cuda, assumptions) that scripts and tests use. */
#include <cjson/cJSON.h>

#include "driver/accuracy.h"
#include "driver/report.h"
#include "driver/report_cpu.h"
#include "driver/report_generate.h"
#include "driver/report_train.h"
#include "passes/flops.h"

static cJSON *num(int64_t v) {
    return cJSON_CreateNumber((double)v);
}
static void add(cJSON *o, const char *k, int64_t v) {
    cJSON_AddItemToObject(o, k, num(v));
}

static cJSON *budget_json(const Report *r) {
    cJSON *b = cJSON_CreateObject();
    cJSON_AddStringToObject(b, "name", r->budget_name);
    add(b, "bytes", r->budget_bytes);
    /* Under --shard the budget is one device's (report_fit_bytes). */
    cJSON_AddBoolToObject(b, "fits", report_fit_bytes(r) <= r->budget_bytes);
    add(b, "headroom_bytes", r->budget_bytes - report_fit_bytes(r));
    return b;
}

static cJSON *fit_json(const Report *r) {
    const ReportFit *f = &r->fit;
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "dim", f->dim);
    add(o, "value", f->value);
    cJSON_AddItemToObject(o, "peak_bytes", f->value > 0 ? num(f->peak_at) : cJSON_CreateNull());
    cJSON_AddItemToObject(o, "next_peak_bytes",
                          f->peak_next >= 0 && !f->capped ? num(f->peak_next) : cJSON_CreateNull());
    cJSON_AddBoolToObject(o, "capped", f->capped);
    add(o, "search_cap", f->cap);
    add(o, "evaluations", f->evaluations);
    if (f->failed_value) add(o, "failed_value", f->failed_value);
    if (f->value == 0) add(o, "first_value", f->first_value);
    return o;
}

static cJSON *names(const Report *r, Value **vs, int n) {
    cJSON *a = cJSON_CreateArray();
    for (int i = 0; i < n; i++)
        cJSON_AddItemToArray(a, cJSON_CreateString(value_name(r->a, vs[i])));
    return a;
}

static cJSON *steps_json(const Report *r) {
    cJSON *a = cJSON_CreateArray();
    for (int i = 0; i < r->sched->nsteps; i++) {
        const SchedStep *s = &r->sched->steps[i];
        cJSON *o = cJSON_CreateObject();
        add(o, "index", i);
        cJSON_AddStringToObject(o, "op", s->op);
        cJSON_AddItemToObject(o, "outputs", names(r, s->writes, s->nwrites));
        cJSON_AddItemToObject(o, "inputs", names(r, s->reads, s->nreads));
        add(o, "live_bytes", r->plan->step_live[i]);
        int64_t fl = 0;
        for (int k = 0; k < s->nwrites; k++)
            fl += flops_value(s->writes[k]);
        add(o, "flops", fl);
        add(o, "total_live_bytes",
            r->peak_bytes - r->plan->arena_bytes - r->fixed_bytes + r->plan->step_live[i]);
        cJSON_AddItemToArray(a, o);
    }
    return a;
}

static cJSON *buffers_json(const Report *r) {
    cJSON *a = cJSON_CreateArray();
    const Schedule *s = r->sched;
    for (int i = 0; i < s->nbufs; i++) {
        const SchedBuffer *b = &s->bufs[i];
        if (b->kind != BUF_INTERMEDIATE) continue;
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "name", value_name(r->a, b->owner));
        cJSON_AddStringToObject(o, "dtype", dtype_name(r->dt[b->owner->order]));
        add(o, "offset", r->plan->offset[i]);
        add(o, "bytes", b->bytes);
        add(o, "size", r->plan->size[i]);
        add(o, "first_step", b->first);
        add(o, "last_step", b->last);
        add(o, "slot", r->plan->slot[i]);
        int from = r->plan->inplace_of[i];
        cJSON_AddItemToObject(o, "inplace_of",
                              from >= 0 ? cJSON_CreateString(value_name(r->a, s->bufs[from].owner))
                                        : cJSON_CreateNull());
        cJSON_AddItemToArray(a, o);
    }
    return a;
}

static cJSON *cuda_json(const Report *r) {
    cJSON *o = cJSON_CreateObject();
    int64_t io = r->inputs_bytes + r->outputs_bytes;
    add(o, "device_bytes", r->peak_bytes);
    add(o, "fixed_bytes", r->fixed_bytes);
    add(o, "context_bytes", CUDA_CONTEXT_BYTES);
    add(o, "workspace_bytes", CUDA_WORKSPACE_BYTES);
    add(o, "host_pinned_bytes", io);
    add(o, "h2d_bytes", r->inputs_bytes);
    add(o, "d2h_bytes", r->outputs_bytes);
    add(o, "weights_upload_bytes", r->params_bytes);
    cJSON *links = cJSON_AddArrayToObject(o, "transfer");
    for (int l = 0; l < 2; l++) {
        const Link *k = &devices_links[l];
        cJSON *t = cJSON_CreateObject();
        cJSON_AddStringToObject(t, "link", k->name);
        cJSON_AddNumberToObject(t, "bytes_per_s", k->bytes_per_s);
        cJSON_AddNumberToObject(t, "h2d_s", (double)r->inputs_bytes / k->bytes_per_s);
        cJSON_AddNumberToObject(t, "d2h_s", (double)r->outputs_bytes / k->bytes_per_s);
        cJSON_AddNumberToObject(t, "weights_s", (double)r->params_bytes / k->bytes_per_s);
        cJSON_AddItemToArray(links, t);
    }
    return o;
}

char *report_json(const Report *r) {
    const Graph *g = r->g;
    const MemPlan *p = r->plan;
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "graph", g->name);
    cJSON *dims = cJSON_AddObjectToObject(root, "dims");
    for (int i = 0; i < g->ndims; i++)
        add(dims, g->dims[i].name, g->dims[i].value);
    cJSON_AddStringToObject(root, "target", report_target_name(r->target));
    cJSON_AddStringToObject(root, "precision", r->prec_name);
    if (r->quantize) {
        cJSON *qz = cJSON_AddObjectToObject(root, "quantize");
        cJSON_AddStringToObject(qz, "scheme", r->quantize);
        add(qz, "group_size", r->group_size);
        add(qz, "scale_bytes", r->scale_bytes);
    }
    if (r->acc) {
        cJSON *ac = cJSON_AddObjectToObject(root, "accuracy");
        add(ac, "runs", r->acc_runs);
        cJSON_AddStringToObject(ac, "reference", "f32");
        cJSON_AddStringToObject(ac, "weights", r->acc_synthesized ? "synthesized" : "given");
        cJSON_AddNumberToObject(ac, "max_abs_error", r->acc->max_abs);
        cJSON_AddNumberToObject(ac, "max_rel_error", r->acc->max_rel);
        cJSON *outs = cJSON_AddArrayToObject(ac, "outputs");
        for (int k = 0; k < r->acc->nout; k++) {
            cJSON *o = cJSON_CreateObject();
            cJSON_AddStringToObject(o, "name", r->acc->out[k].name);
            cJSON_AddNumberToObject(o, "max_abs_error", r->acc->out[k].max_abs);
            cJSON_AddNumberToObject(o, "max_rel_error", r->acc->out[k].max_rel);
            cJSON_AddItemToArray(outs, o);
        }
    }
    cJSON *params = cJSON_AddObjectToObject(root, "params");
    add(params, "count", r->params_count);
    add(params, "bytes", r->params_bytes);
    add(params, "tensors", r->nparams);
    /* Read only by prepared convolutions: released once folded (issue 32). */
    add(params, "released_bytes", r->proc.released_bytes);
    add(params, "released_tensors", r->proc.nreleased);
    add(params, "resident_bytes", r->params_bytes - r->proc.released_bytes);
    add(root, "inputs_bytes", r->inputs_bytes);
    add(root, "outputs_bytes", r->outputs_bytes);
    cJSON *act = cJSON_AddObjectToObject(root, "activations");
    add(act, "arena_bytes", p->arena_bytes);
    add(act, "lower_bound_bytes", p->lower_bound_bytes);
    add(act, "unplanned_bytes", p->unplanned_bytes);
    add(act, "conv_scratch_bytes", r->conv_scratch_bytes); /* at the arena's tail */
    add(act, "attn_scratch_bytes", r->attn_scratch_bytes); /* the same tail, shared */
    add(act, "qmm_scratch_bytes", r->qmm_scratch_bytes);   /* the same tail, shared */
    add(root, "conv_prepared_bytes", r->conv_prepared_bytes);
    add(act, "alignment", MEMPLAN_ALIGN);
    add(act, "inplace", p->ninplace);
    cJSON_AddStringToObject(act, "strategy", p->strategy);
    add(root, "fixed_bytes", r->fixed_bytes);
    add(root, "peak_bytes", r->peak_bytes);
    add(root, "run_peak_bytes", r->run_peak_bytes);
    add(root, "load_peak_bytes", r->load_peak_bytes);
    add(root, "load_plain_bytes", r->proc.load_plain_bytes);
    if (r->proc.has_runtime) { /* the whole process on the CPU (issue 32) */
        cJSON *pr = cJSON_AddObjectToObject(root, "process");
        cJSON_AddStringToObject(pr, "libraries", r->proc.libraries);
        add(pr, "threads", r->proc.threads);
        add(pr, "convolutions", r->proc.nconvs);
        add(pr, "blas_pack_bytes", r->proc.blas_pack_bytes);
        add(pr, "runtime_bytes", r->proc.runtime_bytes);
        add(pr, "io_declared_bytes", r->proc.io_declared_bytes);
        add(pr, "peak_bytes", r->proc.peak_bytes);
    }
    report_train_json(root, r);
    report_generate_json(root, r);
    add(root, "flops", r->flops);
    cJSON *byd = cJSON_AddArrayToObject(root, "by_dtype");
    for (int q = 0; q < r->nquant; q++) {
        const ReportQuant *row = &r->quant[q];
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "dtype", row->dtype);
        add(o, "params_bytes", row->params_bytes);
        add(o, "peak_bytes", row->peak_bytes);
        add(o, "scale_bytes", row->scale_bytes);
        cJSON_AddStringToObject(o, "scheme", row->scheme);
        add(o, "rank", q + 1);
        if (row->has_error) {
            cJSON_AddNumberToObject(o, "max_abs_error", row->max_abs);
            cJSON_AddNumberToObject(o, "max_rel_error", row->max_rel);
        }
        if (r->has_budget)
            cJSON_AddBoolToObject(o, "fits", !row->refused && row->peak_bytes <= r->budget_bytes);
        if (row->refused) cJSON_AddBoolToObject(o, "refused_by_train", true);
        cJSON_AddItemToArray(byd, o);
    }
    if (r->has_budget) cJSON_AddItemToObject(root, "budget", budget_json(r));
    if (r->fit.present) cJSON_AddItemToObject(root, "max_fit", fit_json(r));
    if (p->peak_step >= 0) {
        cJSON *ps = cJSON_AddObjectToObject(root, "peak_step");
        add(ps, "index", p->peak_step);
        add(ps, "live_bytes", p->lower_bound_bytes);
        int *live = ARENA_ARRAY(r->a, int, r->sched->nbufs + 1);
        int n = report_live_at(r, p->peak_step, live, r->sched->nbufs);
        cJSON *l = cJSON_AddArrayToObject(ps, "live");
        for (int i = 0; i < n; i++)
            cJSON_AddItemToArray(
                l, cJSON_CreateString(value_name(r->a, r->sched->bufs[live[i]].owner)));
    } else {
        cJSON_AddNullToObject(root, "peak_step");
    }
    cJSON_AddItemToObject(root, "steps", steps_json(r));
    cJSON_AddItemToObject(root, "buffers", buffers_json(r));
    if (r->target == TARGET_CUDA) cJSON_AddItemToObject(root, "cuda", cuda_json(r));
    report_cpu_json(root, r->cpu);
    if (r->note) cJSON_AddStringToObject(root, "note", r->note);
    cJSON *as = cJSON_AddArrayToObject(root, "assumptions");
    const char **a = report_assumptions(r);
    for (int i = 0; a[i]; i++)
        cJSON_AddItemToArray(as, cJSON_CreateString(a[i]));
    char *s = cJSON_PrintUnformatted(root);
    cJSON_Delete(root);
    return s;
}
