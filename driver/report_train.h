/* `tgc report --train`: what a training step holds (driver/report_train.c). */
#ifndef TGC_REPORT_TRAIN_H
#define TGC_REPORT_TRAIN_H
#include <stdio.h>

#include "driver/report.h"

typedef struct ReportTrain {
    const char *optimizer, *loss;
    int ntrained, nfrozen;           /* param tensors */
    int64_t trainable_params;        /* elements of the trained params */
    int64_t weights_bytes;           /* the graph's own params, trained and frozen */
    int64_t grads_bytes;             /* one gradient per trained param, its dtype */
    int64_t optimizer_state_bytes;   /* momentum / Adam moments / step count */
    int64_t saved_activations_bytes; /* forward values the backward pass reads */
    int64_t update_bytes;            /* the step's new params and states (outputs) */
    int64_t rule_of_thumb_bytes;     /* 16 bytes per trainable param */
    int shard;                       /* --shard N (0: not asked) */
    int64_t shard_peak_bytes;        /* per device, params/grads/states over N */
    const struct CkptResult *ckpt;   /* --checkpoint auto, or NULL */
} ReportTrain;

/* Fills r->train when r's graph is a training step (NULL otherwise). */
void report_train_build(Report *r, int shard);
void report_train_text(FILE *out, const Report *r);
struct cJSON;
void report_train_json(struct cJSON *root, const Report *r);
#endif
