/* A small driver over libtgcrt's readers and writers, for run_runtime.py:
 * it prints what the runtime read as text (dtype, shape, byte count and an
 * FNV-1a hash of the bytes, which the script recomputes from numpy/torch),
 * or the runtime's error message on stderr with the status's exit code.
 *
 *   rt_probe npy FILE               read with rt_npy_read
 *   rt_probe npy-mem FILE           the file's bytes through rt_npy_parse
 *   rt_probe input FILE DESC        rt_npy_load_input("x", DESC), e.g. bf16[2,3]
 *   rt_probe copy FILE OUT          read FILE, write it to OUT (rt_npy_write)
 *   rt_probe write-bf16 FILE OUT    read an f32 FILE, round to bf16, write OUT
 *   rt_probe st FILE [NAME]         every tensor of a safetensors file (or NAME)
 *   rt_probe st-mem FILE [NAME]     the same through rt_st_open_memory
 *   rt_probe st-expect FILE NAME DESC   rt_st_expect
 *   rt_probe f16-table              hash of rt_f16_to_f32 over all 65536 halves
 *
 * Output lines: [NAME ]dtype=f32 shape=[2, 3] bytes=24 fnv=0123456789abcdef */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tgcrt.h"

static uint64_t fnv1a(const void *p, size_t n) {
    const unsigned char *b = p;
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * 0x100000001b3ull;
    return h;
}

static void print_tensor(const char *name, const RtDesc *d, const void *data, size_t nbytes) {
    char s[RT_DESC_STR_MAX];
    rt_desc_format(d, s, sizeof s);
    /* "f32[2, 3]" -> dtype=f32 shape=[2, 3] */
    char *br = strchr(s, '[');
    if (name) printf("%s ", name);
    printf("dtype=%.*s shape=%s bytes=%zu fnv=%016" PRIx64 "\n", (int)(br - s), s, br, nbytes,
           fnv1a(data, nbytes));
}

/* "bf16[2,3]", "f32[]": the probe's own parser, not the runtime's. */
static bool parse_desc(const char *text, RtDesc *d) {
    char name[16];
    const char *br = strchr(text, '[');
    if (!br || (size_t)(br - text) >= sizeof name) return false;
    memcpy(name, text, (size_t)(br - text));
    name[br - text] = 0;
    d->dtype = rt_dtype_from_name(name);
    d->ndim = 0;
    const char *p = br + 1;
    while (*p && *p != ']') {
        char *end;
        long long v = strtoll(p, &end, 10);
        if (end == p || d->ndim == RT_MAX_DIMS) return false;
        d->shape[d->ndim++] = v;
        p = end;
        while (*p == ',' || *p == ' ')
            p++;
    }
    return d->dtype != RT_DTYPE_NONE && *p == ']';
}

static char *slurp(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap);
    for (size_t got; buf && (got = fread(buf + n, 1, cap - n, f)) > 0;) {
        n += got;
        if (n == cap) {
            char *b = realloc(buf, cap *= 2);
            if (!b) free(buf);
            buf = b;
        }
    }
    fclose(f);
    *len = n;
    return buf;
}

static int fail(RtStatus s, const RtError *err) {
    fprintf(stderr, "%s\n", err->msg);
    return rt_status_exit_code(s);
}

static int usage(void) {
    fputs(
        "usage: rt_probe npy|npy-mem|input|copy|write-bf16|st|st-mem|st-expect|f16-table ARGS...\n",
        stderr);
    return 2;
}

static int probe_st(RtSafetensors *st, const char *name) {
    RtError err;
    rt_error_clear(&err);
    if (name) {
        const RtStTensor *t = rt_st_find(st, name);
        if (!t) {
            rt_error_set(&err, TGCRT_ERR_MISSING, "%s: missing tensor '%s'", rt_st_name(st), name);
            return fail(err.status, &err);
        }
        print_tensor(t->name, &t->desc, t->data, t->nbytes);
        return 0;
    }
    for (size_t i = 0; i < rt_st_count(st); i++) {
        const RtStTensor *t = rt_st_get(st, i);
        if (rt_st_find(st, t->name) != t) {
            fprintf(stderr, "probe: lookup of '%s' does not find it\n", t->name);
            return 3;
        }
        print_tensor(t->name, &t->desc, t->data, t->nbytes);
    }
    return 0;
}

int main(int argc, char **argv) {
    if (argc < 2) return usage();
    const char *mode = argv[1];
    RtError err;
    rt_error_clear(&err);
    RtStatus s;

    if (!strcmp(mode, "f16-table")) {
        float *t = malloc(65536 * sizeof *t);
        if (!t) return 3;
        for (unsigned i = 0; i < 65536; i++)
            t[i] = rt_f16_to_f32((uint16_t)i);
        printf("fnv=%016" PRIx64 "\n", fnv1a(t, 65536 * sizeof *t));
        free(t);
        return 0;
    }
    if (argc < 3) return usage();
    const char *file = argv[2];

    if (!strcmp(mode, "npy")) {
        RtArray a;
        if ((s = rt_npy_read(file, &a, &err))) return fail(s, &err);
        print_tensor(NULL, &a.desc, a.data, a.nbytes);
        rt_array_free(&a);
        return 0;
    }
    if (!strcmp(mode, "npy-mem")) {
        size_t len, off;
        char *buf = slurp(file, &len);
        if (!buf) return 3;
        RtDesc d;
        s = rt_npy_parse(buf, len, file, &d, &off, &err);
        if (!s) {
            size_t nbytes;
            rt_desc_nbytes(&d, &nbytes);
            print_tensor(NULL, &d, buf + off, nbytes);
        }
        free(buf);
        return s ? fail(s, &err) : 0;
    }
    if (!strcmp(mode, "input") && argc == 4) {
        RtDesc d;
        size_t nbytes;
        if (!parse_desc(argv[3], &d) || !rt_desc_nbytes(&d, &nbytes)) return usage();
        void *dst = rt_aligned_alloc(nbytes);
        if (!dst) return 3;
        if (!(s = rt_npy_load_input(file, "x", &d, dst, &err))) print_tensor(NULL, &d, dst, nbytes);
        rt_aligned_free(dst);
        return s ? fail(s, &err) : 0;
    }
    if ((!strcmp(mode, "copy") || !strcmp(mode, "write-bf16")) && argc == 4) {
        RtArray a;
        if ((s = rt_npy_read(file, &a, &err))) return fail(s, &err);
        if (!strcmp(mode, "copy")) {
            s = rt_npy_write(argv[3], &a.desc, a.data, &err);
        } else if (a.desc.dtype != RT_F32) {
            s = rt_error_set(&err, TGCRT_ERR_DTYPE, "%s: write-bf16 needs an f32 array", file);
        } else {
            size_t n = a.nbytes / 4;
            uint16_t *b = malloc(n ? n * 2 : 1);
            if (!b) return 3;
            rt_f32_to_bf16_n(a.data, b, n);
            RtDesc d = a.desc;
            d.dtype = RT_BF16;
            s = rt_npy_write(argv[3], &d, b, &err);
            free(b);
        }
        rt_array_free(&a);
        return s ? fail(s, &err) : 0;
    }
    if (!strcmp(mode, "st") || !strcmp(mode, "st-mem")) {
        RtSafetensors *st;
        char *buf = NULL;
        if (!strcmp(mode, "st")) {
            s = rt_st_open(file, &st, &err);
        } else {
            size_t len;
            buf = slurp(file, &len);
            if (!buf) return 3;
            s = rt_st_open_memory(buf, len, file, &st, &err);
        }
        int rc = s ? fail(s, &err) : probe_st(st, argc > 3 ? argv[3] : NULL);
        rt_st_close(st);
        free(buf);
        return rc;
    }
    if (!strcmp(mode, "st-expect") && argc == 5) {
        RtDesc d;
        if (!parse_desc(argv[4], &d)) return usage();
        RtSafetensors *st;
        if ((s = rt_st_open(file, &st, &err))) return fail(s, &err);
        const RtStTensor *t;
        if (!(s = rt_st_expect(st, argv[3], &d, &t, &err)))
            print_tensor(t->name, &t->desc, t->data, t->nbytes);
        rt_st_close(st);
        return s ? fail(s, &err) : 0;
    }
    return usage();
}
