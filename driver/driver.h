#ifndef TGC_DRIVER_H
#define TGC_DRIVER_H
#include <stdbool.h>
#include <stdio.h>

#include "frontend/frontend.h"
#include "passes/pipeline.h"

/* Options shared by the subcommands that compile a graph. */
typedef struct Options {
    const char *command;
    const char *file;
    DimOverride dims[64];
    int ndims;
    bool json;
    bool help;
    /* --precision, --precision-io, --quantize, --group-size */
    Precision prec;
    bool has_io;
    DType io;
    int quant_bits;
    int64_t group_size;
    const char *weights; /* --weights, when the command has one: ranges for warnings */
    /* When FILE is an ONNX model: where load_graph leaves the import (its
     * params, for build to embed); NULL: the import is dropped once the
     * graph is built. */
    struct OnnxImport *onnx_out;
} Options;

/* Parses argv; returns 0 to go on, else the exit code (2: usage error). */
int options_parse(Options *o, int argc, char **argv, const char *usage_line);
/* The precision flags at argv[*i] (advancing *i past their value): 0 when
 * taken, -1 when argv[*i] is none of them, else the exit code. */
int options_precision_flag(Options *o, int argc, char **argv, int *i, const char *usage_line);
/* Checks the precision flags together (after parsing): 0 or an exit code. */
int options_precision_finish(const Options *o);
/* The policy the flags ask for. */
PrecisionPolicy options_policy(const Options *o);
#define PRECISION_FLAGS_HELP                                                                       \
    "  --precision P        f32, bf16, f16 (every float value), mixed-bf16 or mixed-f16\n"         \
    "                       (products in the low dtype, softmax/norms/reductions in f32)\n"        \
    "  --precision-io D     floating inputs and outputs in D (f32, bf16, f16), not as declared\n"  \
    "  --quantize int8|int4 quantize the weights of matrix products (needs --weights to build)\n"  \
    "  --group-size N       k elements per scale (int4 default 128; int8 default per channel)\n"
void options_free(Options *o);
/* Reads and compiles o->file (a .tg, or an ONNX model imported in memory
 * into .tg text first); NULL (with messages printed) on error. */
Graph *load_graph(Arena *a, Diag *d, const Options *o, SrcFile *file);
/* Reads a whole regular file (at most 1 GiB); NULL after a message. */
char *driver_read_file(const char *path, int *len);

bool options_parse_define(const char *s, DimOverride *out); /* NAME=VALUE */

void usage(FILE *out);
int cmd_build(int argc, char **argv);
int cmd_compile(int argc, char **argv);
int cmd_run(int argc, char **argv);
int cmd_check(int argc, char **argv);
int cmd_show(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_import(int argc, char **argv);
#endif
