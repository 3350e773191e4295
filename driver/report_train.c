/* The training figures of `tgc report --train` (see report_train.h). The
 * graph is the whole step, so the plan already holds everything: params
 * and optimizer states are params, the gradients and the activations the
 * backward pass reads live in the arena, and the new params and states
 * are outputs (the executable swaps them in after each step). These
 * figures take that peak apart. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "driver/report_checkpoint.h"
#include "driver/report_train.h"
#include "passes/schedule.h"

static bool is_leaf(const Value *v) {
    return v->op == OP_PARAM || v->op == OP_INPUT || v->op == OP_SCALAR;
}

static int64_t min64(int64_t a, int64_t b) {
    return a < b ? a : b;
}

/* The precision as given: with no --precision, the dtype the graph
 * declares. The step's own values (the optimizer's f64 bias corrections,
 * its bool guards) are not the user's choice, so a plain f32 AdamW run is
 * "f32", not "mixed". */
static const char *declared_name(const Graph *g) {
    DType seen = DT_NONE;
    for (int i = 0; i < g->nvalues; i++) {
        const Value *v = g->values[i];
        if (v->id >= g->backward_id || v->dead || v->op == OP_SCALAR || !dtype_is_float(v->dtype))
            continue;
        if (seen == DT_NONE)
            seen = v->dtype;
        else if (seen != v->dtype)
            return "mixed";
    }
    return seen == DT_NONE ? "declared" : dtype_name(seen);
}

/* Where the gradients live: each in the arena's buffer the plan gives it
 * (counted once per buffer), or nowhere when its update kernel computes it
 * element by element (fused). */
static void locate_grads(Report *r, ReportTrain *t) {
    const Schedule *sc = r->sched;
    bool *seen = ARENA_ARRAY(r->a, bool, sc->nbufs + 1);
    bool *at_peak = ARENA_ARRAY(r->a, bool, sc->nbufs + 1);
    if (r->plan->peak_step >= 0) {
        int *live = ARENA_ARRAY(r->a, int, sc->nbufs + 1);
        int n = report_live_at(r, r->plan->peak_step, live, sc->nbufs);
        for (int i = 0; i < n; i++) {
            at_peak[live[i]] = true;
            /* A low-precision copy of a weight (mixed precision): what
             * ZeRO counts as the params' compute copies. */
            const Value *o = sc->bufs[live[i]].owner;
            const Value *src = o->op == OP_CAST && o->nin ? o->in[0]->storage : NULL;
            if (src && src->op == OP_PARAM && !src->optim_state)
                t->copies_at_peak_bytes = sat_add(t->copies_at_peak_bytes, sc->bufs[live[i]].bytes);
        }
    }
    for (int i = 0; i < r->g->nvalues; i++) {
        const Value *v = r->g->values[i];
        if (!v->grad_of || v->dead) continue;
        int b = sc->buf_of[v->order];
        if (b < 0 || sc->bufs[b].kind != BUF_INTERMEDIATE) {
            t->ngrads_fused++;
            continue;
        }
        if (seen[b]) continue;
        seen[b] = true;
        t->grads_stored_bytes = sat_add(t->grads_stored_bytes, sc->bufs[b].bytes);
        if (at_peak[b]) t->grads_at_peak_bytes = sat_add(t->grads_at_peak_bytes, sc->bufs[b].bytes);
    }
}

/* DeepSpeed's model_to_params: a layer is a module's own params; here the
 * params sharing a name up to its last '.' (fc1.weight and fc1.bias;
 * undotted names are the top module's). */
static size_t layer_len(const char *name) {
    const char *dot = strrchr(name, '.');
    return dot ? (size_t)(dot - name) : 0;
}

static void largest_layer(const Graph *g, ReportShard *s) {
    s->largest_layer = "";
    for (int i = 0; i < g->nvalues; i++) {
        const Value *v = g->values[i];
        if (v->op != OP_PARAM || v->optim_state) continue;
        size_t n = layer_len(v->name);
        int64_t sum = 0;
        for (int j = 0; j < g->nvalues; j++) {
            const Value *u = g->values[j];
            if (u->op == OP_PARAM && !u->optim_state && layer_len(u->name) == n &&
                !strncmp(u->name, v->name, n))
                sum = sat_add(sum, value_numel(u));
        }
        if (sum > s->largest_layer_params) {
            s->largest_layer_params = sum;
            s->largest_layer = arena_printf(g->arena, "%.*s", (int)n, v->name);
        }
    }
}
/* The per-device figures of ZeRO stage s->zero over s->devices (see
 * report_train.h and docs/training.md "Sharding"). With c the compute
 * copy's bytes per element, P all weights' elements, T the trained ones,
 * L the largest layer's and k the optimizer states' bytes per trained
 * element, m = g32 = 4 under mixed precision (the f32 master copies and
 * f32 gradient partition DeepSpeed keeps; at f32 the params are their own
 * masters and the gradients their own f32 copies), else 0:
 *   stage 1: c P + c T + g32 T + (m + k) T / N
 *   stage 2: c P + c T + (m + g32 + k) T / N       DeepSpeed: 4P + 16P/N
 *   stage 3: 2 c L + (c P + (m + g32 + k) T) / N   DeepSpeed: 4L + 18P/N
 * the sharded terms divided together and floored, as DeepSpeed's int()
 * does. The rest of the peak: the 0-d states on every device, the
 * buckets, the updates' spares / N, the arena less the gradients it holds
 * at its peak (they are counted above), inputs and outputs. */
static void shard_build(Report *r, ReportTrain *t, int64_t weights_count, int64_t shaped_states,
                        int64_t scalar_states) {
    ReportShard *s = &t->sh;
    int64_t n = s->devices, c = r->prec == PREC_MIXED_BF16 || r->prec == PREC_MIXED_F16 ? 2 : 4;
    int64_t P = weights_count, T = t->trainable_params;
    s->compute_bytes = (int)c;
    s->total_params = P;
    s->trained_params = T;
    largest_layer(r->g, s);
    s->master_bytes = s->grad32_bytes = c == 2 ? 4 : 0;
    s->state_bytes_per = T ? shaped_states / T : 0;
    int64_t m = s->master_bytes, g32 = s->grad32_bytes, k = s->state_bytes_per, sharded;
    if (s->zero == 3) {
        s->gathered_bytes = sat_mul(2 * c, s->largest_layer_params);
        sharded = sat_add(sat_mul(c, P), sat_mul(m + g32 + k, T));
    } else {
        s->params_bytes = sat_mul(c, P);
        s->grads_bytes = sat_mul(c, T);
        if (s->zero == 1) {
            s->grads_bytes = sat_add(s->grads_bytes, sat_mul(g32, T));
            sharded = sat_mul(m + k, T);
        } else {
            sharded = sat_mul(m + g32 + k, T);
        }
    }
    s->partition_bytes = sharded / n;
    s->model_states_bytes = sat_add(sat_add(s->params_bytes, s->grads_bytes),
                                    sat_add(s->gathered_bytes, s->partition_bytes));
    s->replicated_bytes = scalar_states;
    s->reduce_bucket_bytes = sat_mul(c, min64(ZERO_REDUCE_BUCKET, T));
    s->gather_bucket_bytes =
        sat_mul(c, min64(s->zero == 3 ? ZERO_PREFETCH_BUCKET : ZERO_ALLGATHER_BUCKET, P));
    s->update_bytes = t->update_bytes / n + (t->update_bytes % n != 0);
    int64_t arena = r->plan->arena_bytes;
    /* The gradients and the weights' compute copies the arena holds at its
     * peak are the model states' (counted above, split as the stage says). */
    s->activations_bytes = arena - t->grads_at_peak_bytes - t->copies_at_peak_bytes;
    s->other_bytes = r->peak_bytes - r->params_bytes - t->update_bytes - arena;
    int64_t sum = s->model_states_bytes;
    const int64_t rest[] = {s->replicated_bytes, s->reduce_bucket_bytes, s->gather_bucket_bytes,
                            s->update_bytes,     s->activations_bytes,   s->other_bytes};
    for (size_t i = 0; i < sizeof rest / sizeof rest[0]; i++)
        sum = sat_add(sum, rest[i]);
    s->peak_bytes = sum;
}

void report_train_build(Report *r, int shard, int zero) {
    const Graph *g = r->g;
    if (!g->train_loss) return;
    ReportTrain *t = ARENA_NEW(r->a, ReportTrain);
    r->train = t;
    t->optimizer = g->optimizer;
    t->loss = g->train_loss->name;
    if (r->prec == PREC_DECLARED) r->prec_name = declared_name(g);
    bool *trained = ARENA_ARRAY(r->a, bool, g->nvalues + 1);
    for (int i = 0; i < g->noutputs; i++) {
        const Value *o = g->outputs[i];
        if (!o->updates) continue;
        if (!r->in_place[i])
            t->update_bytes = sat_add(t->update_bytes, schedule_value_bytes(o, r->dt[o->order]));
        if (!o->updates->optim_state) trained[o->updates->order] = true;
    }
    bool *saved = ARENA_ARRAY(r->a, bool, g->nvalues + 1);
    int64_t weights_count = 0, shaped_states = 0, scalar_states = 0;
    for (int i = 0; i < g->nvalues; i++) {
        const Value *v = g->values[i];
        int64_t bytes = schedule_value_bytes(v, r->dt[i]);
        if (v->op == OP_PARAM) {
            if (v->optim_state) {
                t->optimizer_state_bytes = sat_add(t->optimizer_state_bytes, bytes);
                if (v->ndim)
                    shaped_states = sat_add(shaped_states, bytes);
                else
                    scalar_states = sat_add(scalar_states, bytes);
                continue;
            }
            t->weights_bytes = sat_add(t->weights_bytes, bytes);
            weights_count = sat_add(weights_count, value_numel(v));
            if (trained[i]) {
                t->ntrained++;
                t->trainable_params = sat_add(t->trainable_params, value_numel(v));
                t->grads_bytes = sat_add(t->grads_bytes, bytes);
            } else {
                t->nfrozen++;
            }
        }
        if (v->dead || v->id < g->backward_id) continue;
        /* A backward value reading a forward one: that storage is saved. */
        for (int k = 0; k < v->nin; k++) {
            const Value *s = v->in[k]->storage;
            if (s->id < g->backward_id && !is_leaf(s) && !s->dead) saved[s->order] = true;
        }
    }
    for (int i = 0; i < g->nvalues; i++)
        if (saved[i])
            t->saved_activations_bytes =
                sat_add(t->saved_activations_bytes, schedule_value_bytes(g->values[i], r->dt[i]));
    t->rule_of_thumb_bytes =
        t->trainable_params > INT64_MAX / 16 ? INT64_MAX : 16 * t->trainable_params;
    locate_grads(r, t);
    if (shard > 1) {
        t->shard = shard;
        t->sh.devices = shard;
        t->sh.zero = zero;
        shard_build(r, t, weights_count, shaped_states, scalar_states);
        t->shard_peak_bytes = t->sh.peak_bytes;
    }
}

int64_t report_fit_bytes(const Report *r) {
    return r->train && r->train->shard ? r->train->shard_peak_bytes : r->peak_bytes;
}

int report_train_shard_args(const char *shard, const char *zero, bool has_train, int *n, int *z) {
    *n = 0;
    *z = 3;
    if (!shard && !zero) return 0;
    if (!has_train) {
        fprintf(stderr, "tgc report: error: %s %s: needs --train LOSS\n",
                shard ? "--shard" : "--zero", shard ? shard : zero);
        return 1;
    }
    if (!shard) {
        fprintf(stderr, "tgc report: error: --zero %s: needs --shard N\n", zero);
        return 1;
    }
    char *end;
    errno = 0;
    long x = strtol(shard, &end, 10);
    if (errno || end == shard || *end || x < 1 || x > 65536) {
        fprintf(stderr, "tgc report: error: --shard %s: expected a device count from 1 to 65536\n",
                shard);
        return 1;
    }
    *n = (int)x;
    if (zero && strcmp(zero, "1") && strcmp(zero, "2") && strcmp(zero, "3")) {
        fprintf(stderr,
                "tgc report: error: --zero %s: expected 1 (optimizer states), 2 (and "
                "gradients) or 3 (and params)\n",
                zero);
        return 1;
    }
    if (zero) *z = zero[0] - '0';
    return 0;
}

static const char *B(char *buf, int64_t b) {
    if (b >= (int64_t)1 << 30)
        snprintf(buf, 32, "%.2f GiB", (double)b / (1 << 30));
    else if (b >= (int64_t)1 << 20)
        snprintf(buf, 32, "%.2f MiB", (double)b / (1 << 20));
    else if (b >= 1024)
        snprintf(buf, 32, "%.2f KiB", (double)b / 1024);
    else
        snprintf(buf, 32, "%" PRId64 " B", b);
    return buf;
}

static void shard_text(FILE *out, const ReportTrain *t) {
    const ReportShard *s = &t->sh;
    char b1[32], b2[32];
    static const char *what[] = {"", "optimizer states", "optimizer states and gradients",
                                 "optimizer states, gradients and params"};
    fprintf(out,
            "  sharded over %d devices, ZeRO-%d (%s split; on paper, DeepSpeed's accounting):\n",
            s->devices, s->zero, what[s->zero]);
    fprintf(out, "    per device peak        %s\n", B(b1, s->peak_bytes));
    fprintf(out,
            "    model states           %s (estimate_zero%d_model_states_mem_needs, no offload; "
            "%" PRId64 " params, compute copies %d bytes each)\n",
            B(b1, s->model_states_bytes), s->zero == 1 ? 2 : s->zero, s->total_params,
            s->compute_bytes);
    if (s->zero < 3) {
        fprintf(out, "      params, whole        %s\n", B(b1, s->params_bytes));
        fprintf(out, "      gradients, whole     %s\n", B(b1, s->grads_bytes));
    } else {
        fprintf(out,
                "      gathered layer       %s (the largest layer '%s', %" PRId64
                " params: its params and gradients whole)\n",
                B(b1, s->gathered_bytes), s->largest_layer, s->largest_layer_params);
    }
    fprintf(out,
            "      partition            %s (1/%d of%s f32 masters %d, f32 gradients %d, states "
            "%" PRId64 " bytes per trained param)\n",
            B(b1, s->partition_bytes), s->devices, s->zero == 3 ? " the params," : "",
            s->master_bytes, s->zero == 1 ? 0 : s->grad32_bytes, s->state_bytes_per);
    fprintf(out,
            "    buckets                reduce %s, %s %s (DeepSpeed's defaults: %d, %d elements)\n",
            B(b1, s->reduce_bucket_bytes), s->zero == 3 ? "prefetch" : "all-gather",
            B(b2, s->gather_bucket_bytes), ZERO_REDUCE_BUCKET,
            s->zero == 3 ? ZERO_PREFETCH_BUCKET : ZERO_ALLGATHER_BUCKET);
    fprintf(out,
            "    activations            %s (the arena less the gradients and weight copies live "
            "at its peak)\n",
            B(b1, s->activations_bytes));
    fprintf(out,
            "    the rest               %s (updates' spares / %d, 0-d states, inputs, outputs)\n",
            B(b1, s->update_bytes + s->replicated_bytes + s->other_bytes), s->devices);
}

void report_train_text(FILE *out, const Report *r) {
    const ReportTrain *t = r->train;
    if (!t) return;
    char b1[32], b2[32];
    fprintf(out, "\ntraining step (loss %s, optimizer %s)\n", t->loss, t->optimizer);
    fprintf(out, "  trainable params         %" PRId64 " in %d tensors (%d frozen)\n",
            t->trainable_params, t->ntrained, t->nfrozen);
    fprintf(out, "  weights                  %s\n", B(b1, t->weights_bytes));
    /* Counted where they live: in the arena (part of its figure below; its
     * buffers reused, so what is live at its peak is what it holds), or
     * nowhere when the update computes them element by element. */
    fprintf(out, "  gradients                %s in the arena at its peak (%s stored over the step)",
            B(b1, t->grads_at_peak_bytes), B(b2, t->grads_stored_bytes));
    if (t->ngrads_fused)
        fprintf(out, "; %d made inside their updates, never stored", t->ngrads_fused);
    fprintf(out, "\n                           (%s if every trained param's were kept at once)\n",
            B(b1, t->grads_bytes));
    fprintf(out, "  optimizer states         %s\n", B(b1, t->optimizer_state_bytes));
    fprintf(out, "  saved activations        %s (forward values the backward pass reads)\n",
            B(b1, t->saved_activations_bytes));
    if (t->update_bytes)
        fprintf(out,
                "  updated params, states   %s (written beside the old ones, swapped after "
                "the step)\n",
                B(b1, t->update_bytes));
    else
        fprintf(out, "  updated params, states   in place (each update written over its param)\n");
    fprintf(out, "  arena, forward+backward  %s\n", B(b1, r->plan->arena_bytes));
    fprintf(out,
            "  peak                     %s exact, against %s by the rule of thumb (16 bytes "
            "per trainable param, activations not counted)\n",
            B(b1, r->peak_bytes), B(b2, t->rule_of_thumb_bytes));
    if (t->shard) shard_text(out, t);
    const CkptResult *c = t->ckpt;
    if (!c) return;
    if (!c->n) {
        fprintf(out, "  checkpointing            %s\n",
                c->fits ? "not needed: the step fits as it is"
                        : "no recomputation lowers the peak");
        return;
    }
    fprintf(out,
            "  checkpointing            %d activations recomputed in the backward pass: peak %s "
            "-> %s (%s), +%.1f%% FLOPs (%lld)\n",
            c->n, B(b1, c->peak_before), B(b2, c->peak_after), c->fits ? "fits" : "still too big",
            c->flops_before ? 100.0 * (double)c->extra_flops / (double)c->flops_before : 0.0,
            (long long)c->extra_flops);
    if (c->segments)
        fprintf(out,
                "                           in %d segments of %d values (the sqrt(n) rule; each "
                "segment's last value kept), from the forward's start\n",
                c->segments, c->segment_len);
    if (c->nblocks) {
        fprintf(out,
                "                           in %d def calls (segments per repeated block; each "
                "call's input kept, its inside recomputed):",
                c->nblocks);
        for (int i = 0; i < c->nblocks; i++)
            fprintf(out, "%s %s (%s, %d values, %lld FLOPs)", i ? "," : "", c->blocks[i].path,
                    c->blocks[i].def, c->blocks[i].values, (long long)c->blocks[i].flops);
        fputc('\n', out);
    }
    fprintf(out, "                           recomputed:");
    for (int i = 0; i < c->n && i < 24; i++)
        fprintf(out, " %s", c->names[i]);
    if (c->n > 24) fprintf(out, " ... and %d more", c->n - 24);
    fputc('\n', out);
}

void report_train_json(cJSON *root, const Report *r) {
    const ReportTrain *t = r->train;
    if (!t) return;
    cJSON *o = cJSON_AddObjectToObject(root, "training");
    cJSON_AddStringToObject(o, "loss", t->loss);
    cJSON_AddStringToObject(o, "optimizer", t->optimizer);
    cJSON_AddNumberToObject(o, "trainable_params", (double)t->trainable_params);
    cJSON_AddNumberToObject(o, "grads_bytes", (double)t->grads_bytes);
    cJSON_AddNumberToObject(o, "grads_stored_bytes", (double)t->grads_stored_bytes);
    cJSON_AddNumberToObject(o, "grads_at_peak_bytes", (double)t->grads_at_peak_bytes);
    cJSON_AddNumberToObject(o, "grads_fused", t->ngrads_fused);
    cJSON_AddNumberToObject(o, "weight_copies_at_peak_bytes", (double)t->copies_at_peak_bytes);
    cJSON_AddNumberToObject(o, "optimizer_state_bytes", (double)t->optimizer_state_bytes);
    cJSON_AddNumberToObject(o, "saved_activations_bytes", (double)t->saved_activations_bytes);
    cJSON_AddNumberToObject(o, "weights_bytes", (double)t->weights_bytes);
    cJSON_AddNumberToObject(o, "update_bytes", (double)t->update_bytes);
    cJSON_AddNumberToObject(o, "rule_of_thumb_bytes", (double)t->rule_of_thumb_bytes);
    if (t->ckpt) {
        const CkptResult *c = t->ckpt;
        cJSON *k = cJSON_AddObjectToObject(o, "checkpoint");
        cJSON_AddNumberToObject(k, "recomputed", c->n);
        cJSON *names = cJSON_AddArrayToObject(k, "values");
        for (int i = 0; i < c->n; i++)
            cJSON_AddItemToArray(names, cJSON_CreateString(c->names[i]));
        cJSON_AddNumberToObject(k, "peak_bytes_without", (double)c->peak_before);
        cJSON_AddNumberToObject(k, "peak_bytes", (double)c->peak_after);
        cJSON_AddNumberToObject(k, "extra_flops", (double)c->extra_flops);
        cJSON_AddBoolToObject(k, "fits", c->fits);
        cJSON_AddNumberToObject(k, "evaluations", c->evaluations);
        cJSON_AddNumberToObject(k, "segments", c->segments);
        cJSON_AddNumberToObject(k, "segment_len", c->segment_len);
        cJSON *blocks = cJSON_AddArrayToObject(k, "blocks");
        for (int i = 0; i < c->nblocks; i++) {
            cJSON *b = cJSON_CreateObject();
            cJSON_AddStringToObject(b, "call", c->blocks[i].path);
            cJSON_AddStringToObject(b, "def", c->blocks[i].def);
            cJSON_AddNumberToObject(b, "values", c->blocks[i].values);
            cJSON_AddNumberToObject(b, "flops", (double)c->blocks[i].flops);
            cJSON_AddItemToArray(blocks, b);
        }
    }
    if (t->shard) {
        const ReportShard *h = &t->sh;
        cJSON *s = cJSON_AddObjectToObject(o, "shard");
        cJSON_AddNumberToObject(s, "devices", t->shard);
        cJSON_AddNumberToObject(s, "zero", h->zero);
        cJSON_AddNumberToObject(s, "per_device_peak_bytes", (double)t->shard_peak_bytes);
        cJSON_AddNumberToObject(s, "total_params", (double)h->total_params);
        cJSON_AddNumberToObject(s, "trained_params", (double)h->trained_params);
        cJSON_AddStringToObject(s, "largest_layer", h->largest_layer);
        cJSON_AddNumberToObject(s, "largest_layer_params", (double)h->largest_layer_params);
        cJSON_AddNumberToObject(s, "compute_bytes_per_param", h->compute_bytes);
        cJSON_AddNumberToObject(s, "master_bytes_per_param", h->master_bytes);
        cJSON_AddNumberToObject(s, "grad32_bytes_per_param", h->grad32_bytes);
        cJSON_AddNumberToObject(s, "state_bytes_per_param", (double)h->state_bytes_per);
        cJSON_AddNumberToObject(s, "params_bytes", (double)h->params_bytes);
        cJSON_AddNumberToObject(s, "grads_bytes", (double)h->grads_bytes);
        cJSON_AddNumberToObject(s, "gathered_bytes", (double)h->gathered_bytes);
        cJSON_AddNumberToObject(s, "partition_bytes", (double)h->partition_bytes);
        cJSON_AddNumberToObject(s, "model_states_bytes", (double)h->model_states_bytes);
        cJSON_AddNumberToObject(s, "replicated_state_bytes", (double)h->replicated_bytes);
        cJSON_AddNumberToObject(s, "reduce_bucket_bytes", (double)h->reduce_bucket_bytes);
        cJSON_AddNumberToObject(s,
                                h->zero == 3 ? "prefetch_bucket_bytes" : "allgather_bucket_bytes",
                                (double)h->gather_bucket_bytes);
        cJSON_AddNumberToObject(s, "update_bytes", (double)h->update_bytes);
        cJSON_AddNumberToObject(s, "activations_bytes", (double)h->activations_bytes);
        cJSON_AddNumberToObject(s, "other_bytes", (double)h->other_bytes);
    }
}
