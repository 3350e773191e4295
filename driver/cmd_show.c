/* tgc check and tgc show. */
#include <stdlib.h>

#include "driver/driver.h"
#include "ir/print.h"

static int compile_and(int argc, char **argv, const char *usage_line, bool show) {
    Options o;
    int rc = options_parse(&o, argc, argv, usage_line);
    if (!rc && options_refuse_ranges(o.command, o.dims, o.ndims)) rc = 1;
    if (rc) {
        options_free(&o);
        return rc < 0 ? 0 : rc;
    }
    Arena a = {0};
    Diag d;
    diag_init(&d, stderr);
    SrcFile file;
    Graph *g = load_graph(&a, &d, &o, &file);
    if (g && show) {
        if (o.json) {
            char *s = print_show_json(g);
            puts(s);
            free(s);
        } else {
            print_show_text(stdout, g);
        }
    }
    if (!g && d.errors > 1 && d.out) fprintf(stderr, "%d errors\n", d.errors);
    options_free(&o);
    arena_free(&a);
    return g ? 0 : 1;
}

int cmd_check(int argc, char **argv) {
    return compile_and(argc, argv, "tgc check FILE [-D NAME=VALUE]...", false);
}

int cmd_show(int argc, char **argv) {
    return compile_and(argc, argv, "tgc show FILE [-D NAME=VALUE]... [--json]", true);
}
