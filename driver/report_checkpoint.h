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

/* A def call recomputed whole (driver/report_ckpt_blocks.c). */
typedef struct CkptBlock {
    const char *path, *def; /* the call's prefix (or DEF#N) and its def */
    int values;             /* the values recomputed in it */
    int64_t flops;          /* their FLOPs */
} CkptBlock;

typedef struct CkptResult {
    int *ids; /* the values recomputed (TrainSpec.recompute) */
    const char **names;
    int n;
    int64_t peak_before, peak_after;
    int64_t flops_before, extra_flops;
    bool fits;
    int evaluations;   /* compilations tried */
    int segment_len;   /* the sqrt(n) rule's segments were chosen: their length */
    int segments;      /* and how many, from the forward's start (0: single values) */
    CkptBlock *blocks; /* segments per repeated block were chosen: which calls */
    int nblocks;
} CkptResult;

/* Chooses the values to recompute for r0's graph (built without any); the
 * result is empty when r0 already fits. The peaks are report_fit_bytes's:
 * per device when in->shard > 1 (r0 then carries report_train_build's
 * figures for it). */
bool report_checkpoint_search(Arena *a, const CkptInput *in, const Report *r0, CkptResult *out);

/* The peak (report_fit_bytes) and FLOPs of prog's step with the values ids
 * recomputed; false when it does not compile so. */
bool report_checkpoint_measure(const CkptInput *in, const Program *prog, const int *ids, int n,
                               int64_t *peak, int64_t *flops);

/* Segments per repeated block (a def called more than once): true, out
 * filled (ids, names, peaks, blocks), when recomputing some of them fits
 * in->budget; false when the graph has fewer than two such segments or
 * none fits. Adds its compilations to out->evaluations. */
bool report_checkpoint_blocks(Arena *a, const CkptInput *in, const Program *prog, const Report *r0,
                              CkptResult *out);
#endif
