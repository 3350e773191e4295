/* The link line of compiled programs (link_line.h). One table, generated
 * from cmake/TgcLinkLibs.cmake, gives the words; every line tgc links
 * with or prints is made here, so the executable tgc build links, the
 * header's comment and --print-link-line never disagree. */
#define _XOPEN_SOURCE 700 /* realpath */
#include "driver/link_line.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "driver/toolchain.h"
#include "tgc_link_libs.h"

static const char *const CONV[] = {TGC_LINK_CONV NULL};
static const char *const BLAS[] = {TGC_LINK_BLAS NULL};
static const char *const BASE[] = {TGC_LINK_BASE NULL};
static const char *const CUDA[] = {TGC_LINK_CUDA NULL};

LinkNeeds link_needs_any(const char *target, bool static_blas) {
    /* A CUDA program's convolutions are cuDNN's, loaded with dlopen. */
    bool cuda = target && !strcmp(target, "cuda");
    return (LinkNeeds){.conv = !cuda, .cuda = !target || cuda, .static_blas = static_blas};
}

static int add(const char **out, int n, int cap, const char *const *group) {
    for (; *group; group++)
        if (n < cap - 1) out[n++] = *group;
    return n;
}

int link_line_words(const LinkNeeds *nd, const char **out, int cap) {
    int n = 0;
    if (nd->conv) n = add(out, n, cap, CONV);
    /* The CBLAS gemm routines of a static OpenBLAS pull in no Fortran
     * runtime: only OpenBLAS itself changes. */
    static const char *const ST[] = {"-Wl,-Bstatic", NULL}, *const DYN[] = {"-Wl,-Bdynamic", NULL};
    if (nd->static_blas) n = add(out, n, cap, ST);
    n = add(out, n, cap, BLAS);
    if (nd->static_blas) n = add(out, n, cap, DYN);
    n = add(out, n, cap, BASE);
    if (nd->cuda) n = add(out, n, cap, CUDA);
    /* An instrumented libtgcrt needs the sanitizers' runtimes. */
    const char *san = toolchain_sanitize_flag();
    if (san && n < cap - 1) out[n++] = san;
    out[n] = NULL;
    return n;
}

bool link_line_format(const LinkNeeds *nd, const char *libdir, char *buf, size_t cap) {
    const char *w[LINK_LINE_MAX_WORDS];
    link_line_words(nd, w, LINK_LINE_MAX_WORDS);
    int len = libdir ? snprintf(buf, cap, "-L%s -ltgcrt", libdir) : snprintf(buf, cap, "-ltgcrt");
    for (int i = 0; w[i] && len >= 0 && (size_t)len < cap; i++)
        len += snprintf(buf + len, cap - (size_t)len, " %s", w[i]);
    return len >= 0 && (size_t)len < cap;
}

int link_line_print(const char *cmd, const LinkNeeds *nd) {
    char lib[PATH_MAX], inc[PATH_MAX], dir[PATH_MAX], line[PATH_MAX + 512];
    if (!toolchain_find_runtime(lib, inc, sizeof lib)) {
        fprintf(stderr,
                "tgc %s: error: cannot find the runtime library libtgcrt.a (set "
                "TGC_RUNTIME_DIR to the directory holding libtgcrt.a and tgcrt.h)\n",
                cmd);
        return 1;
    }
    /* PREFIX/lib/tgc rather than PREFIX/bin/../lib/tgc. */
    if (!realpath(lib, dir)) snprintf(dir, sizeof dir, "%s", lib);
    char *slash = strrchr(dir, '/');
    if (!slash)
        snprintf(dir, sizeof dir, ".");
    else
        slash[slash == dir] = '\0'; /* "/libtgcrt.a" leaves "/" */
    if (!link_line_format(nd, dir, line, sizeof line)) {
        fprintf(stderr, "tgc %s: error: the runtime's directory '%s' is too long\n", cmd, dir);
        return 1;
    }
    printf("%s\n", line);
    return 0;
}
