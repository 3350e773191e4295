/* The C compiler steps of tgc build, compile and run: the generated glue
 * compiled on its own, then the link (build_cc.c). */
#ifndef TGC_BUILD_CC_H
#define TGC_BUILD_CC_H
#include <stdbool.h>

#include "driver/link_line.h"

/* Compiles TMP/glue.c into TMP/glue.o (with -fPIC for an object that may
 * go into a shared library; with the sanitizers when programs link with
 * them). The compiler's messages go to TMP/cc.log. Returns 0; 3 when the
 * compiler rejects the code (an internal error: the source and the log
 * are kept in $TMPDIR/tgc-failed-XXXXXX, and the message says where);
 * 1 when the compiler cannot be run at all. cmd names the subcommand. */
int build_cc_glue(const char *cmd, const char *inc, const char *tmp, bool pic, bool sanitize);

/* Links TMP/glue.o (and TMP/kernels.o when kernels) with the runtime
 * library lib and the libraries needs names (link_line.h) into the
 * executable exe. Returns 0, or 1 after "linking 'NAME' failed" naming
 * shown (the compiler's messages are printed above it). */
int build_cc_link_exe(const char *cmd, const char *lib, const char *tmp, bool kernels,
                      const LinkNeeds *needs, const char *exe, const char *shown);

/* Combines TMP/glue.o (and TMP/kernels.o) into one relocatable object
 * at out. Returns 0, or 1 after "cannot link 'NAME'" naming shown. */
int build_cc_link_object(const char *cmd, const char *tmp, bool kernels, const char *out,
                         const char *shown);
#endif
