/* Schedule and liveness: the order in which kernels run, the buffers they
 * need and the steps during which each buffer must hold its data.
 *
 * A step is one kernel: the values it writes and the values it reads.
 * Today (no fusion yet) schedule_from_graph() makes one step per
 * materialising value (non-view, non-leaf, non-dead), in graph order; a
 * fusion pass will hand schedule_build() its own kernel list and the same
 * liveness and planning code runs on it unchanged.
 *
 * Requires: a graph after view folding and dead-value removal; a storage
 * dtype per value (passes/precision.h) or NULL for the declared dtypes.
 * Gives: one buffer per storage owner that is read or written (leaves
 * included, so callers can count them), its byte size at the storage dtype
 * and, for intermediates, its live range [first, last] in steps. A view
 * allocates nothing: reading a view reads its storage owner, so the owner
 * lives until the last step that reads any view of it. */
#ifndef TGC_SCHEDULE_H
#define TGC_SCHEDULE_H
#include "ir/ir.h"

typedef struct SchedStep {
    Value **writes; /* storage owners the kernel materialises */
    int nwrites;
    Value **reads; /* tensor operands as the kernel sees them (views allowed) */
    int nreads;
    /* Every written element depends only on the element at the same index
     * of each read operand of the same shape: the kernel may write its
     * output over an operand that dies here (in-place reuse). */
    bool elementwise;
    const char *op; /* name to show */
} SchedStep;

typedef enum {
    BUF_INTERMEDIATE, /* lives in the arena */
    BUF_INPUT,        /* caller-owned */
    BUF_PARAM,        /* weights */
    BUF_OUTPUT,       /* caller-owned */
    BUF_CONST,        /* number literals: folded into the code, 0 bytes */
} BufKind;

typedef struct SchedBuffer {
    Value *owner;
    BufKind kind;
    int64_t bytes;   /* numel x storage dtype size (saturating) */
    int first, last; /* steps, inclusive; intermediates only, else -1 */
} SchedBuffer;

typedef struct Schedule {
    const Graph *g;
    SchedStep *steps;
    int nsteps;
    SchedBuffer *bufs; /* leaves first in graph order, then by first write */
    int nbufs;
    int *buf_of; /* by Value.order: the buffer of the value's storage, -1 if none */
} Schedule;

/* One step per materialising value, in graph order. */
Schedule *schedule_from_graph(Arena *a, const Graph *g, const DType *storage_dtype);
/* Liveness over a given kernel list (steps are kept, not copied). */
Schedule *schedule_build(Arena *a, const Graph *g, SchedStep *steps, int nsteps,
                         const DType *storage_dtype);

/* Bytes of a value's storage at dtype t (0 for views and literals),
 * saturating at INT64_MAX / 4 so sums of a few stay representable. */
int64_t schedule_value_bytes(const Value *v, DType t);
int64_t sat_add(int64_t a, int64_t b);
int64_t sat_mul(int64_t a, int64_t b);
#endif
