/* What `tgc show` prints: every value with its layout, as text or JSON. */
#ifndef TGC_PRINT_H
#define TGC_PRINT_H
#include <stdio.h>

#include "ir/ir.h"

void print_show_text(FILE *out, const Graph *g);
/* Returns a malloc'd JSON string (cli.md's `tgc show --json` schema). */
char *print_show_json(const Graph *g);
#endif
