/* The C compiler steps of tgc build, compile and run (build_cc.h).
 *
 * The glue is compiled on its own, before the link, so that the two kinds
 * of failure are told apart: the compiler rejecting code tgc generated is
 * tgc's bug (exit 3, the source kept for the report), while a link that
 * fails is usually the machine's (a missing static OpenBLAS: exit 1, with
 * the linker's own messages). */
#define _XOPEN_SOURCE 700 /* mkdtemp */
#include "driver/build_cc.h"

#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "driver/toolchain.h"
#include "support/atomic_file.h"

enum { LOG_LINES = 20 }; /* of the compiler's messages, shown with the error */

/* Moves from to to: a rename, or across file systems a copy through the
 * atomic writer (rt_atomic.h). */
static bool move_file(const char *from, const char *to) {
    if (rename(from, to) == 0) return true;
    if (rt_afile_copy(from, to, 0666)) return false;
    unlink(from);
    return true;
}

static void print_head(const char *log) {
    FILE *f = fopen(log, "r");
    char line[1024];
    int n = 0;
    while (f && fgets(line, sizeof line, f)) {
        if (n++ == LOG_LINES) {
            fprintf(stderr, "  ...\n");
            break;
        }
        fprintf(stderr, "  %s", line);
        if (!strchr(line, '\n')) fputc('\n', stderr);
    }
    if (f) fclose(f);
}

int build_cc_glue(const char *cmd, const char *inc, const char *tmp, bool pic, bool sanitize) {
    char glue[PATH_MAX + 32], glue_o[PATH_MAX + 32], log[PATH_MAX + 32];
    char incflag[PATH_MAX + 8], prefix_map[PATH_MAX + 32];
    snprintf(glue, sizeof glue, "%s/glue.c", tmp);
    snprintf(glue_o, sizeof glue_o, "%s/glue.o", tmp);
    snprintf(log, sizeof log, "%s/cc.log", tmp);
    snprintf(incflag, sizeof incflag, "-I%s", inc);
    /* Reproducible objects: no temporary directory name in them. */
    snprintf(prefix_map, sizeof prefix_map, "-ffile-prefix-map=%s=.", tmp);
    char *argv[16];
    int n = 0;
    argv[n++] = (char *)toolchain_cc();
    argv[n++] = "-O2";
    if (pic) argv[n++] = "-fPIC";
    argv[n++] = prefix_map;
    argv[n++] = incflag;
    if (sanitize && toolchain_sanitize_flag()) argv[n++] = (char *)toolchain_sanitize_flag();
    argv[n++] = "-c";
    argv[n++] = glue;
    argv[n++] = "-o";
    argv[n++] = glue_o;
    argv[n] = NULL;
    int rc = toolchain_exec_log(argv, log);
    if (rc == 0) return 0;
    if (rc == 127 || rc < 0) {
        fprintf(stderr, "tgc %s: error: cannot run the C compiler '%s' (set CC to one)\n", cmd,
                argv[0]);
        print_head(log);
        return 1;
    }
    /* A compiler that failed on a full disk could not write: the
     * machine's problem, not code tgc generated (its log may be lost too). */
    struct statvfs fs;
    if (statvfs(tmp, &fs) == 0 && (uint64_t)fs.f_bavail * fs.f_frsize < ((uint64_t)1 << 20)) {
        fprintf(stderr,
                "tgc %s: error: cannot write in the temporary directory '%s': No space left on "
                "device (the C compiler exited with status %d; set TMPDIR to a directory with "
                "room)\n",
                cmd, tmp, rc);
        print_head(log);
        return 1;
    }
    /* Keep the source where the temporary directory's removal does not
     * reach it, under a name no stale-temporary sweep matches. */
    const char *tdir = getenv("TMPDIR");
    char keep[PATH_MAX], kept_src[PATH_MAX + 32], kept_log[PATH_MAX + 32];
    snprintf(keep, sizeof keep, "%s/tgc-failed-XXXXXX", tdir && *tdir ? tdir : "/tmp");
    bool kept = mkdtemp(keep) != NULL;
    snprintf(kept_src, sizeof kept_src, "%s/glue.c", keep);
    snprintf(kept_log, sizeof kept_log, "%s/cc.log", keep);
    kept = kept && move_file(glue, kept_src);
    if (kept) move_file(log, kept_log);
    fprintf(stderr,
            "tgc %s: internal error: the C compiler rejected the generated code (%s exited with "
            "status %d); the source is kept at %s (please report it)\n",
            cmd, argv[0], rc, kept ? kept_src : "(nowhere: it could not be copied)");
    print_head(kept ? kept_log : log);
    return 3;
}

int build_cc_link_exe(const char *cmd, const char *lib, const char *tmp, bool kernels,
                      const LinkNeeds *needs, const char *exe, const char *shown) {
    char glue_o[PATH_MAX + 32], obj[PATH_MAX + 32];
    snprintf(glue_o, sizeof glue_o, "%s/glue.o", tmp);
    snprintf(obj, sizeof obj, "%s/kernels.o", tmp);
    char *link[8 + LINK_LINE_MAX_WORDS];
    int n = 0;
    link[n++] = (char *)toolchain_cc();
    link[n++] = "-O2";
    if (toolchain_linker_flag()) link[n++] = (char *)toolchain_linker_flag();
    link[n++] = "-o";
    link[n++] = (char *)exe;
    link[n++] = glue_o;
    if (kernels) link[n++] = obj;
    link[n++] = (char *)lib;
    /* The same libraries the header's comment and --print-link-line name. */
    link_line_words(needs, (const char **)link + n, LINK_LINE_MAX_WORDS);
    if (toolchain_exec(link, false) == 0) return 0;
    fprintf(stderr, "tgc %s: error: linking '%s' failed (the C compiler's messages are above)\n",
            cmd, shown);
    return 1;
}

int build_cc_link_object(const char *cmd, const char *tmp, bool kernels, const char *out,
                         const char *shown) {
    char glue_o[PATH_MAX + 32], obj[PATH_MAX + 32];
    snprintf(glue_o, sizeof glue_o, "%s/glue.o", tmp);
    snprintf(obj, sizeof obj, "%s/kernels.o", tmp);
    char *argv[] = {(char *)toolchain_cc(), "-r", "-nostdlib", "-o", (char *)out, glue_o,
                    kernels ? obj : NULL,   NULL};
    if (toolchain_exec(argv, false) == 0) return 0;
    fprintf(stderr, "tgc %s: error: cannot link '%s'\n", cmd, shown);
    return 1;
}
