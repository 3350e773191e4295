/* The libraries a program compiled by tgc links, by what its graph uses
 * (link_line.c). The lists come from cmake/TgcLinkLibs.cmake, the one
 * source that tgcrt.pc and tgcConfig.cmake are configured from too. */
#ifndef TGC_LINK_LINE_H
#define TGC_LINK_LINE_H
#include <stdbool.h>
#include <stddef.h>

typedef struct LinkNeeds {
    bool conv;        /* a CPU program: oneDNN (convolutions, f32 products) */
    bool cuda;        /* --target cuda: libdl */
    bool static_blas; /* --static-runtime: OpenBLAS linked statically */
} LinkNeeds;

enum { LINK_LINE_MAX_WORDS = 24 };

/* What any program for target ("cpu", "cuda") may need, whatever its
 * graph: with target NULL, of any target, every group (tgcrt.pc's). */
LinkNeeds link_needs_any(const char *target, bool static_blas);

/* The words that follow libtgcrt.a on the link line, in link order, then
 * the sanitizer flag when the runtime is instrumented; out gets them and
 * a NULL (cap >= LINK_LINE_MAX_WORDS). Returns their count. */
int link_line_words(const LinkNeeds *n, const char **out, int cap);

/* "-ltgcrt WORDS..." in buf, "-LLIBDIR " first when libdir is not NULL.
 * false when it does not fit in cap. */
bool link_line_format(const LinkNeeds *n, const char *libdir, char *buf, size_t cap);

/* tgc compile --print-link-line: the line with -L the directory of the
 * libtgcrt.a tgc links against, on stdout. Returns 0, or 1 after a
 * message naming cmd when there is no runtime. */
int link_line_print(const char *cmd, const LinkNeeds *n);
#endif
