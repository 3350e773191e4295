/* tgc import MODEL.onnx -o MODEL.tg [--weights-out W.safetensors] [-D NAME=VALUE]...
 * Writes the model as .tg text and its weights as safetensors keyed by the
 * .tg's param names (default: MODEL.safetensors beside -o). The text is
 * compiled before anything is written, so an import that would not build
 * writes nothing; both files are written whole or not at all, and neither
 * over the model or its external data. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "driver/driver.h"
#include "driver/outputs.h"
#include "driver/st_write.h"
#include "frontend/onnx/onnx_import.h"
#include "support/atomic_file.h"

static const char *USAGE =
    "tgc import MODEL.onnx -o MODEL.tg [--weights-out W.safetensors] [-D NAME=VALUE]...";

static int usage_err(const char *fmt, const char *arg) {
    fprintf(stderr, "tgc import: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\nusage: %s\n", USAGE);
    return 2;
}

/* MODEL.tg -> MODEL.safetensors (any other -o: with .safetensors added). */
static char *default_weights(const char *out) {
    size_t n = strlen(out);
    char *s = malloc(n + 16);
    if (!s) return NULL;
    memcpy(s, out, n + 1);
    if (n > 3 && !strcmp(out + n - 3, ".tg")) s[n - 3] = 0;
    strcat(s, ".safetensors");
    return s;
}

static bool write_text(const char *path, const char *text, size_t len) {
    RtAtomicFile f;
    rt_afile_init(&f);
    int e = rt_afile_begin(&f, path);
    FILE *fp = e ? NULL : rt_afile_stream(&f);
    if (!e && !fp) e = errno ? errno : ENOMEM;
    if (fp && fwrite(text, 1, len, fp) != len) e = errno ? errno : EIO;
    if (!e) e = rt_afile_commit(&f, 0666);
    if (e) {
        rt_afile_abort(&f);
        fprintf(stderr, "tgc import: error: cannot write '%s': %s\n", path, strerror(e));
    }
    return !e;
}

int cmd_import(int argc, char **argv) {
    Options o;
    memset(&o, 0, sizeof o);
    o.command = "import";
    const char *out = NULL, *wout = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            printf("usage: %s\n\n"
                   "  -o MODEL.tg              the graph, as .tg text\n"
                   "  --weights-out W          the initializers as safetensors (default: -o with\n"
                   "                           .safetensors for .tg)\n"
                   "  -D NAME=VALUE            the default of a dynamic axis (else 1)\n",
                   USAGE);
            options_free(&o);
            return 0;
        } else if (!strcmp(a, "-o") || !strcmp(a, "--weights-out")) {
            if (i + 1 >= argc) {
                options_free(&o);
                return usage_err("%s needs an argument", a);
            }
            if (a[1] == 'o')
                out = argv[++i];
            else
                wout = argv[++i];
        } else if (!strncmp(a, "-D", 2)) {
            const char *def = a[2] ? a + 2 : (i + 1 < argc ? argv[++i] : NULL);
            if (!def || o.ndims >= 64) {
                options_free(&o);
                return usage_err(def ? "too many -D options%s" : "-D needs NAME=VALUE%s", "");
            }
            if (!options_parse_define(def, &o.dims[o.ndims])) {
                fprintf(stderr,
                        "tgc import: error: -D %s: expected NAME=VALUE with an integer VALUE, or "
                        "NAME=LO:HI with LO <= HI\n",
                        def);
                options_free(&o);
                return 1;
            }
            o.ndims++;
        } else if (a[0] == '-' && a[1]) {
            options_free(&o);
            return usage_err("unknown option '%s'", a);
        } else if (!o.file) {
            o.file = a;
        } else {
            options_free(&o);
            return usage_err("unexpected argument '%s' (one MODEL.onnx only)", a);
        }
    }
    if (!o.file || !out) {
        options_free(&o);
        return usage_err(!o.file ? "missing MODEL.onnx%s" : "missing -o MODEL.tg%s", "");
    }
    char *wdef = wout ? NULL : default_weights(out);
    if (!wout) wout = wdef;
    int rc = 1;
    Arena a = {0};
    Diag d;
    diag_init(&d, stderr);
    OnnxImport im;
    memset(&im, 0, sizeof im);
    o.onnx_out = &im;
    IoSet io;
    ioset_init(&io, "import");
    if (!wout || options_refuse_ranges("import", o.dims, o.ndims)) goto done;
    if (!onnx_is_model_path(o.file)) {
        fprintf(stderr, "tgc import: error: '%s': expected an ONNX model (a .onnx file)\n", o.file);
        goto done;
    }
    /* Importing and compiling in one: the text must be a valid graph. */
    SrcFile file;
    Graph *g = load_graph(&a, &d, &o, &file);
    if (!g) {
        if (d.errors > 1 && d.out) fprintf(stderr, "%d errors\n", d.errors);
        goto done;
    }
    /* Nothing is written before every output is checked against every
     * file read: the model and its external data (cli.md). */
    ioset_read(&io, "the input model", o.file);
    ioset_read_all(&io, "the model's external data", im.data_files, im.ndata_files);
    ioset_write(&io, "-o", out);
    ioset_write(&io, "--weights-out", wout);
    if (!ioset_check(&io)) goto done;
    StBlob *blobs = st_blobs_of_onnx(&im);
    if (!blobs) goto done;
    bool ok =
        write_text(out, im.text, (size_t)im.len) && st_write("import", wout, blobs, im.nparams);
    free(blobs);
    rc = ok ? 0 : 1;
done:
    ioset_free(&io);
    onnx_import_free(&im);
    free(wdef);
    options_free(&o);
    arena_free(&a);
    return rc;
}
