#ifndef TGC_DRIVER_H
#define TGC_DRIVER_H
#include <stdbool.h>
#include <stdio.h>

#include "frontend/frontend.h"
#include "passes/pipeline.h"

/* The training flags as given (driver/train_options.c). */
#define TRAIN_MAX_FREEZE 256
typedef struct TrainFlags {
    unsigned given; /* bit k: the k-th flag of options_train_flag was given */
    const char *loss;
    OptimKind optim;
    double lr, momentum, weight_decay, beta1, beta2, eps;
    char *freeze[TRAIN_MAX_FREEZE];
    int nfreeze;
} TrainFlags;

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
    /* tgc build --generate of an ONNX decoder: its past keys and values
     * become states (passes/cache_state.h) before the passes run. */
    bool gen_cache;
    /* tgc build --generate's prefill: its logits at one row, chosen by an
     * input gen_row (passes/logits_row.h), before the passes run. */
    bool gen_logits_row;
    /* --train LOSS and the optimizer flags; has_train once checked */
    TrainFlags tf;
    TrainSpec train;
    bool has_train;
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
/* The training flags at argv[*i], like options_precision_flag. */
int options_train_flag(Options *o, int argc, char **argv, int *i, const char *usage_line);
/* Checks them together (after parsing, after options_precision_finish):
 * 0 or an exit code; fills o->train and o->has_train. */
int options_train_finish(Options *o);
void options_train_free(Options *o);
#define TRAIN_FLAGS_USAGE                                                                          \
    "[--train LOSS [--optimizer sgd|adamw|none] [--lr F] [--momentum F] [--weight-decay F]\n"      \
    "                 [--betas B1,B2] [--eps F] [--freeze PAT,...]]"
#define TRAIN_FLAGS_HELP                                                                           \
    "  --train LOSS         a training step: gradients of the 0-d output LOSS and the\n"           \
    "                       optimizer's update of every param (docs/training.md)\n"                \
    "  --optimizer O        sgd (default), adamw, or none (the gradients become outputs\n"         \
    "                       NAME.grad)\n"                                                          \
    "  --lr F, --momentum F, --weight-decay F, --betas B1,B2, --eps F\n"                           \
    "                       torch.optim's hyper-parameters (defaults: lr 1e-3; SGD 0 and 0;\n"     \
    "                       AdamW weight decay 1e-2, betas 0.9,0.999, eps 1e-8)\n"                 \
    "  --freeze PAT,...     params that are not trained: names or shell patterns\n"                \
    "                       (fnmatch: '*.running_mean', 'encoder.layers.*')\n"
/* Reads and compiles o->file (a .tg, or an ONNX model imported in memory
 * into .tg text first); NULL (with messages printed) on error. */
Graph *load_graph(Arena *a, Diag *d, const Options *o, SrcFile *file);
/* Reads a whole regular file (at most 1 GiB); NULL after a message. */
char *driver_read_file(const char *path, int *len);

bool options_parse_define(const char *s, DimOverride *out); /* NAME=VALUE or NAME=LO:HI */
/* Prints cmd's error and returns true when a -D gave a range (LO:HI): only
 * --generate builds and reports take one. */
bool options_refuse_ranges(const char *cmd, const DimOverride *dims, int n);

void usage(FILE *out);
int cmd_build(int argc, char **argv);
int cmd_compile(int argc, char **argv);
int cmd_run(int argc, char **argv);
int cmd_check(int argc, char **argv);
int cmd_show(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_import(int argc, char **argv);
#endif
