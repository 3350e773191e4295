/* The inside of a context (program.c), shared with training contexts
 * (train.c) so that a training step runs exactly the code rt_context_run
 * runs: the same input staging, the same forward call, the same index
 * errors. Internal to the runtime (never installed, never included by
 * generated code). */
#ifndef TGCRT_CONTEXT_INTERNAL_H
#define TGCRT_CONTEXT_INTERNAL_H
#include "cuda_internal.h"
#include "rt_index_error.h"
#include "rt_internal.h"

typedef struct RtTrainState RtTrainState; /* train.c */

struct RtContext {
    const RtProgram *p;
    RtError err;
    bool ready;        /* created successfully */
    RtSafetensors *st; /* open while params point into it (zero copy) */
    /* Training, per role: the pair mark (rt_st_pair) of the file the params
     * of that role were loaded from, and its name; NULL when there was
     * none or they changed since (train.c). */
    char *pair[2], *pair_file[2];
    RtArena arena;
    RtPool *pool;
    void **bufs;      /* [arena, inputs..., params..., outputs..., &index_error(, conv state)] at
                         storage dtypes */
    void *conv_state; /* what p->conv_setup made (convolutions' primitives and weights) */
    /* set by gather/embedding/indexing kernels on an index out of range (rt_index_error.h) */
    int64_t index_error[RT_INDEX_ERROR_WORDS];
    void **owned;    /* per param: a buffer the context allocated, or NULL */
    void **in_stage; /* per input: storage-dtype staging buffer, or NULL */
    /* per output: likewise; a training context's point at its train buffers (not
     * owned; rt_train_out_stage) */
    void **out_stage;
    RtCudaCtx *cuda;     /* --target cuda: the GPU side (no host arena, no forward) */
    RtTrainState *train; /* p->train: spare buffers and the user outputs' buffers */
    /* rt_context_profile: the runs recorded (kept when stopped, for
     * printing); bufs[p->prof_slot] points at it while recording. */
    RtProfile *prof;
    RtForwardFn forward; /* p->forward, or the chosen CPU level's (rt_cpu_select) */
    int cpu_level;       /* its index in p->levels */
    /* rt_context_create_shared: the context whose params, states, arena
     * and pool this one uses (it owns none of them); NULL otherwise. */
    RtContext *owner;
};

/* ---- program.c ---- */

/* Bytes of a tensor at its storage dtype (the descriptor is checked). */
size_t rt_ctx_storage_bytes(const RtTensorInfo *t);
/* Checks that c is ready and that inputs holds every input (fn names the
 * caller in messages), then points the forward's input slots at them,
 * converting those whose storage dtype differs into the staging buffers. */
RtStatus rt_ctx_stage_inputs(RtContext *c, const void *const *inputs, const char *fn);
/* The descriptor's checks (every tensor entry, the train descriptor). */
RtStatus rt_ctx_check_program(RtContext *c);
/* A storage-dtype staging buffer for t into *slot when its storage dtype
 * differs from the declared one (what: "input", "output"). */
RtStatus rt_ctx_alloc_staging(RtContext *c, const RtTensorInfo *t, void **slot, const char *what);
/* Checks the conv and step tables and allocates the buffer table
 * (c->bufs, its index-error cell set) and the per-tensor tables (owned,
 * in_stage, out_stage). */
RtStatus rt_ctx_alloc_tables(RtContext *c);
/* Runs the forward on c->bufs as they are; TGCRT_ERR_VALUE with the
 * message when a kernel found an index out of range. */
RtStatus rt_ctx_forward(RtContext *c);
/* Checks that the file's tensor w can be param t's value (the declared
 * shape; the storage dtype, or any floating dtype for a floating param):
 * TGCRT_ERR_SHAPE / TGCRT_ERR_DTYPE naming the file (rt_st_name) and tensor. */
RtStatus rt_ctx_check_param_tensor(RtContext *c, const RtSafetensors *st, const RtStTensor *w,
                                   const RtTensorInfo *t);
/* Copies w (checked) into dst at t's storage dtype: converted between
 * floating dtypes, bool bytes normalised to 0/1. */
void rt_ctx_copy_param_tensor(RtContext *c, const RtStTensor *w, const RtTensorInfo *t, void *dst);

/* ---- train.c ---- */

/* The train descriptor's checks (run with the rest of check_program). */
RtStatus rt_train_check(RtContext *c);
/* Allocates the spare buffers and the user outputs' buffers (after the
 * params are loaded). */
RtStatus rt_train_setup(RtContext *c);
void rt_train_free(RtContext *c);
/* For rt_context_run on a training context: a storage-dtype buffer of
 * output i to compute it into when its storage dtype differs from the
 * declared one (the training buffers serve as staging), else NULL. */
void *rt_train_out_stage(RtContext *c, int i);

/* ---- train_state.c ---- */

/* Checks every value of optimizer state t (data at dtype, t's shape)
 * against the rule its name gives (a step count is a non-negative integer,
 * the loss scale positive and normal, a second moment >= 0, any other
 * finite): TGCRT_ERR_VALUE naming `where` (the file), the tensor, the
 * value and the rule. */
RtStatus rt_train_check_state(RtError *err, const char *where, const RtTensorInfo *t,
                              const void *data, RtDType dtype);
/* Whether c is a created training context with a param i: else the error,
 * set, names fn, the index and the valid range. */
RtStatus rt_train_check_index(RtContext *c, const char *fn, int i);

/* Param i's current value for reading (made current on CUDA), or NULL
 * with the error set. Unlike rt_context_param_data, not a write. */
const void *rt_train_param_current(RtContext *c, int i);

/* ---- train.c: files saved together ---- */

/* Checks st's pair mark against the other role's file's (TGCRT_ERR_VALUE
 * naming both files when they differ); notes it as role's when
 * `note`. */
RtStatus rt_train_pair_check(RtContext *c, const RtSafetensors *st, int role, bool note);
/* rt_train_save_pair: rt_internal.h. */

#endif
