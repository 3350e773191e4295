/* The prefill of tgc build --generate reads one row of its logits: the
 * prompt's last token, in the prompt's last chunk (docs/generation.md
 * "What the build makes"). */
#ifndef TGC_LOGITS_ROW_H
#define TGC_LOGITS_ROW_H
#include "ir/ir.h"

/* The input this pass adds: the row of the run whose logits are wanted. */
#define LOGITS_ROW_INPUT "gen_row"

/* When the output `logits` [batch, seq, vocab] is a matrix product (linear
 * or matmul) of x [batch, seq, d] with a 2-D weight, the product takes
 * index_select(x, 1, gen_row) instead, over a new last input
 * `gen_row : i64[1]`: the logits become [batch, 1, vocab] and the vocab
 * product runs for one row instead of seq (a quarter of a 128-token chunk
 * of examples/llama_generate.tg at its benchmark size). Any other form of
 * the logits is left as it is (the prefill then has no gen_row input). The graph must be the
 * front end's, before pipeline_prepare. False after an error reported to
 * d (an input already named gen_row). */
bool pass_logits_row(Graph *g, Diag *d);
#endif
