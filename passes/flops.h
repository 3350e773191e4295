/* Floating-point operation counts, for the report. The convention (also
 * printed by `tgc report` and written in docs/memory.md):
 *   - matrix products count 2*m*k*n (a multiply and an add per term);
 *     linear adds one per output element for the bias; outer counts one
 *     multiply per output element; einsum counts 2 per point of its
 *     iteration space per extra operand;
 *   - elementwise operations count 1 per output element; gelu 8, silu 4;
 *   - softmax / log_softmax 5, layer_norm 8, rms_norm 5 per element;
 *   - reductions 1 per input element (var/std/logsumexp 3);
 *   - copies, views, gathers and creation count 0;
 *   - operations on integers and bools only count 0.
 * Requires: a graph with shapes inferred. Gives: counts that saturate
 * instead of overflowing. */
#ifndef TGC_FLOPS_H
#define TGC_FLOPS_H
#include "ir/ir.h"

int64_t flops_value(const Value *v);
int64_t flops_graph(const Graph *g); /* over the live materialising values */
#endif
