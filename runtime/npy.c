/* The .npy format (numpy/lib/format.py, "NEP 1"): the magic "\x93NUMPY",
 * a major and a minor version byte, the header's length (2 bytes little-
 * endian in 1.0, 4 bytes in 2.0 and 3.0), the header -- a Python dict
 * literal such as
 *     {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
 * padded with spaces and ended by a newline -- then the data, C order.
 * Every field is checked before it is used; sizes are computed with
 * overflow checks and compared with the file's size, so a malformed file
 * is an error message, never a read past the end or a huge allocation. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "npy_internal.h"
#include "support/atomic_file.h"
#include "tgcrt.h"

#define NPY_MAGIC "\x93NUMPY"
#define NPY_MAGIC_LEN 6
#define NPY_MAX_HEADER                                                                             \
    (1u << 20)               /* numpy writes < 1 KiB; anything this large is not an .npy file */
#define NPY_GROWTH_DIGITS 21 /* numpy's GROWTH_AXIS_MAX_DIGITS */
#define NPY_ALIGN 64         /* numpy's ARRAY_ALIGN */

/* Copies up to 40 bytes of s into out, escaping what is not printable, for
 * messages that quote a file's content. */
static const char *quote(const char *s, size_t n, char out[200]) {
    size_t at = 0;
    for (size_t i = 0; i < n && i < 40; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c >= 32 && c < 127 && c != '\\')
            out[at++] = (char)c;
        else
            at += (size_t)snprintf(out + at, 5, "\\x%02x", c);
    }
    if (n > 40) at += (size_t)snprintf(out + at, 4, "...");
    out[at] = 0;
    return out;
}

/* ---- the header's dict literal ---- */

typedef struct Cursor {
    const char *p, *end;
    const char *name; /* the file, for messages */
    RtError *err;
} Cursor;

static void skip_ws(Cursor *c) {
    while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' || *c->p == '\n' || *c->p == '\r'))
        c->p++;
}

static RtStatus syntax(Cursor *c, const char *expected) {
    char q[200];
    size_t left = (size_t)(c->end - c->p);
    if (!left)
        return rt_error_set(c->err, TGCRT_ERR_FORMAT,
                            "%s: bad .npy header: expected %s, found the end of the header",
                            c->name, expected);
    return rt_error_set(c->err, TGCRT_ERR_FORMAT, "%s: bad .npy header: expected %s, found '%s'",
                        c->name, expected, quote(c->p, left, q));
}

static bool eat(Cursor *c, char ch) {
    skip_ws(c);
    if (c->p < c->end && *c->p == ch) {
        c->p++;
        return true;
    }
    return false;
}

/* A quoted string without escapes (numpy never writes any in a header). */
static RtStatus parse_string(Cursor *c, const char **s, size_t *n, const char *what) {
    skip_ws(c);
    if (c->p >= c->end || (*c->p != '\'' && *c->p != '"')) return syntax(c, what);
    char q = *c->p;
    const char *start = c->p + 1, *e = start;
    while (e < c->end && *e != q && *e != '\\' && *e != '\n')
        e++;
    if (e >= c->end || *e != q) return syntax(c, what);
    *s = start;
    *n = (size_t)(e - start);
    c->p = e + 1;
    return TGCRT_OK;
}

static bool word(Cursor *c, const char *w) {
    size_t n = strlen(w);
    skip_ws(c);
    if ((size_t)(c->end - c->p) < n || memcmp(c->p, w, n)) return false;
    const char *after = c->p + n;
    if (after < c->end && (*after == '_' || (*after >= 'a' && *after <= 'z') ||
                           (*after >= 'A' && *after <= 'Z') || (*after >= '0' && *after <= '9')))
        return false;
    c->p = after;
    return true;
}

/* A tuple of non-negative ints: () (3,) (2, 3) (2, 3,). An optional L
 * suffix (Python 2 longs, in old version 1.0 files) is accepted. */
static RtStatus parse_shape(Cursor *c, RtDesc *d) {
    if (!eat(c, '(')) return syntax(c, "a shape tuple such as (2, 3)");
    d->ndim = 0;
    bool comma = true; /* a comma (or the opening parenthesis) came last */
    for (;;) {
        if (eat(c, ')')) break;
        if (!comma) return syntax(c, "',' or ')' in the shape");
        skip_ws(c);
        if (c->p >= c->end || *c->p < '0' || *c->p > '9') {
            if (c->p < c->end && *c->p == '-')
                return rt_error_set(c->err, TGCRT_ERR_FORMAT,
                                    "%s: bad .npy header: negative dimension in the shape",
                                    c->name);
            return syntax(c, "a non-negative integer in the shape");
        }
        int64_t v = 0;
        while (c->p < c->end && *c->p >= '0' && *c->p <= '9') {
            int digit = *c->p++ - '0';
            if (v > (INT64_MAX - digit) / 10)
                return rt_error_set(c->err, TGCRT_ERR_FORMAT,
                                    "%s: bad .npy header: a dimension of the shape is too large",
                                    c->name);
            v = v * 10 + digit;
        }
        if (c->p < c->end && *c->p == 'L') c->p++;
        if (d->ndim == RT_MAX_DIMS)
            return rt_error_set(c->err, TGCRT_ERR_FORMAT,
                                "%s: bad .npy header: more than %d dimensions", c->name,
                                RT_MAX_DIMS);
        d->shape[d->ndim++] = v;
        comma = eat(c, ',');
    }
    /* (3) is the int 3 in Python, not a tuple: numpy rejects it too. */
    if (d->ndim == 1 && !comma)
        return rt_error_set(
            c->err, TGCRT_ERR_FORMAT,
            "%s: bad .npy header: the shape (%lld) is not a tuple (expected (%lld,))", c->name,
            (long long)d->shape[0], (long long)d->shape[0]);
    return TGCRT_OK;
}

/* numpy's descr strings for the dtypes tgc has; multi-byte ones must be
 * little-endian ('<'), one-byte ones may carry any byte-order mark. */
static RtStatus parse_descr(Cursor *c, const char *s, size_t n, RtDesc *d) {
    static const struct {
        const char *code;
        RtDType t;
    } codes[] = {
        {"f8", RT_F64},  {"f4", RT_F32}, {"f2", RT_F16}, {"i8", RT_I64},
        {"i4", RT_I32},  {"i2", RT_I16}, {"i1", RT_I8},  {"u1", RT_U8},
        {"b1", RT_BOOL}, {"u2", RT_U16}, {"u4", RT_U32}, {"u8", RT_U64},
    };
    char q[200];
    if (n == 3 && strchr("<>|=", s[0]))
        for (size_t i = 0; i < sizeof codes / sizeof *codes; i++) {
            if (memcmp(s + 1, codes[i].code, 2)) continue;
            bool one_byte = rt_dtype_size(codes[i].t) == 1;
            if (one_byte || s[0] == '<') {
                d->dtype = codes[i].t;
                return TGCRT_OK;
            }
            if (s[0] == '>')
                return rt_error_set(
                    c->err, TGCRT_ERR_DTYPE,
                    "%s: big-endian data ('%s') is not supported: expected little-endian '<%s' "
                    "(save a.astype('<%s'))",
                    c->name, quote(s, n, q), codes[i].code, codes[i].code);
            return rt_error_set(c->err, TGCRT_ERR_DTYPE,
                                "%s: dtype '%s' has no explicit byte order: expected '<%s'",
                                c->name, quote(s, n, q), codes[i].code);
        }
    return rt_error_set(c->err, TGCRT_ERR_DTYPE,
                        "%s: unsupported dtype '%s': expected one of f8 f4 f2 i8 i4 i2 i1 u8 u4 "
                        "u2 u1 b1 (f64 f32 f16 i64 i32 i16 i8 u64 u32 u16 u8 bool)",
                        c->name, quote(s, n, q));
}

/* dict := '{' (key ':' value (',' key ':' value)* ','?)? '}', with exactly
 * the keys 'descr', 'fortran_order' and 'shape', then only whitespace. */
static RtStatus parse_dict(Cursor *c, RtDesc *d) {
    bool seen[3] = {false, false, false};
    static const char *const keys[3] = {"descr", "fortran_order", "shape"};
    RtStatus s;
    if (!eat(c, '{')) return syntax(c, "'{' at the start of the header");
    bool comma = true;
    while (!eat(c, '}')) {
        if (!comma) return syntax(c, "',' or '}'");
        const char *k;
        size_t kn;
        if ((s = parse_string(c, &k, &kn, "a quoted key"))) return s;
        int key = -1;
        for (int i = 0; i < 3; i++)
            if (kn == strlen(keys[i]) && !memcmp(k, keys[i], kn)) key = i;
        char q[200];
        if (key < 0)
            return rt_error_set(c->err, TGCRT_ERR_FORMAT,
                                "%s: bad .npy header: unexpected key '%s' (expected 'descr', "
                                "'fortran_order' and 'shape')",
                                c->name, quote(k, kn, q));
        if (seen[key])
            return rt_error_set(c->err, TGCRT_ERR_FORMAT,
                                "%s: bad .npy header: key '%s' appears twice", c->name, keys[key]);
        seen[key] = true;
        if (!eat(c, ':')) return syntax(c, "':' after the key");
        if (key == 0) {
            skip_ws(c);
            if (c->p < c->end && *c->p == '[')
                return rt_error_set(
                    c->err, TGCRT_ERR_DTYPE,
                    "%s: structured arrays are not supported: expected a plain dtype such as '<f4'",
                    c->name);
            const char *v;
            size_t vn;
            if ((s = parse_string(c, &v, &vn, "a quoted dtype such as '<f4'"))) return s;
            if ((s = parse_descr(c, v, vn, d))) return s;
        } else if (key == 1) {
            if (word(c, "True"))
                return rt_error_set(
                    c->err, TGCRT_ERR_FORMAT,
                    "%s: Fortran-ordered arrays are not supported: expected C order "
                    "(save np.ascontiguousarray(a))",
                    c->name);
            if (!word(c, "False")) return syntax(c, "True or False for 'fortran_order'");
        } else if ((s = parse_shape(c, d))) {
            return s;
        }
        comma = eat(c, ',');
    }
    for (int i = 0; i < 3; i++)
        if (!seen[i])
            return rt_error_set(c->err, TGCRT_ERR_FORMAT,
                                "%s: bad .npy header: the key '%s' is missing", c->name, keys[i]);
    skip_ws(c);
    if (c->p != c->end) return syntax(c, "only padding after the header's '}'");
    return TGCRT_OK;
}

/* ---- the fixed prefix and the sizes ---- */

/* Checks the magic, the version and the header length against file_size;
 * buf holds the first min(avail, ...) bytes of the file. */
static RtStatus parse_prefix(const unsigned char *buf, size_t avail, uint64_t file_size,
                             const char *name, size_t *prefix, size_t *hlen, RtError *err) {
    char q[200];
    if (file_size < NPY_MAGIC_LEN || avail < NPY_MAGIC_LEN ||
        memcmp(buf, NPY_MAGIC, NPY_MAGIC_LEN)) {
        size_t n = avail < NPY_MAGIC_LEN ? avail : NPY_MAGIC_LEN;
        return rt_error_set(err, TGCRT_ERR_FORMAT,
                            "%s: not an .npy file: expected the magic \\x93NUMPY, found '%s'%s",
                            name, quote((const char *)buf, n, q),
                            n < NPY_MAGIC_LEN ? " and the end of the file" : "");
    }
    if (avail < NPY_MAGIC_LEN + 2)
        return rt_error_set(err, TGCRT_ERR_FORMAT,
                            "%s: truncated: the file ends inside the .npy version (%zu bytes)",
                            name, avail);
    unsigned major = buf[6], minor = buf[7];
    if (major < 1 || major > 3 || minor != 0)
        return rt_error_set(err, TGCRT_ERR_FORMAT,
                            "%s: unsupported .npy format version %u.%u: expected 1.0, 2.0 or 3.0",
                            name, major, minor);
    *prefix = major == 1 ? 10 : 12;
    if (avail < *prefix)
        return rt_error_set(
            err, TGCRT_ERR_FORMAT,
            "%s: truncated: the file ends inside the .npy header length (%zu bytes)", name, avail);
    uint64_t n = (uint64_t)buf[8] | (uint64_t)buf[9] << 8;
    if (major > 1) n |= (uint64_t)buf[10] << 16 | (uint64_t)buf[11] << 24;
    if (n > NPY_MAX_HEADER)
        return rt_error_set(err, TGCRT_ERR_FORMAT,
                            "%s: .npy header length %llu is larger than the %u-byte limit", name,
                            (unsigned long long)n, NPY_MAX_HEADER);
    if (n > file_size - *prefix)
        return rt_error_set(
            err, TGCRT_ERR_FORMAT,
            "%s: truncated: the .npy header length is %llu bytes, but only %llu follow it", name,
            (unsigned long long)n, (unsigned long long)(file_size - *prefix));
    *hlen = (size_t)n;
    return TGCRT_OK;
}

/* Parses the header dict and checks the data size against what remains of
 * the file after the header. */
static RtStatus parse_rest(const unsigned char *hdr, size_t hlen, uint64_t data_avail,
                           const char *name, RtDesc *desc, size_t *nbytes, RtError *err) {
    Cursor c = {(const char *)hdr, (const char *)hdr + hlen, name, err};
    memset(desc, 0, sizeof *desc);
    desc->dtype = RT_DTYPE_NONE;
    RtStatus s = parse_dict(&c, desc);
    if (s) return s;
    char d[RT_DESC_STR_MAX];
    if (!rt_desc_nbytes(desc, nbytes))
        return rt_error_set(err, TGCRT_ERR_FORMAT, "%s: the size of %s overflows", name,
                            rt_desc_format(desc, d, sizeof d));
    if ((uint64_t)*nbytes > data_avail)
        return rt_error_set(err, TGCRT_ERR_FORMAT,
                            "%s: truncated: header says %zu bytes of data (%s), file has %llu",
                            name, *nbytes, rt_desc_format(desc, d, sizeof d),
                            (unsigned long long)data_avail);
    if ((uint64_t)*nbytes < data_avail)
        return rt_error_set(
            err, TGCRT_ERR_FORMAT,
            "%s: header says %zu bytes of data (%s), but the file has %llu: %llu trailing bytes",
            name, *nbytes, rt_desc_format(desc, d, sizeof d), (unsigned long long)data_avail,
            (unsigned long long)(data_avail - *nbytes));
    return TGCRT_OK;
}

RtStatus rt_npy_parse(const void *buf, size_t len, const char *name, RtDesc *desc,
                      size_t *data_offset, RtError *err) {
    size_t prefix, hlen, nbytes;
    RtStatus s = parse_prefix(buf, len, len, name, &prefix, &hlen, err);
    if (s) return s;
    s = parse_rest((const unsigned char *)buf + prefix, hlen, len - prefix - hlen, name, desc,
                   &nbytes, err);
    if (s) return s;
    *data_offset = prefix + hlen;
    return TGCRT_OK;
}

/* ---- reading files ---- */

void rt_npy_normalize_bool(unsigned char *p, size_t n) {
    for (size_t i = 0; i < n; i++)
        p[i] = p[i] != 0;
}

RtStatus rt_npy_read_data(FILE *fp, const char *path, void *dst, size_t n, RtError *err) {
    size_t got = n ? fread(dst, 1, n, fp) : 0;
    if (got != n) {
        if (ferror(fp))
            return rt_error_set(err, TGCRT_ERR_IO, "%s: read error: %s", path, strerror(errno));
        return rt_error_set(err, TGCRT_ERR_IO,
                            "%s: truncated while reading: expected %zu bytes of data, read %zu",
                            path, n, got);
    }
    return TGCRT_OK;
}

RtStatus rt_npy_open(const char *path, FILE **fp, RtDesc *desc, size_t *nbytes, RtError *err) {
    *fp = NULL;
    uint64_t size;
    int fd = rt_open_regular(path, &size, err); /* a FIFO would block a plain fopen */
    if (fd < 0) return TGCRT_ERR_IO;
    FILE *f = fdopen(fd, "rb");
    if (!f) {
        RtStatus e = rt_error_set(err, TGCRT_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
        close(fd);
        return e;
    }
    RtStatus s = TGCRT_OK;
    unsigned char *hdr = NULL;
    unsigned char head[12];
    size_t want = size < sizeof head ? (size_t)size : sizeof head;
    size_t got = fread(head, 1, want, f);
    size_t prefix, hlen;
    if ((s = parse_prefix(head, got, size, path, &prefix, &hlen, err))) goto fail;
    /* The header may start inside head (version 1.0: 2 of its bytes). */
    hdr = malloc(hlen ? hlen : 1);
    if (!hdr) {
        s = rt_error_set(err, TGCRT_ERR_NOMEM, "%s: out of memory reading the .npy header", path);
        goto fail;
    }
    size_t have = got - prefix;
    if (have > hlen) have = hlen;
    memcpy(hdr, head + prefix, have);
    if (fread(hdr + have, 1, hlen - have, f) != hlen - have) {
        s = rt_error_set(err, TGCRT_ERR_IO, "%s: truncated while reading the .npy header", path);
        goto fail;
    }
    if (fseek(f, (long)(prefix + hlen), SEEK_SET)) {
        s = rt_error_set(err, TGCRT_ERR_IO, "%s: cannot seek to the data: %s", path,
                         strerror(errno));
        goto fail;
    }
    if ((s = parse_rest(hdr, hlen, size - prefix - hlen, path, desc, nbytes, err))) goto fail;
    free(hdr);
    *fp = f;
    return TGCRT_OK;
fail:
    free(hdr);
    fclose(f);
    return s;
}

void rt_array_free(RtArray *a) {
    if (!a) return;
    rt_aligned_free(a->data);
    a->data = NULL;
    a->nbytes = 0;
}

RtStatus rt_npy_read(const char *path, RtArray *out, RtError *err) {
    memset(out, 0, sizeof *out);
    FILE *f;
    RtStatus s = rt_npy_open(path, &f, &out->desc, &out->nbytes, err);
    if (s) return s;
    out->data = rt_aligned_alloc(out->nbytes);
    if (!out->data) {
        fclose(f);
        return rt_error_set(err, TGCRT_ERR_NOMEM, "%s: out of memory reading %zu bytes of data",
                            path, out->nbytes);
    }
    s = rt_npy_read_data(f, path, out->data, out->nbytes, err);
    fclose(f);
    if (s) {
        rt_array_free(out);
        return s;
    }
    if (out->desc.dtype == RT_BOOL) rt_npy_normalize_bool(out->data, out->nbytes);
    return TGCRT_OK;
}

/* ---- writing files ---- */

static const char *descr_of(RtDType t) {
    switch (t) {
    case RT_F64: return "<f8";
    case RT_F32:
    case RT_BF16: return "<f4"; /* bf16 is written as float32 (cli.md) */
    case RT_F16: return "<f2";
    case RT_I64: return "<i8";
    case RT_I32: return "<i4";
    case RT_I16: return "<i2";
    case RT_I8: return "|i1";
    case RT_U8: return "|u1";
    case RT_U16: return "<u2";
    case RT_U32: return "<u4";
    case RT_U64: return "<u8";
    case RT_BOOL: return "|b1";
    default: return NULL;
    }
}

/* The whole 1.0 header as numpy 1.24 writes it: the dict with sorted keys,
 * room for the first dimension to grow to 21 digits, spaces up to a
 * multiple of 64 bytes, a newline. Returns the total length (prefix
 * included) or 0 if it does not fit. */
static size_t format_header(const RtDesc *d, char *out, size_t cap) {
    char shape[RT_MAX_DIMS * 24 + 4];
    size_t at = 0;
    shape[at++] = '(';
    for (int i = 0; i < d->ndim; i++)
        at += (size_t)snprintf(shape + at, sizeof shape - at, "%s%lld", i ? ", " : "",
                               (long long)d->shape[i]);
    if (d->ndim == 1) shape[at++] = ',';
    shape[at++] = ')';
    shape[at] = 0;
    memcpy(out, NPY_MAGIC "\x01\x00", 8);
    int n = snprintf(out + 10, cap - 10, "{'descr': '%s', 'fortran_order': False, 'shape': %s, }",
                     descr_of(d->dtype), shape);
    /* room for the dict, the growth spaces, the alignment spaces and '\n' */
    if (n < 0 || 10 + (size_t)n + NPY_GROWTH_DIGITS + NPY_ALIGN + 1 > cap) return 0;
    size_t hlen = (size_t)n;
    if (d->ndim > 0) {
        char first[24];
        size_t digits = (size_t)snprintf(first, sizeof first, "%lld", (long long)d->shape[0]);
        for (size_t i = digits; i < NPY_GROWTH_DIGITS; i++)
            out[10 + hlen++] = ' ';
    }
    while ((10 + hlen + 1) % NPY_ALIGN)
        out[10 + hlen++] = ' ';
    out[10 + hlen++] = '\n';
    if (hlen > 0xffff) return 0;
    out[8] = (char)(hlen & 0xff);
    out[9] = (char)(hlen >> 8);
    return 10 + hlen;
}

RtStatus rt_npy_write(const char *path, const RtDesc *desc, const void *data, RtError *err) {
    size_t nbytes;
    char d[RT_DESC_STR_MAX];
    if (!descr_of(desc->dtype) || !rt_desc_nbytes(desc, &nbytes))
        return rt_error_set(err, TGCRT_ERR_ARG, "%s: cannot write %s: invalid dtype or shape", path,
                            rt_desc_format(desc, d, sizeof d));
    char header[NPY_ALIGN * 16 + RT_MAX_DIMS * 24];
    size_t hsize = format_header(desc, header, sizeof header);
    if (!hsize)
        return rt_error_set(err, TGCRT_ERR_ARG, "%s: the .npy header for %s is too long", path,
                            rt_desc_format(desc, d, sizeof d));

    /* Whole or not at all, through the one atomic-write helper: a unique
     * temporary beside path, renamed over it (rt_atomic.h). */
    RtAtomicFile f;
    int e = rt_afile_begin(&f, path);
    if (e)
        return rt_error_set(err, TGCRT_ERR_IO, "%s: cannot %s: %s", path,
                            e == EISDIR ? "write" : "create", strerror(e));
    e = rt_afile_write(&f, header, hsize);
    if (!e && desc->dtype == RT_BF16) {
        const uint16_t *src = data;
        float chunk[1024];
        for (size_t i = 0, n = nbytes / 2; !e && i < n; i += 1024) {
            size_t m = n - i < 1024 ? n - i : 1024;
            rt_bf16_to_f32_n(src + i, chunk, m);
            e = rt_afile_write(&f, chunk, m * sizeof *chunk);
        }
    } else if (!e) {
        e = rt_afile_write(&f, data, nbytes);
    }
    if (e) {
        rt_afile_abort(&f);
    } else {
        e = rt_afile_commit(&f, 0666);
    }
    if (e) return rt_error_set(err, TGCRT_ERR_IO, "%s: cannot write: %s", path, strerror(e));
    return TGCRT_OK;
}
