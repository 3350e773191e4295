/* Storage precision: which dtype each value is stored in. Today one
 * uniform policy (every floating value in f32, f16 or bf16; integers and
 * bools unchanged); a later dtype-choosing pass with mixed policies grows
 * here, and every consumer (the memory planner, the report, codegen) asks
 * this module rather than reading v->dtype. */
#ifndef TGC_PRECISION_H
#define TGC_PRECISION_H
#include "ir/ir.h"

typedef enum {
    PREC_DECLARED, /* every value keeps the dtype the graph gives it */
    PREC_F32,
    PREC_F16,
    PREC_BF16,
} Precision;

/* "f32", "f16", "bf16" (and torch aliases: float32, half, bfloat16...);
 * false when s names no float precision. */
bool precision_parse(const char *s, Precision *out);
/* "declared", "f32", "f16", "bf16". */
const char *precision_name(Precision p);
/* The dtype floating values take under p (DT_NONE for PREC_DECLARED). */
DType precision_float_dtype(Precision p);
/* The dtype a value of declared dtype t is stored in under p. */
DType precision_apply(Precision p, DType t);

/* Requires: a graph after view folding. Gives: an array, indexed by
 * Value.order, of the storage dtype of every value (allocated in a).
 * Reductions and norms still accumulate in f32 inside their kernels: that
 * changes no storage size, so it does not show here. */
DType *precision_storage_dtypes(Arena *a, const Graph *g, Precision p);
#endif
