/* Building IR from inside the compiler: the rewrites that write one op in
 * simpler ones (ir/lower_nn.c, the loss functions, the gradient pass) make
 * their nodes through these. Each made node has passed inference and is
 * appended to the graph; a NULL operand gives NULL (an earlier failure,
 * already reported), so chains need one check at the end. */
#ifndef TGC_IR_IRBUILD_H
#define TGC_IR_IRBUILD_H
#include "ir/ir.h"

typedef struct IrB {
    InferCtx *c;
    SrcLoc loc; /* given to every node made */
    Arena *a;
} IrB;

IrB irb_init(InferCtx *c, SrcLoc loc);

/* op over args: inferred and appended, or NULL after a report. */
Value *irb_op(IrB *b, OpCode op, int n, Arg *args);
Arg irb_t(IrB *b, Value *v);
Arg irb_i(IrB *b, int64_t i);
Arg irb_is(IrB *b, const int64_t *v, int n);
Arg irb_num(IrB *b, double f);
Arg irb_bool(IrB *b, bool x);
Arg irb_ts(IrB *b, Value *const *ts, int n); /* a tensor list (cat, stack) */

/* A weak f32 literal: promotes as a Python number does. */
Value *irb_scalar(IrB *b, double x);
Value *irb_unary(IrB *b, OpCode op, Value *x);
Value *irb_binary(IrB *b, OpCode op, Value *x, Value *y);
Value *irb_to(IrB *b, Value *x, DType t); /* x itself when already t */
Value *irb_reshape(IrB *b, Value *x, const int64_t *shape, int n);
Value *irb_permute(IrB *b, Value *x, const int64_t *dims, int n);
/* op (sum, amax...) over dims, keepdim false. */
Value *irb_reduce(IrB *b, OpCode op, Value *x, const int64_t *dims, int n);
Value *irb_reduce_keep(IrB *b, OpCode op, Value *x, const int64_t *dims, int n, bool keepdim);
Value *irb_slice(IrB *b, Value *x, int dim, int64_t start, int64_t end, int64_t step);
Value *irb_windows(IrB *b, Value *x, int dim, int64_t size, int64_t step);
Value *irb_expand(IrB *b, Value *x, const int64_t *shape, int n);
Value *irb_transpose(IrB *b, Value *x, int d0, int d1);
/* A constant tensor of dtype t holding data (shape, n dims). */
Value *irb_constant(IrB *b, const double *data, const int64_t *shape, int n, DType t);
/* full(shape, value, dtype t). */
Value *irb_full(IrB *b, const int64_t *shape, int n, double value, DType t);
/* x.index_select(dim, constant idx). */
Value *irb_index_select(IrB *b, Value *x, int dim, const int64_t *idx, int64_t n);
/* x padded along dim with `value` (negative pads crop). */
Value *irb_pad_constant(IrB *b, Value *x, int dim, int64_t left, int64_t right, double value);
Value *irb_cat(IrB *b, Value *const *ts, int n, int dim);
#endif
