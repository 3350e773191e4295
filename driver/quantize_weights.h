/* The weights file a --quantize build embeds (see quantize_weights.c). */
#ifndef TGC_QUANTIZE_WEIGHTS_H
#define TGC_QUANTIZE_WEIGHTS_H
#include <stdbool.h>

#include "ir/ir.h"

/* Writes to out a safetensors file with every param of g: quantized ones
 * (q and scales) computed from src's tensors, the others copied from src.
 * False, with a message naming the tensor, on any error. */
bool quantize_weights_write(const Graph *g, const char *src, const char *out, const char *cmd);
#endif
