/* tgc build --generate and tgc report --generate: how a decoder graph is
 * compiled into a prefill program and a decode step over one KV cache
 * (its `state` params). */
#ifndef TGC_GENERATE_H
#define TGC_GENERATE_H
#include <stdint.h>

/* The prefill's tokens per run for a prompt range -D seq=LO:HI (or
 * seq=HI): HI up to 128. A longer prompt runs in several chunks; more
 * than 128 rows gain little in the products and cost arena (the chunk's
 * activations and its [chunk, max_seq] attention scores). */
#define GEN_MAX_CHUNK 128
static inline int64_t generate_chunk(int64_t seq_hi) {
    return seq_hi < GEN_MAX_CHUNK ? seq_hi : GEN_MAX_CHUNK;
}
#endif
