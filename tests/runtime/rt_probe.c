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
 *   rt_probe to-f16 FILE OUT        an f32 FILE through rt_f32_to_f16, written as f16
 *   rt_probe print FILE [bf16]      rt_tensor_str of FILE (bf16: an f32 FILE rounded)
 *   rt_probe matmul A B OUT [acc C] torch.matmul semantics for A [..., m, k] and
 *                                   B [..., k, n] (>= 2-D, broadcast batches)
 *                                   through rt_matmul; acc: C (the bias) is added
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
    fputs("usage: rt_probe npy|npy-mem|input|copy|write-bf16|st|st-mem|st-expect|f16-table|"
          "to-f16|print|matmul ARGS...\n",
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

/* torch.matmul for A [..., m, k] @ B [..., k, n], both at least 2-D, batch
 * dimensions broadcast; C [batch..., m, n] as one rt_matmul call. */
static int probe_matmul(const RtArray *a, const RtArray *b, const char *out, const char *cfile) {
    RtError err;
    rt_error_clear(&err);
    const RtDesc *A = &a->desc, *B = &b->desc;
    if (A->ndim < 2 || B->ndim < 2 || A->dtype != B->dtype ||
        A->shape[A->ndim - 1] != B->shape[B->ndim - 2]) {
        fprintf(stderr, "probe: matmul: bad operands\n");
        return 2;
    }
    RtMatmulDesc d = {0};
    d.dtype = A->dtype;
    d.m = A->shape[A->ndim - 2], d.k = A->shape[A->ndim - 1], d.n = B->shape[B->ndim - 1];
    d.a_rs = d.k, d.a_cs = 1, d.b_rs = d.n, d.b_cs = 1, d.c_rs = d.n, d.c_cs = 1;
    int nb = (A->ndim > B->ndim ? A->ndim : B->ndim) - 2;
    RtDesc C = {A->dtype, nb + 2, {0}};
    int64_t sa = d.m * d.k, sb = d.k * d.n, sc = d.m * d.n;
    d.nbatch = nb;
    for (int i = nb - 1; i >= 0; i--) {
        int ia = i - (nb - (A->ndim - 2)), ib = i - (nb - (B->ndim - 2));
        int64_t ea = ia >= 0 ? A->shape[ia] : 1, eb = ib >= 0 ? B->shape[ib] : 1;
        if (ea != eb && ea != 1 && eb != 1) {
            fprintf(stderr, "probe: matmul: batch dims do not broadcast\n");
            return 2;
        }
        d.batch[i] = ea > eb ? ea : eb;
        d.a_bs[i] = ea == 1 ? 0 : sa;
        d.b_bs[i] = eb == 1 ? 0 : sb;
        d.c_bs[i] = sc;
        sa *= ea, sb *= eb, sc *= d.batch[i];
        C.shape[i] = d.batch[i];
    }
    C.shape[nb] = d.m, C.shape[nb + 1] = d.n;
    size_t nbytes;
    if (!rt_desc_nbytes(&C, &nbytes)) return 3;
    void *c = rt_aligned_alloc(nbytes);
    if (!c) return 3;
    memset(c, 0, nbytes);
    if (cfile) {
        RtArray bias;
        RtStatus s = rt_npy_read(cfile, &bias, &err);
        if (s || bias.nbytes != nbytes) {
            rt_aligned_free(c);
            if (!s) rt_array_free(&bias);
            fprintf(stderr, "probe: matmul: bad C\n");
            return 2;
        }
        memcpy(c, bias.data, nbytes);
        rt_array_free(&bias);
        d.accumulate = 1;
    }
    RtPool *pool;
    if (rt_pool_create(2, &pool, &err)) return 3;
    rt_matmul(&d, a->data, b->data, c, pool);
    rt_pool_destroy(pool);
    RtStatus s = rt_npy_write(out, &C, c, &err);
    rt_aligned_free(c);
    return s ? fail(s, &err) : 0;
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

    if (!strcmp(mode, "to-f16") && argc == 4) {
        RtArray a;
        if ((s = rt_npy_read(file, &a, &err))) return fail(s, &err);
        if (a.desc.dtype != RT_F32) return 2;
        size_t n = a.nbytes / 4;
        uint16_t *h = malloc(n ? n * 2 : 1);
        if (!h) return 3;
        for (size_t i = 0; i < n; i++)
            h[i] = rt_f32_to_f16(((const float *)a.data)[i]);
        RtDesc d = a.desc;
        d.dtype = RT_F16;
        s = rt_npy_write(argv[3], &d, h, &err);
        free(h);
        rt_array_free(&a);
        return s ? fail(s, &err) : 0;
    }
    if (!strcmp(mode, "print") && (argc == 3 || argc == 4)) {
        RtArray a;
        if ((s = rt_npy_read(file, &a, &err))) return fail(s, &err);
        if (argc == 4) { /* bf16 from an f32 file */
            if (a.desc.dtype != RT_F32 || strcmp(argv[3], "bf16")) return 2;
            uint16_t *h = rt_aligned_alloc(a.nbytes / 2);
            if (!h) return 3;
            rt_f32_to_bf16_n(a.data, h, a.nbytes / 4);
            rt_aligned_free(a.data);
            a.data = h;
            a.desc.dtype = RT_BF16;
        }
        char *str = rt_tensor_str(&a.desc, a.data);
        rt_array_free(&a);
        if (!str) return 3;
        printf("%s\n", str);
        free(str);
        return 0;
    }
    if (!strcmp(mode, "matmul") && (argc == 5 || argc == 6)) {
        RtArray a, b;
        if ((s = rt_npy_read(file, &a, &err))) return fail(s, &err);
        if ((s = rt_npy_read(argv[3], &b, &err))) {
            rt_array_free(&a);
            return fail(s, &err);
        }
        int rc = probe_matmul(&a, &b, argv[4], argc == 6 ? argv[5] : NULL);
        rt_array_free(&a);
        rt_array_free(&b);
        return rc;
    }
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
