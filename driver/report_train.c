/* The training figures of `tgc report --train` (see report_train.h). The
 * graph is the whole step, so the plan already holds everything: params
 * and optimizer states are params, the gradients and the activations the
 * backward pass reads live in the arena, and the new params and states
 * are outputs (the executable swaps them in after each step). These
 * figures take that peak apart. */
#include <cjson/cJSON.h>
#include <inttypes.h>
#include <string.h>

#include "driver/report_checkpoint.h"
#include "driver/report_train.h"
#include "passes/schedule.h"

static bool is_leaf(const Value *v) {
    return v->op == OP_PARAM || v->op == OP_INPUT || v->op == OP_SCALAR;
}

void report_train_build(Report *r, int shard) {
    const Graph *g = r->g;
    if (!g->train_loss) return;
    ReportTrain *t = ARENA_NEW(r->a, ReportTrain);
    r->train = t;
    t->optimizer = g->optimizer;
    t->loss = g->train_loss->name;
    bool *trained = ARENA_ARRAY(r->a, bool, g->nvalues + 1);
    for (int i = 0; i < g->noutputs; i++) {
        const Value *o = g->outputs[i];
        if (!o->updates) continue;
        if (!r->in_place[i])
            t->update_bytes = sat_add(t->update_bytes, schedule_value_bytes(o, r->dt[o->order]));
        if (!o->updates->optim_state) trained[o->updates->order] = true;
    }
    bool *saved = ARENA_ARRAY(r->a, bool, g->nvalues + 1);
    for (int i = 0; i < g->nvalues; i++) {
        const Value *v = g->values[i];
        int64_t bytes = schedule_value_bytes(v, r->dt[i]);
        if (v->op == OP_PARAM) {
            if (v->optim_state) {
                t->optimizer_state_bytes = sat_add(t->optimizer_state_bytes, bytes);
                continue;
            }
            t->weights_bytes = sat_add(t->weights_bytes, bytes);
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
    if (shard > 1) {
        /* FSDP / ZeRO-3: each device keeps 1/N of the params, optimizer
         * states and updated copies (rounded up); activations, inputs and
         * the arena (where gradients are made and reduced) stay whole. */
        int64_t sharded = sat_add(sat_add(r->params_bytes, t->update_bytes), 0);
        int64_t per = sharded / shard + (sharded % shard != 0);
        t->shard = shard;
        t->shard_peak_bytes = r->peak_bytes - sharded + per;
    }
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

void report_train_text(FILE *out, const Report *r) {
    const ReportTrain *t = r->train;
    if (!t) return;
    char b1[32], b2[32];
    fprintf(out, "\ntraining step (loss %s, optimizer %s)\n", t->loss, t->optimizer);
    fprintf(out, "  trainable params         %" PRId64 " in %d tensors (%d frozen)\n",
            t->trainable_params, t->ntrained, t->nfrozen);
    fprintf(out, "  weights                  %s\n", B(b1, t->weights_bytes));
    fprintf(out, "  gradients                %s (made in the arena, one per trained param)\n",
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
    if (t->shard)
        fprintf(out,
                "  sharded over %d devices   %s per device (params, states and updates "
                "split as FSDP / ZeRO-3 does; on paper)\n",
                t->shard, B(b1, t->shard_peak_bytes));
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
    fprintf(out, "                           recomputed:");
    for (int i = 0; i < c->n; i++)
        fprintf(out, " %s", c->names[i]);
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
    }
    if (t->shard) {
        cJSON *s = cJSON_AddObjectToObject(o, "shard");
        cJSON_AddNumberToObject(s, "devices", t->shard);
        cJSON_AddNumberToObject(s, "per_device_peak_bytes", (double)t->shard_peak_bytes);
    }
}
