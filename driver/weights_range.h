/* A ParamRangeFn (passes/f16_range.h) over an open safetensors file. */
#ifndef TGC_WEIGHTS_RANGE_H
#define TGC_WEIGHTS_RANGE_H
#include <stdbool.h>

#include "ir/ir.h"

/* ctx: an RtSafetensors *. The min and max of param's tensor, converted to
 * f32 as the program converts it; false when the file lacks it. */
bool weights_range(void *ctx, const Value *param, double *lo, double *hi);
#endif
