#ifndef TGC_DRIVER_H
#define TGC_DRIVER_H
#include <stdbool.h>
#include <stdio.h>

#include "passes/pipeline.h"

/* Options shared by the subcommands that compile a graph. */
typedef struct Options {
    const char *command;
    const char *file;
    DimOverride dims[64];
    int ndims;
    bool json;
    bool help;
} Options;

/* Parses argv; returns 0 to go on, else the exit code (2: usage error). */
int options_parse(Options *o, int argc, char **argv, const char *usage_line);
void options_free(Options *o);
/* Reads and compiles o->file; NULL (with messages printed) on error. */
Graph *load_graph(Arena *a, Diag *d, const Options *o, SrcFile *file);

bool options_parse_define(const char *s, DimOverride *out); /* NAME=VALUE */

void usage(FILE *out);
int cmd_build(int argc, char **argv);
int cmd_compile(int argc, char **argv);
int cmd_run(int argc, char **argv);
int cmd_check(int argc, char **argv);
int cmd_show(int argc, char **argv);
int cmd_report(int argc, char **argv);
#endif
