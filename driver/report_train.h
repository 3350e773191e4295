/* `tgc report --train`: what a training step holds (driver/report_train.c). */
#ifndef TGC_REPORT_TRAIN_H
#define TGC_REPORT_TRAIN_H
#include <stdio.h>

#include "driver/report.h"

/* --shard N --zero Z: the per-device figures of a ZeRO run of this step
 * (on paper: tgc runs one device). The model states follow DeepSpeed's
 * estimate_zero2/3_model_states_mem_needs (docs/training.md "Sharding");
 * per-device bytes unless said. */
typedef struct ReportShard {
    int devices, zero;
    int compute_bytes;            /* c: 2 under mixed-bf16/f16, else 4 (f32) */
    int64_t total_params;         /* P: the weights' elements, trained and frozen */
    int64_t trained_params;       /* T */
    const char *largest_layer;    /* the name prefix of the largest layer */
    int64_t largest_layer_params; /* L: a layer is the params sharing a name up to the last '.' */
    int master_bytes;             /* per trained element: f32 master copies (4 when c is 2) */
    int grad32_bytes;        /* per trained element: the f32 gradient partition (4 when c is 2) */
    int64_t state_bytes_per; /* per trained element: optimizer states of the param's shape */
    int64_t params_bytes;    /* c P, stages 1-2 (whole on every device) */
    int64_t grads_bytes;     /* c T, stages 1-2; at stage 1 also the f32 grads, whole */
    int64_t gathered_bytes;  /* stage 3: the largest layer's params and grads, 2 c L */
    int64_t partition_bytes; /* the sharded terms together, / N (floored, as DeepSpeed) */
    int64_t model_states_bytes;  /* the sum above: DeepSpeed's gpu_mem without offload */
    int64_t replicated_bytes;    /* 0-d optimizer states (step count, loss scale): on each */
    int64_t reduce_bucket_bytes; /* min(reduce_bucket_size, T) c */
    int64_t gather_bucket_bytes; /* min(allgather_bucket_size, P) c; stage 3: prefetch bucket */
    int64_t update_bytes;        /* the spare updates, / N (each device updates its part) */
    int64_t activations_bytes;   /* the arena less the gradients and weight copies at its peak */
    int64_t other_bytes;         /* inputs, the loss and other outputs, fixed needs */
    int64_t peak_bytes;          /* the sum: what --budget and --fit are held to */
} ReportShard;

typedef struct ReportTrain {
    const char *optimizer, *loss;
    int ntrained, nfrozen;           /* param tensors */
    int64_t trainable_params;        /* elements of the trained params */
    int64_t weights_bytes;           /* the graph's own params, trained and frozen */
    int64_t grads_bytes;             /* one gradient per trained param, its dtype */
    int64_t grads_stored_bytes;      /* of those, the ones the plan stores in the arena */
    int64_t grads_at_peak_bytes;     /* of those, the ones live at the arena's peak step */
    int ngrads_fused;                /* gradients never stored: made inside their update */
    int64_t copies_at_peak_bytes;    /* low-precision weight copies live at the arena's peak */
    int64_t optimizer_state_bytes;   /* momentum / Adam moments / step count */
    int64_t saved_activations_bytes; /* forward values the backward pass reads */
    int64_t update_bytes;            /* the step's new params and states (outputs) */
    int64_t rule_of_thumb_bytes;     /* 16 bytes per trainable param */
    int shard;                       /* --shard N (0: not asked) */
    int64_t shard_peak_bytes;        /* per device (shard.peak_bytes) */
    ReportShard sh;
    const struct CkptResult *ckpt; /* --checkpoint auto, or NULL */
} ReportTrain;

/* DeepSpeed's default bucket sizes, in elements (deepspeed/runtime/zero/
 * config.py: reduce_bucket_size, allgather_bucket_size; stage 3's
 * prefetch_bucket_size). */
#define ZERO_REDUCE_BUCKET 500000000
#define ZERO_ALLGATHER_BUCKET 500000000
#define ZERO_PREFETCH_BUCKET 50000000

/* Fills r->train when r's graph is a training step (NULL otherwise);
 * shard > 1 adds the per-device figures of ZeRO stage zero (1 to 3). */
void report_train_build(Report *r, int shard, int zero);
/* The bytes a budget is held to: the per-device peak under --shard, else
 * the peak. */
int64_t report_fit_bytes(const Report *r);
/* --shard N and --zero Z's values: 0, or 1 after a message naming the flag. */
int report_train_shard_args(const char *shard, const char *zero, bool has_train, int *n, int *z);
void report_train_text(FILE *out, const Report *r);
struct cJSON;
void report_train_json(struct cJSON *root, const Report *r);
#endif
