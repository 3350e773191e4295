/* Contiguous-copy insertion: what happens to a view op whose layout
 * function found no view over its input's strides.
 *  - reshape / flatten: a contiguous copy (PyTorch: clone, then view);
 *  - contiguous of a non-contiguous value, to() of another dtype: a copy;
 *  - view / unflatten: an error with PyTorch's message. */
#include "ir/infer.h"
#include "passes/pipeline.h"

bool contiguous_materialize(Value *v, Diag *d) {
    switch (v->op) {
    case OP_RESHAPE:
    case OP_FLATTEN:
        v->copy_reason =
            "the input's strides allow no view of this shape (PyTorch's reshape copies here too)";
        break;
    case OP_CONTIGUOUS: v->copy_reason = "the input is not contiguous"; break;
    case OP_SLICE_SCATTER: return true; /* a new tensor unless it updates a state in place */
    case OP_TO:
        v->copy_reason = "the dtype changes";
        return true; /* a cast is a new tensor, not an inserted copy */
    default:
        diag_error(d, v->loc,
                   "view size is not compatible with input tensor's size and stride (at least one "
                   "dimension spans across two contiguous subspaces). Use .reshape(...) instead.");
        return false;
    }
    return true;
}
