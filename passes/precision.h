/* Precision policies: the pass that chooses every value's dtype.
 *
 * It rewrites the graph (before promotion casts, broadcasting and view
 * folding), so that each value carries the dtype it is stored and computed
 * in, and inserts explicit casts where the policy changes a dtype: `tgc
 * show` shows them, and the memory planner, the report and codegen read
 * nothing but v->dtype. docs/precision.md states the rules. */
#ifndef TGC_PRECISION_H
#define TGC_PRECISION_H
#include "ir/ir.h"

typedef enum {
    PREC_DECLARED, /* every value keeps the dtype the graph gives it */
    PREC_F32,
    PREC_F16,
    PREC_BF16,
    PREC_MIXED_F16, /* autocast-like: products in f16, numerically touchy ops in f32 */
    PREC_MIXED_BF16,
} Precision;

typedef struct PrecisionPolicy {
    Precision prec;
    DType io;           /* dtype of floating inputs and outputs; DT_NONE: as declared */
    int quant_bits;     /* weight quantization of matrix products: 0 (none), 8 or 4 */
    int64_t group_size; /* k elements per scale; 0: per output channel (int8), 128 (int4) */
} PrecisionPolicy;

/* "f32", "f16", "bf16", "mixed-f16", "mixed-bf16" (and the torch aliases
 * of the three dtypes); false when s names no policy. */
bool precision_parse(const char *s, Precision *out);
/* "declared", "f32", "f16", "bf16", "mixed-f16", "mixed-bf16". */
const char *precision_name(Precision p);
/* The low dtype of a policy: f16 or bf16, f32 for PREC_F32, DT_NONE for
 * PREC_DECLARED. */
DType precision_low_dtype(Precision p);
bool precision_is_mixed(Precision p);
/* The k elements per scale a policy quantizes a product of depth k with. */
int64_t precision_group(const PrecisionPolicy *pol, int64_t k);

/* Requires: inferred dtypes, before pass_insert_casts. Gives: the dtypes
 * the policy chooses, casts where it changes them, outputs in their
 * declared dtype (or pol->io). Reports to d when a rewritten op no longer
 * infers (a bug: every operand it changes is cast first). */
void pass_precision(Graph *g, Diag *d, const PrecisionPolicy *pol);

/* Requires: pass_precision's output. Gives: with pol->quant_bits, every
 * float param used only as the 2-D weight of matrix products replaced by
 * its quantized form (see quantize.c), the products by OP_QMATMUL. */
void pass_quantize(Graph *g, Diag *d, const PrecisionPolicy *pol);

/* Storage dtypes by Value.order: since pass_precision, simply v->dtype;
 * kept as the one place the planner and report ask. */
DType *precision_storage_dtypes(Arena *a, const Graph *g);
#endif
