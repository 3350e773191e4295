/* An einsum equation read against its operands' ranks, once for every
 * reader: inference (ir/infer_matmul.c), the code generators' contraction
 * description (codegen/einsum_desc.c) and the f16 range pass's count of
 * summed terms (passes/f16_range_read.c). Shapes are not looked at: each
 * reader checks and combines sizes its own way. */
#ifndef TGC_EINSUM_EQ_H
#define TGC_EINSUM_EQ_H
#include <stdbool.h>
#include <stddef.h>

#include "ir/ir.h"

/* Subscript codes: a letter is its character; the dims an operand's "..."
 * covers are 128 + i, right-aligned so that every operand's ellipsis
 * lines up (an operand whose "..." covers n dims uses 128 + TG_MAX_DIMS -
 * n .. 128 + TG_MAX_DIMS - 1), as broadcasting aligns them. */
#define EINSUM_NCODES (128 + TG_MAX_DIMS)
#define EINSUM_ELL(nell, x) (128 + TG_MAX_DIMS - (nell) + (x))

typedef struct EinsumEq {
    int nops;
    int rank[TG_EINSUM_MAX_OPERANDS];
    int code[TG_EINSUM_MAX_OPERANDS][TG_MAX_DIMS]; /* each operand dim's subscript */
    bool has_ell[TG_EINSUM_MAX_OPERANDS];          /* operand k has "..." (maybe of no dims) */
    int nell;                                      /* the widest ellipsis (0 when none) */
    bool any_ell;                                  /* some operand has "..." */
    bool explicit_out;                             /* "->" given */
    bool out_ell;                                  /* the output keeps the ellipsis dims */
    int nout;
    int out[TG_MAX_DIMS]; /* the output's subscripts in order: as written after
                             "->", else the ellipsis dims then each letter seen
                             once, in ASCII order (torch.einsum's implicit form) */
    int count[128];       /* each letter's occurrences over the operands */
} EinsumEq;

/* Reads eq for nops operands of the given ranks. False with torch.einsum's
 * message in err when the equation does not fit them (a bad subscript, two
 * ellipses, a subscript count that is not the operand's rank, too many or
 * too few operands, an output subscript no operand has or that repeats). */
bool einsum_eq_read(const char *eq, int nops, const int *ranks, EinsumEq *e, char *err,
                    size_t nerr);
#endif
