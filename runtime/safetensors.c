/* The safetensors format (github.com/huggingface/safetensors): an 8-byte
 * little-endian header length N, N bytes of UTF-8 JSON -- an object mapping
 * each tensor's name to {"dtype", "shape", "data_offsets": [begin, end]},
 * plus an optional "__metadata__" entry -- then the data section, which the
 * offsets index from its start.
 *
 * Every field is validated before a pointer is handed out, with the rules
 * of the reference implementation (safetensors' Metadata::validate): the
 * header must fit in the file and start with '{'; each dtype must be one
 * tgc has; each shape a list of non-negative integers; each byte range must
 * lie in the data section and be exactly numel * itemsize long (with
 * overflow checks); and the ranges, sorted, must tile the data section with
 * no overlap, no hole and nothing after the last one. JSON numbers are
 * doubles, so sizes and offsets are limited to 2^53. */
#define _DEFAULT_SOURCE /* madvise */
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "rt_internal.h"

#define ST_MAX_HEADER ((uint64_t)100 << 20) /* the reference implementation's limit */
#define ST_MAX_INT 9007199254740992.0       /* 2^53: larger JSON numbers are not exact */

struct RtSafetensors {
    char *name; /* the file, for messages */
    const unsigned char *base;
    size_t len;
    void *map; /* when the file was mapped: munmap(map, len) */
    size_t count;
    RtStTensor *tensors; /* header order */
    size_t *by_name;     /* indices into tensors, sorted by name */
    uint64_t *begin;     /* each tensor's data_offsets[0], for the tiling check */
    char *pair;          /* __metadata__'s "tgc.pair" (rt_st_pair), or NULL */
};

static const struct {
    const char *name;
    RtDType t;
} st_dtypes[] = {
    {"F64", RT_F64}, {"F32", RT_F32}, {"F16", RT_F16}, {"BF16", RT_BF16}, {"I64", RT_I64},
    {"I32", RT_I32}, {"I16", RT_I16}, {"I8", RT_I8},   {"U8", RT_U8},     {"BOOL", RT_BOOL},
    {"U16", RT_U16}, {"U32", RT_U32}, {"U64", RT_U64},
};

static const char *st_dtype_name(RtDType t) {
    for (size_t i = 0; i < sizeof st_dtypes / sizeof *st_dtypes; i++)
        if (st_dtypes[i].t == t) return st_dtypes[i].name;
    return "?";
}

/* The JSON text of v, at most 60 characters, for messages. */
static const char *json_text(const cJSON *v, char out[80]) {
    char *s = cJSON_PrintUnformatted(v);
    if (!s) return strcpy(out, "(unprintable)");
    size_t n = strlen(s);
    if (n > 60)
        snprintf(out, 80, "%.57s...", s);
    else
        snprintf(out, 80, "%s", s);
    cJSON_free(s);
    return out;
}

static bool json_uint(const cJSON *v, uint64_t *out) {
    if (!cJSON_IsNumber(v)) return false;
    double d = v->valuedouble;
    if (!(d >= 0 && d <= ST_MAX_INT)) return false; /* NaN fails too */
    uint64_t u = (uint64_t)d;
    if ((double)u != d) return false;
    *out = u;
    return true;
}

/* RFC 3629 UTF-8: no overlong forms, no surrogates, nothing past U+10FFFF. */
static bool valid_utf8(const unsigned char *s, size_t n, size_t *bad) {
    size_t i = 0;
    while (i < n) {
        unsigned c = s[i];
        size_t len;
        unsigned lo = 0x80, hi = 0xbf;
        if (c < 0x80)
            len = 1;
        else if (c >= 0xc2 && c <= 0xdf)
            len = 2;
        else if (c >= 0xe0 && c <= 0xef) {
            len = 3;
            if (c == 0xe0) lo = 0xa0;
            if (c == 0xed) hi = 0x9f;
        } else if (c >= 0xf0 && c <= 0xf4) {
            len = 4;
            if (c == 0xf0) lo = 0x90;
            if (c == 0xf4) hi = 0x8f;
        } else {
            *bad = i;
            return false;
        }
        if (len > n - i) {
            *bad = i;
            return false;
        }
        for (size_t k = 1; k < len; k++) {
            unsigned b = s[i + k];
            unsigned l = k == 1 ? lo : 0x80, h = k == 1 ? hi : 0xbf;
            if (b < l || b > h) {
                *bad = i;
                return false;
            }
        }
        i += len;
    }
    return true;
}

/* Up to 60 bytes of the raw JSON string at s (n bytes), control bytes
 * escaped, cut at a character boundary, for messages. */
static const char *raw_text(const char *s, size_t n, char out[300]) {
    size_t at = 0, i = 0;
    for (; i < n && at < 60; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c < 0x20)
            at += (size_t)snprintf(out + at, 5, "\\x%02x", c);
        else
            out[at++] = (char)c;
    }
    if (i < n) {
        while (at && ((unsigned char)out[at - 1] & 0xc0) == 0x80) /* a continuation byte */
            at--;
        if (at && (unsigned char)out[at - 1] >= 0xc0) at--; /* the sequence's lead byte */
        memcpy(out + at, "...", 3);
        at += 3;
    }
    out[at] = 0;
    return out;
}

/* cJSON decodes "\u0000" (and copies a raw NUL byte) into the C string of
 * a name, and everything after it is lost: "b\u0000zzz" would be bound as
 * the tensor "b". Names are compared whole, so a NUL in one is a malformed
 * file; the decoded string no longer has its length, so NULs are looked
 * for in the raw text of the (already parsed, hence well-formed) header.
 * Raw control bytes in a string are invalid JSON (RFC 8259), which cJSON
 * lets through; the escape \u0000 is valid JSON and only refused outside
 * __metadata__, which is free-form and ignored. */
static RtStatus check_strings(const char *h, size_t n, const char *nm, RtError *err) {
    int depth = 0;
    const char *owner = NULL; /* the raw text of the last tensor name, for messages */
    size_t owner_len = 0;
    bool meta = false; /* inside the value of the top-level "__metadata__" */
    for (size_t i = 0; i < n; i++) {
        char c = h[i];
        if (c == '{' || c == '[')
            depth++;
        else if (c == '}' || c == ']')
            depth--;
        if (c != '"') continue;
        size_t start = ++i;
        bool nul = false;
        int ctl = -1; /* the first raw control byte */
        for (; i < n && h[i] != '"'; i++) {
            if ((unsigned char)h[i] < 0x20 && ctl < 0) ctl = (unsigned char)h[i];
            if (h[i] != '\\') continue;
            if (i + 5 < n && h[i + 1] == 'u' && !memcmp(h + i + 2, "0000", 4)) nul = true;
            i++; /* the escaped character, maybe a quote */
        }
        size_t len = i - start;
        size_t k = i + 1;
        while (k < n && (h[k] == ' ' || h[k] == '\t' || h[k] == '\n' || h[k] == '\r'))
            k++;
        bool name = depth == 1 && k < n && h[k] == ':';
        if (name) {
            owner = h + start;
            owner_len = len;
            meta = len == 12 && !memcmp(owner, "__metadata__", 12);
        }
        if (ctl < 0 && (!nul || meta)) continue;
        char q[300], o[300], where[700];
        if (name)
            snprintf(where, sizeof where, "tensor name '%s'", raw_text(h + start, len, q));
        else if (owner)
            snprintf(where, sizeof where, "tensor '%s': the string '%s'",
                     raw_text(owner, owner_len, o), raw_text(h + start, len, q));
        else
            snprintf(where, sizeof where, "the string '%s'", raw_text(h + start, len, q));
        if (ctl == 0)
            return rt_error_set(err, TGCRT_ERR_FORMAT, "%s: %s contains a NUL byte", nm, where);
        if (ctl > 0)
            return rt_error_set(err, TGCRT_ERR_FORMAT,
                                "%s: %s contains the control byte 0x%02x, which JSON allows only "
                                "escaped",
                                nm, where, ctl);
        return rt_error_set(err, TGCRT_ERR_FORMAT, "%s: %s contains a NUL character", nm, where);
    }
    return TGCRT_OK;
}

/* One header entry: name -> {"dtype", "shape", "data_offsets"}. Other keys
 * are ignored, as the reference implementation ignores them. */
static RtStatus parse_entry(RtSafetensors *st, const cJSON *e, uint64_t data_len, size_t i,
                            RtError *err) {
    const char *nm = st->name, *tn = e->string;
    char j[80];
    RtStTensor *t = &st->tensors[i];
    if (!cJSON_IsObject(e))
        return rt_error_set(
            err, TGCRT_ERR_FORMAT,
            "%s: tensor '%s': expected an object with dtype, shape and data_offsets, found %s", nm,
            tn, json_text(e, j));
    const cJSON *dt = cJSON_GetObjectItemCaseSensitive(e, "dtype");
    const cJSON *sh = cJSON_GetObjectItemCaseSensitive(e, "shape");
    const cJSON *off = cJSON_GetObjectItemCaseSensitive(e, "data_offsets");
    if (!dt || !sh || !off)
        return rt_error_set(err, TGCRT_ERR_FORMAT, "%s: tensor '%s': the key '%s' is missing", nm,
                            tn,
                            !dt   ? "dtype"
                            : !sh ? "shape"
                                  : "data_offsets");

    if (!cJSON_IsString(dt))
        return rt_error_set(err, TGCRT_ERR_FORMAT,
                            "%s: tensor '%s': dtype must be a string, found %s", nm, tn,
                            json_text(dt, j));
    t->desc.dtype = RT_DTYPE_NONE;
    for (size_t k = 0; k < sizeof st_dtypes / sizeof *st_dtypes; k++)
        if (!strcmp(dt->valuestring, st_dtypes[k].name)) t->desc.dtype = st_dtypes[k].t;
    if (t->desc.dtype == RT_DTYPE_NONE)
        return rt_error_set(err, TGCRT_ERR_DTYPE,
                            "%s: tensor '%s': unknown dtype %s: expected one of F64 F32 F16 BF16 "
                            "I64 I32 I16 I8 U8 BOOL",
                            nm, tn, json_text(dt, j));

    if (!cJSON_IsArray(sh))
        return rt_error_set(
            err, TGCRT_ERR_FORMAT,
            "%s: tensor '%s': shape must be a list of non-negative integers, found %s", nm, tn,
            json_text(sh, j));
    int nd = cJSON_GetArraySize(sh);
    if (nd > RT_MAX_DIMS)
        return rt_error_set(err, TGCRT_ERR_FORMAT,
                            "%s: tensor '%s': %d dimensions, at most %d are supported", nm, tn, nd,
                            RT_MAX_DIMS);
    t->desc.ndim = 0;
    const cJSON *d;
    cJSON_ArrayForEach(d, sh) {
        uint64_t v;
        if (!json_uint(d, &v))
            return rt_error_set(err, TGCRT_ERR_FORMAT,
                                "%s: tensor '%s': shape must be a list of non-negative integers "
                                "(below 2^53), found %s",
                                nm, tn, json_text(sh, j));
        t->desc.shape[t->desc.ndim++] = (int64_t)v;
    }

    uint64_t range[2];
    if (!cJSON_IsArray(off) || cJSON_GetArraySize(off) != 2 ||
        !json_uint(cJSON_GetArrayItem(off, 0), &range[0]) ||
        !json_uint(cJSON_GetArrayItem(off, 1), &range[1]))
        return rt_error_set(err, TGCRT_ERR_FORMAT,
                            "%s: tensor '%s': data_offsets must be [begin, end], two non-negative "
                            "integers, found %s",
                            nm, tn, json_text(off, j));
    if (range[0] > range[1])
        return rt_error_set(err, TGCRT_ERR_FORMAT,
                            "%s: tensor '%s': data_offsets [%llu, %llu] have begin > end", nm, tn,
                            (unsigned long long)range[0], (unsigned long long)range[1]);
    if (range[1] > data_len)
        return rt_error_set(err, TGCRT_ERR_FORMAT,
                            "%s: tensor '%s': data_offsets [%llu, %llu] run past the end of the "
                            "data section (%llu bytes)",
                            nm, tn, (unsigned long long)range[0], (unsigned long long)range[1],
                            (unsigned long long)data_len);

    char ds[RT_DESC_STR_MAX];
    size_t nbytes;
    if (!rt_desc_nbytes(&t->desc, &nbytes))
        return rt_error_set(err, TGCRT_ERR_FORMAT, "%s: tensor '%s': the size of %s %s overflows",
                            nm, tn, st_dtype_name(t->desc.dtype),
                            strchr(rt_desc_format(&t->desc, ds, sizeof ds), '['));
    if ((uint64_t)nbytes != range[1] - range[0])
        return rt_error_set(
            err, TGCRT_ERR_FORMAT,
            "%s: tensor '%s': data_offsets [%llu, %llu] hold %llu bytes, but %s %s needs %zu", nm,
            tn, (unsigned long long)range[0], (unsigned long long)range[1],
            (unsigned long long)(range[1] - range[0]), st_dtype_name(t->desc.dtype),
            strchr(rt_desc_format(&t->desc, ds, sizeof ds), '['), nbytes);
    t->nbytes = nbytes;
    st->begin[i] = range[0];
    return TGCRT_OK;
}

/* qsort has no context argument: sort pairs that carry what they compare. */
typedef struct Range {
    uint64_t begin, end;
    size_t index;
} Range;

static int cmp_range(const void *a, const void *b) {
    const Range *x = a, *y = b;
    if (x->begin != y->begin) return x->begin < y->begin ? -1 : 1;
    if (x->end != y->end) return x->end < y->end ? -1 : 1;
    return (x->index > y->index) - (x->index < y->index);
}

typedef struct NameRef {
    const char *name;
    size_t index;
} NameRef;

static int cmp_name(const void *a, const void *b) {
    const NameRef *x = a, *y = b;
    int c = strcmp(x->name, y->name);
    return c ? c : (x->index > y->index) - (x->index < y->index);
}

/* The ranges, sorted, must tile [0, data_len): what the reference checks,
 * so no two tensors alias the same bytes and no bytes hide in the file. */
static RtStatus check_tiling(RtSafetensors *st, uint64_t data_len, RtError *err) {
    Range *r = malloc((st->count ? st->count : 1) * sizeof *r);
    if (!r) return rt_error_set(err, TGCRT_ERR_NOMEM, "%s: out of memory", st->name);
    for (size_t i = 0; i < st->count; i++)
        r[i] = (Range){st->begin[i], st->begin[i] + st->tensors[i].nbytes, i};
    qsort(r, st->count, sizeof *r, cmp_range);
    uint64_t at = 0;
    RtStatus s = TGCRT_OK;
    for (size_t i = 0; i < st->count && !s; i++) {
        if (r[i].begin < at)
            s = rt_error_set(err, TGCRT_ERR_FORMAT,
                             "%s: tensors '%s' [%llu, %llu] and '%s' [%llu, %llu] overlap",
                             st->name, st->tensors[r[i - 1].index].name,
                             (unsigned long long)r[i - 1].begin, (unsigned long long)r[i - 1].end,
                             st->tensors[r[i].index].name, (unsigned long long)r[i].begin,
                             (unsigned long long)r[i].end);
        else if (r[i].begin > at)
            s = rt_error_set(err, TGCRT_ERR_FORMAT,
                             "%s: bytes [%llu, %llu) of the data section belong to no tensor",
                             st->name, (unsigned long long)at, (unsigned long long)r[i].begin);
        at = r[i].end;
    }
    if (!s && at != data_len)
        s = rt_error_set(err, TGCRT_ERR_FORMAT,
                         "%s: the data section is %llu bytes, but the tensors end at byte %llu: "
                         "%llu trailing bytes",
                         st->name, (unsigned long long)data_len, (unsigned long long)at,
                         (unsigned long long)(data_len - at));
    free(r);
    return s;
}

static RtStatus index_names(RtSafetensors *st, RtError *err) {
    NameRef *r = malloc((st->count ? st->count : 1) * sizeof *r);
    st->by_name = malloc((st->count ? st->count : 1) * sizeof *st->by_name);
    if (!r || !st->by_name) {
        free(r);
        return rt_error_set(err, TGCRT_ERR_NOMEM, "%s: out of memory", st->name);
    }
    for (size_t i = 0; i < st->count; i++)
        r[i] = (NameRef){st->tensors[i].name, i};
    qsort(r, st->count, sizeof *r, cmp_name);
    RtStatus s = TGCRT_OK;
    for (size_t i = 0; i < st->count; i++) {
        if (i && !strcmp(r[i].name, r[i - 1].name) && !s)
            s = rt_error_set(err, TGCRT_ERR_FORMAT,
                             "%s: the tensor '%s' appears twice in the header", st->name,
                             r[i].name);
        st->by_name[i] = r[i].index;
    }
    free(r);
    return s;
}

static RtStatus parse(RtSafetensors *st, RtError *err) {
    const char *nm = st->name;
    if (st->len < 8)
        return rt_error_set(err, TGCRT_ERR_FORMAT,
                            "%s: the file is %zu bytes, too short for the 8-byte header length", nm,
                            st->len);
    uint64_t n = 0;
    for (int i = 7; i >= 0; i--)
        n = n << 8 | st->base[i];
    uint64_t after = (uint64_t)st->len - 8;
    if (n > ST_MAX_HEADER)
        return rt_error_set(err, TGCRT_ERR_FORMAT,
                            "%s: the header length %llu is larger than the 100 MiB limit", nm,
                            (unsigned long long)n);
    if (n > after)
        return rt_error_set(
            err, TGCRT_ERR_FORMAT,
            "%s: the header length %llu runs past the end of the file (%llu bytes follow it)", nm,
            (unsigned long long)n, (unsigned long long)after);
    const char *h = (const char *)st->base + 8;
    if (n < 2 || h[0] != '{')
        return rt_error_set(err, TGCRT_ERR_FORMAT,
                            "%s: the header is not a JSON object: expected '{' at its start", nm);
    size_t bad;
    if (!valid_utf8((const unsigned char *)h, (size_t)n, &bad))
        return rt_error_set(err, TGCRT_ERR_FORMAT,
                            "%s: the header is not valid UTF-8 (at byte %zu)", nm, bad);

    const char *end = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts(h, (size_t)n, &end, 0);
    if (!root) {
        size_t at = end && end >= h ? (size_t)(end - h) : 0;
        return rt_error_set(err, TGCRT_ERR_FORMAT,
                            "%s: the header is not valid JSON (near byte %zu of %llu)", nm, at,
                            (unsigned long long)n);
    }
    /* The writer pads the header with spaces to align the data. */
    for (const char *p = end; p < h + n; p++)
        if (*p != ' ' && *p != '\t' && *p != '\n' && *p != '\r') {
            cJSON_Delete(root);
            return rt_error_set(err, TGCRT_ERR_FORMAT,
                                "%s: the header has characters after its JSON object (at byte %zu)",
                                nm, (size_t)(p - h));
        }
    RtStatus s = TGCRT_OK;
    if (!cJSON_IsObject(root)) {
        s = rt_error_set(err, TGCRT_ERR_FORMAT, "%s: the header is not a JSON object", nm);
        goto done;
    }
    if ((s = check_strings(h, (size_t)(end - h), nm, err))) goto done;
    const cJSON *e;
    size_t count = 0;
    cJSON_ArrayForEach(e, root) if (strcmp(e->string, "__metadata__")) count++;
    st->tensors = calloc(count ? count : 1, sizeof *st->tensors);
    st->begin = calloc(count ? count : 1, sizeof *st->begin);
    if (!st->tensors || !st->begin) {
        s = rt_error_set(err, TGCRT_ERR_NOMEM, "%s: out of memory for %zu tensors", nm, count);
        goto done;
    }
    uint64_t data_len = after - n;
    const unsigned char *data = st->base + 8 + n;
    cJSON_ArrayForEach(e, root) {
        if (!strcmp(e->string, "__metadata__")) { /* free-form: only tgc's pair mark is read */
            const cJSON *m = cJSON_GetObjectItemCaseSensitive(e, RT_ST_PAIR_KEY);
            if (cJSON_IsString(m) && !st->pair && !(st->pair = strdup(m->valuestring))) {
                s = rt_error_set(err, TGCRT_ERR_NOMEM, "%s: out of memory", nm);
                goto done;
            }
            continue;
        }
        size_t i = st->count;
        char *name = malloc(strlen(e->string) + 1);
        if (!name) {
            s = rt_error_set(err, TGCRT_ERR_NOMEM, "%s: out of memory", nm);
            goto done;
        }
        st->tensors[i].name = strcpy(name, e->string);
        st->count++;
        if ((s = parse_entry(st, e, data_len, i, err))) goto done;
        st->tensors[i].data = data + st->begin[i];
    }
    if ((s = index_names(st, err))) goto done;
    s = check_tiling(st, data_len, err);
done:
    cJSON_Delete(root);
    return s;
}

static RtStatus finish_open(RtSafetensors *st, RtSafetensors **out, RtError *err) {
    RtStatus s = parse(st, err);
    if (s) {
        rt_st_close(st);
        return s;
    }
    *out = st;
    return TGCRT_OK;
}

static RtSafetensors *new_st(const char *name) {
    RtSafetensors *st = calloc(1, sizeof *st);
    if (!st) return NULL;
    st->name = malloc(strlen(name) + 1);
    if (!st->name) {
        free(st);
        return NULL;
    }
    strcpy(st->name, name);
    return st;
}

RtStatus rt_st_open_memory(const void *buf, size_t len, const char *name, RtSafetensors **out,
                           RtError *err) {
    *out = NULL;
    if (!buf && len) return rt_error_set(err, TGCRT_ERR_ARG, "%s: NULL buffer", name);
    RtSafetensors *st = new_st(name);
    if (!st) return rt_error_set(err, TGCRT_ERR_NOMEM, "%s: out of memory", name);
    st->base = buf;
    st->len = len;
    return finish_open(st, out, err);
}

RtStatus rt_st_open(const char *path, RtSafetensors **out, RtError *err) {
    *out = NULL;
    uint64_t size;
    int fd = rt_open_regular(path, &size, err); /* a FIFO would block a plain open */
    if (fd < 0) return TGCRT_ERR_IO;
    if (size > SIZE_MAX) {
        close(fd);
        return rt_error_set(err, TGCRT_ERR_IO, "%s: too large to map", path);
    }
    RtSafetensors *st = new_st(path);
    if (!st) {
        close(fd);
        return rt_error_set(err, TGCRT_ERR_NOMEM, "%s: out of memory", path);
    }
    st->len = (size_t)size;
    if (st->len) { /* mmap rejects length 0; parse() reports the short file */
        void *m = mmap(NULL, st->len, PROT_READ, MAP_PRIVATE, fd, 0);
        if (m == MAP_FAILED) {
            RtStatus s =
                rt_error_set(err, TGCRT_ERR_IO, "%s: cannot map: %s", path, strerror(errno));
            close(fd);
            rt_st_close(st);
            return s;
        }
        st->map = m;
        st->base = m;
    }
    close(fd); /* the mapping stays valid */
    return finish_open(st, out, err);
}

void rt_st_close(RtSafetensors *st) {
    if (!st) return;
    for (size_t i = 0; i < st->count; i++)
        free((char *)st->tensors[i].name);
    free(st->tensors);
    free(st->by_name);
    free(st->begin);
    free(st->pair);
    if (st->map) munmap(st->map, st->len);
    free(st->name);
    free(st);
}

const char *rt_st_name(const RtSafetensors *st) {
    return st->name;
}
size_t rt_st_count(const RtSafetensors *st) {
    return st->count;
}

static uintptr_t page_size(void) {
    long ps = sysconf(_SC_PAGESIZE);
    return ps > 0 ? (uintptr_t)ps : 4096;
}

const char *rt_st_readable_end(const RtSafetensors *st) {
    if (!st->map) return (const char *)st->base + st->len;
    uintptr_t pg = page_size(), b = (uintptr_t)st->map;
    return (const char *)((b + st->len + pg - 1) / pg * pg);
}

#ifndef MADV_PAGEOUT
#define MADV_PAGEOUT 21 /* Linux 5.4, for older headers */
#endif

void rt_st_release(const RtSafetensors *st, const void *p, size_t n) {
    if (!st) return;
    uintptr_t pg = page_size();
    uintptr_t lo = ((uintptr_t)p + pg - 1) / pg * pg, hi = ((uintptr_t)p + n) / pg * pg;
    uintptr_t blo = (uintptr_t)st->base, bhi = blo + st->len;
    if (lo < blo) lo = (blo + pg - 1) / pg * pg;
    if (hi > bhi) hi = bhi / pg * pg;
    if (hi <= lo) return;
    /* Our private read-only mapping, never written: DONTNEED loses nothing.
     * A buffer (the caller's, the executable's image) may be anything:
     * PAGEOUT keeps its contents (clean file pages go, anonymous ones to
     * swap or nowhere). */
    (void)madvise((void *)lo, hi - lo, st->map ? MADV_DONTNEED : MADV_PAGEOUT);
}

const char *rt_st_pair(const RtSafetensors *st) {
    return st ? st->pair : NULL;
}

const RtStTensor *rt_st_get(const RtSafetensors *st, size_t i) {
    return i < st->count ? &st->tensors[i] : NULL;
}

const RtStTensor *rt_st_find(const RtSafetensors *st, const char *name) {
    size_t lo = 0, hi = st->count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        const RtStTensor *t = &st->tensors[st->by_name[mid]];
        int c = strcmp(name, t->name);
        if (!c) return t;
        if (c < 0)
            hi = mid;
        else
            lo = mid + 1;
    }
    return NULL;
}

RtStatus rt_st_expect(const RtSafetensors *st, const char *name, const RtDesc *declared,
                      const RtStTensor **out, RtError *err) {
    char e[RT_DESC_STR_MAX], f[RT_DESC_STR_MAX];
    const RtStTensor *t = rt_st_find(st, name);
    *out = t;
    if (!t)
        return rt_error_set(err, TGCRT_ERR_MISSING, "%s: missing tensor '%s' (expected %s)",
                            st->name, name, rt_desc_format(declared, e, sizeof e));
    if (!rt_desc_equal(&t->desc, declared)) {
        *out = NULL;
        return rt_error_set(
            err, t->desc.dtype != declared->dtype ? TGCRT_ERR_DTYPE : TGCRT_ERR_SHAPE,
            "%s: tensor '%s': expected %s, found %s", st->name, name,
            rt_desc_format(declared, e, sizeof e), rt_desc_format(&t->desc, f, sizeof f));
    }
    return TGCRT_OK;
}
