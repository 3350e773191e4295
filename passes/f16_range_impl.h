/* The f16 range analysis's own parts (see f16_range.h), shared by its
 * files: f16_range_read.c (facts read off the graph), f16_range_rules.c
 * (the range rule of each op) and f16_range.c (where warnings belong).
 * Nothing outside passes/f16_range*.c includes this.
 *
 * Each value gets a Range: an interval, and two facts that decide where a
 * warning belongs. `vague` marks an interval that says "unknown" rather than
 * "computed": inputs, random or unnamed params, i32/i64 declared ranges, and
 * poles (x / y with y possibly 0, which is inf in every dtype, so bf16 would
 * not help). `src` carries an overflow that started in a non-f16 value
 * through views and copies, so the cast that brings it into f16 warns. */
#ifndef TGC_F16_RANGE_IMPL_H
#define TGC_F16_RANGE_IMPL_H
#include <math.h>

#include "passes/f16_range.h"

typedef struct Range {
    double lo, hi;
    bool vague;
    bool pole;        /* unbounded because a divisor can be 0 */
    const Value *src; /* a non-f16 value where an overflow starts, carried to casts */
} Range;

typedef struct Analysis {
    const Graph *g;
    Range *r; /* by Value.order */
    ParamRangeFn range;
    void *ctx;
} Analysis;

static inline Range rng(double lo, double hi) {
    return (Range){.lo = lo, .hi = hi};
}
static inline Range unbounded(void) {
    return (Range){.lo = -INFINITY, .hi = INFINITY, .vague = true};
}
static inline Range pole(void) {
    Range r = unbounded();
    r.pole = true;
    return r;
}
/* The magnitude to quote in a message. */
static inline double reach(Range r) {
    double a = fabs(r.lo), b = fabs(r.hi);
    return a > b ? a : b;
}

/* ---- reading the graph (f16_range_read.c) ------------------------------ */

/* v's tensor argument i, NULL when it has none there. */
const Value *f16r_arg(const Value *v, int i);
/* The range computed so far for t (unbounded for NULL or a foreign value). */
Range f16r_get(const Analysis *A, const Value *t);
Range f16r_arg_range(const Analysis *A, const Value *v, int i);
/* The range a dtype can hold (vague for i32/i64, unbounded for floats). */
Range f16r_dtype_range(DType t);
double f16r_numel(const Value *v);
/* Elements one reduction output combines. */
double f16r_reduced_count(const Value *v);
/* The depth of a matrix product: the input's last dimension. */
double f16r_last_dim(const Value *x);
/* Terms summed into one einsum output element. */
double f16r_einsum_depth(const Value *v);
/* Ops that give their operand's values unchanged (same numbers, another
 * place or layout). */
bool f16r_is_identity(const Value *v);
/* The elements of a tensor literal's data (OP_TENSOR's first argument). */
double f16r_data_count(const Arg *d);
/* The largest finite magnitude a constant holds. */
double f16r_const_finite_reach(const Value *v, Range r);

/* ---- the range rules (f16_range_rules.c) ------------------------------- */

/* v's range from its operands' (in A) by its op's rule; unbounded (and
 * vague) for ops without one. */
Range f16r_eval_op(const Analysis *A, const Value *v);
#endif
