/* Checks of generated C text (the glue and the header of codegen/glue.c)
 * that stand in for the system C compiler in the fuzz target: see
 * gen_check.c. Each aborts with a message and the text when a check fails. */
#ifndef TGC_GEN_CHECK_H
#define TGC_GEN_CHECK_H
#include "codegen/codegen.h"

void gen_check_glue(const char *text, const CgProgram *p, const GlueOptions *o);
void gen_check_header(const char *text, const CgProgram *p);
#endif
