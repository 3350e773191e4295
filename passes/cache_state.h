/* An ONNX decoder's KV cache in Hugging Face's convention turned into
 * states (tgc build --generate; docs/generation.md "ONNX decoders"). */
#ifndef TGC_CACHE_STATE_H
#define TGC_CACHE_STATE_H
#include "ir/ir.h"

/* For each input past_key_values.N.key|value (or .N.0|1, past.N.key; by
 * the imported names, dots as underscores) read only by a cat along dim 2
 * with the new keys or values: the input becomes a zeroed state of the
 * cat's shape (the whole cache), written by slice_scatter(state, new, dim
 * = 2, start = pos) over a new input `pos : i64[]`, and the cat's result,
 * the present keys or values, is no longer an output. With one new row
 * the cat becomes that write; with more (a prefill's chunk) it stays,
 * over the written state's first `past` rows, so that the chunk is still
 * the last rows its readers see (cache_state.c says why). The graph must
 * be the front end's, before pipeline_prepare. False after errors
 * reported to d (a past input read otherwise, or none at all). */
bool pass_cache_state(Graph *g, Diag *d);
/* A past input's name: past_key_values.N.key|value|0|1 or past.N.*, with
 * dots or underscores (the ONNX name or the imported one). */
bool cache_state_is_past_name(const char *name);
#endif
