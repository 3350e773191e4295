#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "driver/driver.h"
#include "driver/generate.h"
#include "driver/weights_range.h"
#include "frontend/onnx/onnx_import.h"
#include "tgcrt.h"

static int usage_error(const char *cmd, const char *usage_line, const char *fmt, const char *arg) {
    fprintf(stderr, "tgc %s: ", cmd);
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\nusage: %s\n", usage_line);
    return 2;
}

bool options_parse_define(const char *s, DimOverride *out) {
    const char *eq = strchr(s, '=');
    if (!eq || eq == s) return false;
    char *end;
    errno = 0;
    long long v = strtoll(eq + 1, &end, 10);
    if (errno || end == eq + 1) return false;
    long long lo = v;
    bool range = *end == ':';
    if (range) {
        const char *hi_s = end + 1;
        v = strtoll(hi_s, &end, 10);
        if (errno || end == hi_s || lo > v) return false;
    }
    if (*end) return false;
    out->name = strndup(s, (size_t)(eq - s));
    out->value = v;
    out->lo = lo;
    out->range = range;
    return true;
}

bool options_refuse_ranges(const char *cmd, const DimOverride *dims, int n) {
    for (int i = 0; i < n; i++) {
        if (!dims[i].range) continue;
        fprintf(stderr,
                "tgc %s: error: -D %s=%lld:%lld: a range of sizes is accepted only with "
                "--generate (for its batch and prompt length); other builds take one size per "
                "dimension\n",
                cmd, dims[i].name, (long long)dims[i].lo, (long long)dims[i].value);
        return true;
    }
    return false;
}

int options_precision_flag(Options *o, int argc, char **argv, int *i, const char *usage_line) {
    const char *a = argv[*i];
    static const char *flags[] = {"--precision", "--precision-io", "--quantize", "--group-size"};
    int f = -1;
    for (int k = 0; k < 4; k++)
        if (!strcmp(a, flags[k])) f = k;
    if (f < 0) return -1;
    if (*i + 1 >= argc) return usage_error(o->command, usage_line, "%s needs an argument", a);
    const char *v = argv[++*i];
    switch (f) {
    case 0:
        if (!precision_parse(v, &o->prec)) {
            fprintf(stderr,
                    "tgc %s: error: --precision %s: expected f32, bf16, f16, mixed-bf16 or "
                    "mixed-f16\n",
                    o->command, v);
            return 1;
        }
        return 0;
    case 1:
        o->io = dtype_from_name(v);
        if (o->io != DT_F32 && o->io != DT_F16 && o->io != DT_BF16) {
            fprintf(stderr, "tgc %s: error: --precision-io %s: expected f32, bf16 or f16\n",
                    o->command, v);
            return 1;
        }
        o->has_io = true;
        return 0;
    case 2:
        if (strcmp(v, "int8") && strcmp(v, "int4")) {
            fprintf(stderr, "tgc %s: error: --quantize %s: expected int8 or int4\n", o->command, v);
            return 1;
        }
        o->quant_bits = v[3] == '8' ? 8 : 4;
        return 0;
    default: {
        char *end;
        errno = 0;
        long long n = strtoll(v, &end, 10);
        if (errno || end == v || *end || n <= 0 || n > ((long long)1 << 40)) {
            fprintf(stderr, "tgc %s: error: --group-size %s: expected a positive integer\n",
                    o->command, v);
            return 1;
        }
        o->group_size = n;
        return 0;
    }
    }
}

int options_precision_finish(const Options *o) {
    if (o->has_io && o->prec == PREC_DECLARED) {
        fprintf(stderr,
                "tgc %s: error: --precision-io needs --precision (the inputs and outputs keep "
                "their declared dtypes otherwise)\n",
                o->command);
        return 1;
    }
    if (o->group_size && !o->quant_bits) {
        fprintf(stderr, "tgc %s: error: --group-size needs --quantize int8 or int4\n", o->command);
        return 1;
    }
    if (o->group_size && o->quant_bits == 4 && o->group_size % 2) {
        fprintf(stderr,
                "tgc %s: error: --group-size %lld: int4 groups hold an even number of "
                "elements (two per byte)\n",
                o->command, (long long)o->group_size);
        return 1;
    }
    return 0;
}

PrecisionPolicy options_policy(const Options *o) {
    return (PrecisionPolicy){.prec = o->prec,
                             .io = o->has_io ? o->io : DT_NONE,
                             .quant_bits = o->quant_bits,
                             .group_size = o->group_size};
}

int options_parse(Options *o, int argc, char **argv, const char *usage_line) {
    memset(o, 0, sizeof *o);
    o->command = argv[0];
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int prc = options_precision_flag(o, argc, argv, &i, usage_line);
        if (prc < 0) prc = options_train_flag(o, argc, argv, &i, usage_line);
        if (prc >= 0) {
            if (prc) return prc;
            continue;
        }
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            printf("usage: %s\n", usage_line);
            o->help = true;
            return -1;
        } else if (!strcmp(a, "--json")) {
            o->json = true;
        } else if (!strcmp(a, "-D") || !strncmp(a, "-D", 2)) {
            const char *def = a[2] ? a + 2 : (i + 1 < argc ? argv[++i] : NULL);
            if (!def) return usage_error(o->command, usage_line, "-D needs NAME=VALUE%s", "");
            if (o->ndims >= 64)
                return usage_error(o->command, usage_line, "too many -D options%s", "");
            if (!options_parse_define(def, &o->dims[o->ndims])) {
                fprintf(stderr,
                        "tgc %s: error: -D %s: expected NAME=VALUE with an integer VALUE, or "
                        "NAME=LO:HI with LO <= HI\n",
                        o->command, def);
                return 1;
            }
            o->ndims++;
        } else if (a[0] == '-' && a[1]) {
            return usage_error(o->command, usage_line, "unknown option '%s'", a);
        } else if (!o->file) {
            o->file = a;
        } else {
            return usage_error(o->command, usage_line, "unexpected argument '%s' (one FILE only)",
                               a);
        }
    }
    if (!o->file) return usage_error(o->command, usage_line, "missing FILE%s", "");
    int rc = options_precision_finish(o);
    return rc ? rc : options_train_finish(o);
}

void options_free(Options *o) {
    for (int i = 0; i < o->ndims; i++)
        free((void *)o->dims[i].name);
    options_train_free(o);
}

char *driver_read_file(const char *path, int *len) {
    /* Only a regular file: a FIFO would block open() (and every read) until
     * a writer came, hanging `tgc check`. */
    RtError e;
    rt_error_clear(&e);
    int fd = rt_open_regular(path, NULL, &e);
    if (fd < 0) {
        fprintf(stderr, "tgc: error: %s\n", e.msg);
        return NULL;
    }
    FILE *f = fdopen(fd, "rb");
    if (!f) {
        fprintf(stderr, "tgc: error: cannot open '%s': %s\n", path, strerror(errno));
        close(fd);
        return NULL;
    }
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    for (;;) {
        if (n == cap) {
            if (cap >= (size_t)1 << 30) {
                fprintf(stderr, "tgc: error: '%s' is larger than 1 GiB\n", path);
                free(buf);
                fclose(f);
                return NULL;
            }
            cap *= 2;
            buf = realloc(buf, cap);
        }
        size_t r = fread(buf + n, 1, cap - n, f);
        n += r;
        if (r == 0) break;
    }
    bool err = ferror(f);
    fclose(f);
    if (err) {
        fprintf(stderr, "tgc: error: cannot read '%s'\n", path);
        free(buf);
        return NULL;
    }
    *len = (int)n;
    return buf;
}

/* A NUL byte would cut the source short in C string handling; report it
 * where it is instead. */
static bool check_nul(Diag *d, const SrcFile *f) {
    const char *p = memchr(f->text, 0, (size_t)f->len);
    if (!p) return true;
    int off = (int)(p - f->text), line = 1, col = 1;
    for (int i = 0; i < off; i++) {
        if (f->text[i] == '\n')
            line++, col = 1;
        else
            col++;
    }
    SrcLoc loc = {f, line, col, off, 1};
    diag_error(d, loc, "unexpected NUL byte: is this a binary file?");
    return false;
}

Graph *load_graph(Arena *a, Diag *d, const Options *o, SrcFile *file) {
    int len = 0;
    char *text = driver_read_file(o->file, &len);
    if (!text) {
        d->errors++;
        return NULL;
    }
    file->path = o->file;
    if (onnx_is_model_path(o->file)) {
        /* The model becomes .tg text, compiled like any other: messages
         * about it name "MODEL.onnx (imported)" and a line of that text,
         * whose comment names the ONNX node. */
        OnnxImport im;
        bool ok =
            onnx_import(a, d, o->file, (const uint8_t *)text, (size_t)len, o->dims, o->ndims, &im);
        free(text);
        if (!ok) return NULL;
        file->path = arena_printf(a, "%s (imported)", o->file);
        file->text = arena_strndup(a, im.text, (size_t)im.len);
        file->len = im.len;
        if (o->onnx_out)
            *o->onnx_out = im;
        else
            onnx_import_free(&im);
    } else {
        file->text = arena_strndup(a, text, (size_t)len);
        file->len = len;
        free(text);
    }
    if (!check_nul(d, file)) return NULL;
    PrecisionPolicy pol = options_policy(o);
    Graph *g;
    bool cache = o->gen_cache && onnx_is_model_path(o->file);
    if (cache || o->gen_logits_row) {
        g = generate_graph(a, d, file, o->dims, o->ndims, &pol, cache, o->gen_logits_row);
    } else {
        g = tgc_frontend_train(a, d, file, o->dims, o->ndims, &pol,
                               o->has_train ? &o->train : NULL);
    }
    if (!g) return NULL;
    /* Where the policy chose f16 for a value that can overflow it
     * (pipeline_warn, passes/pipeline.c). */
    RtSafetensors *st = NULL;
    if (o->weights && rt_st_open(o->weights, &st, NULL) != TGCRT_OK) st = NULL;
    pipeline_warn(g, d, st ? weights_range : NULL, st);
    rt_st_close(st);
    if (o->quant_bits) {
        bool any = false;
        for (int i = 0; i < g->nvalues && !any; i++)
            any = g->values[i]->quant != NULL;
        if (!any)
            fprintf(stderr,
                    "tgc %s: warning: --quantize int%d: no param is used only as the weight of "
                    "matrix products; nothing is quantized\n",
                    o->command, o->quant_bits);
    }
    return g;
}
