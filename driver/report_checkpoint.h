/* tgc report --train --checkpoint auto (driver/report_checkpoint.c). */
#ifndef TGC_REPORT_CHECKPOINT_H
#define TGC_REPORT_CHECKPOINT_H
#include "driver/driver.h"
#include "driver/report.h"

typedef struct CkptInput {
    const SrcFile *file;
    const Options *o; /* with has_train */
    Precision prec;
    Target target;
    int64_t budget;
    int shard, zero; /* tgc report --shard N --zero Z: the budget holds the per-device peak */
} CkptInput;

typedef struct CkptResult {
    int *ids; /* the values recomputed (TrainSpec.recompute) */
    const char **names;
    int n;
    int64_t peak_before, peak_after;
    int64_t flops_before, extra_flops;
    bool fits;
    int evaluations; /* compilations tried */
    int segment_len; /* the sqrt(n) rule's segments were chosen: their length */
    int segments;    /* and how many, from the forward's start (0: single values) */
} CkptResult;

/* Chooses the values to recompute for r0's graph (built without any); the
 * result is empty when r0 already fits. The peaks are report_fit_bytes's:
 * per device when in->shard > 1 (r0 then carries report_train_build's
 * figures for it). */
bool report_checkpoint_search(Arena *a, const CkptInput *in, const Report *r0, CkptResult *out);
#endif
