/* tgc build --generate and tgc report --generate: how a decoder graph is
 * compiled into a prefill program and a decode step over one KV cache
 * (its `state` params). */
#ifndef TGC_GENERATE_H
#define TGC_GENERATE_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

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

/* An ONNX decoder's chunk: its past input keeps at least one row (the
 * import refuses a zero-size axis), so the chunk is below the cache's
 * length. */
static inline int64_t generate_onnx_chunk(int64_t seq_hi, int64_t max_seq) {
    return generate_chunk(seq_hi, max_seq - 1);
}

/* An ONNX decoder in Hugging Face's convention (driver/generate_onnx.c):
 * its declared inputs and the generation's sizes from the user's flags. */
struct Options;
struct Arena;
struct OnnxInput;
struct Diag;
struct Graph;
struct DimOverride;
struct PrecisionPolicy;
typedef struct GenOnnx {
    const char *cmd;
    const struct Options *o; /* the user's: the file and -D */
    struct OnnxInput *in;    /* the model's inputs */
    int nin;
    int64_t batch, batch_lo; /* -D batch=B|LO:HI (1) */
    int64_t max_seq;         /* --max-seq, -D max_seq or the bound of -D seq */
    int64_t seq_hi, seq_lo;  /* -D seq=LO:HI (1:max_seq): the prompt's length */
    bool seq_given;          /* -D seq was given (else seq_hi follows the cache's length) */
} GenOnnx;

/* Reads the model's inputs and checks that it is such a decoder
 * (input_ids, attention_mask, past inputs); max_seq: the report's
 * --max-seq, 0 when not given. False after a message. */
bool generate_onnx_read(const char *cmd, const struct Options *o, int64_t max_seq, struct Arena *a,
                        GenOnnx *m);
/* The -D list (out: 64 entries) importing the model for `seq` tokens a
 * run over a cache of max_seq: its axes for batch, seq, a past of max_seq
 * - seq and attention_mask's max_seq, then the user's others (names in
 * a). False after a message to msgs (NULL: none), e.g. an axis fixed at
 * another size. */
bool generate_onnx_dims(const GenOnnx *m, int64_t batch, int64_t max_seq, int64_t seq,
                        struct Arena *a, FILE *msgs, struct DimOverride *out, int *nout);
/* The model imported at dims, its cache made states (passes/cache_state.h)
 * and the passes run under pol, as tgc build --generate compiles each
 * program: NULL after errors reported to d. */
struct Graph *generate_onnx_load(struct Arena *a, struct Diag *d, const char *path,
                                 const uint8_t *bytes, size_t len, const struct DimOverride *dims,
                                 int ndims, const struct PrecisionPolicy *pol, bool prefill);
/* A generating program's graph from its source (a .tg, or an ONNX
 * model's imported text): the front end at dims, then cache_state (an
 * ONNX decoder's cache made states: passes/cache_state.h) and, for the
 * prefill, logits_row (its logits at one row: passes/logits_row.h), then
 * the passes under pol. NULL after errors reported to d. */
struct Graph *generate_graph(struct Arena *a, struct Diag *d, const struct SrcFile *file,
                             const struct DimOverride *dims, int ndims,
                             const struct PrecisionPolicy *pol, bool cache_state, bool prefill);
#endif
