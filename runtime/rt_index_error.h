/* The index-error cell (internal to the runtime; docs/runtime.md).
 *
 * Gather, index_select, embedding and x[idx] kernels, on an index out of
 * range, set the cell: three 64-bit words, the first thread to claim word 0
 * (compare-and-swap from 0) writing all three:
 *   [0] the description: the address of a constant string (CPU), or 1 + i
 *       for RtCudaProgram.error_names[i] (CUDA);
 *   [1] the offending index value, as the index tensor holds it;
 *   [2] its element offset in the index tensor (sum of position * stride).
 * A description is "@SHAPE;STRIDES;TEXT": the index tensor's shape and
 * strides (comma-separated, empty for 0-d), then the message with "{value}"
 * and "{pos}" where the value and the position ([1, 3]) go. A description
 * without the '@' is a bare name (older programs). */
#ifndef TGCRT_INDEX_ERROR_H
#define TGCRT_INDEX_ERROR_H
#include <stddef.h>
#include <stdint.h>

enum { RT_INDEX_ERROR_WORDS = 3 };

/* Writes the message for cell words (value, offset) and description desc. */
void rt_index_error_format(const char *desc, int64_t value, int64_t offset, char *out, size_t size);
#endif
