/* f16 overflow warnings: an interval analysis of every value's range.
 *
 * f16's largest finite value is 65504; past it a value becomes inf and
 * everything downstream is wrong. bf16 keeps f32's exponent range, so each
 * warning suggests it. The analysis bounds every value with an interval
 * [lo, hi] (doubles, +-inf for "unbounded"), in topological order, and
 * warns once per f16 value where an overflow can *start*, not everywhere
 * it spreads: graphs with unbounded inputs are the rule, so "can exceed"
 * alone would warn on every graph. docs/precision.md states the rules. */
#ifndef TGC_F16_RANGE_H
#define TGC_F16_RANGE_H
#include "ir/ir.h"

/* The largest finite f16. */
#define F16_MAX 65504.0

/* Optional facts about a param's data (from the weights file at build
 * time): true with [*lo, *hi] bounding every element, false when unknown. */
typedef bool (*ParamRangeFn)(void *ctx, const Value *param, double *lo, double *hi);

/* Requires: a graph after the frontend passes (tgc_frontend) with final
 * dtypes. Warns (diag_warning at the value's loc, then a diag_note
 * suggesting bf16) for each f16 value that can exceed 65504 in magnitude
 * where its operands cannot. range may be NULL. Returns the number of
 * warnings. Changes nothing in g. */
int f16_overflow_warn(const Graph *g, Diag *d, ParamRangeFn range, void *ctx);

/* The interval the analysis gives one value (for tests and reports): runs
 * the analysis over g and returns false when v is not a live value of g. */
bool f16_value_range(const Graph *g, const Value *v, ParamRangeFn range, void *ctx, double *lo,
                     double *hi);
#endif
