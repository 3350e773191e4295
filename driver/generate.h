/* tgc build --generate and tgc report --generate: how a decoder graph is
 * compiled into a prefill program and a decode step over one KV cache
 * (its `state` params). */
#ifndef TGC_GENERATE_H
#define TGC_GENERATE_H
#include <stdbool.h>
#include <stdint.h>

/* The prefill's tokens per run for a prompt range -D seq=LO:HI (or
 * seq=HI) and a cache of max_seq tokens: HI up to 128, and never longer
 * than the cache (it could not be written into it). A longer prompt runs
 * in several chunks; more than 128 rows gain little in the products and
 * cost arena (the chunk's activations and its [chunk, max_seq] attention
 * scores). */
#define GEN_MAX_CHUNK 128
static inline int64_t generate_chunk(int64_t seq_hi, int64_t max_seq) {
    int64_t c = seq_hi < GEN_MAX_CHUNK ? seq_hi : GEN_MAX_CHUNK;
    return c < max_seq ? c : max_seq;
}

/* tgc build --generate of an ONNX decoder (driver/generate_onnx.c): out
 * is b with the -D list for the model's own axes (batch, a sequence of 1,
 * a past of max_seq - 1, attention_mask's max_seq) and the user's others;
 * names live in a. False after a message. */
struct BuildOpts;
struct Arena;
bool generate_onnx_dims(const struct BuildOpts *b, struct Arena *a, struct BuildOpts *out,
                        int64_t *max_seq);
#endif
