/* Reading the protobuf: the model (after a nesting check protobuf-c does
 * not make), tensors in raw_data, in the typed fields or in external data
 * files, and node attributes. Every malformed piece fails naming the
 * tensor or node. */
#define _XOPEN_SOURCE 700 /* openat, fstatat, pread */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "frontend/onnx/ox.h"

/* protobuf-c unpacks nested messages recursively with no limit: a few
 * kilobytes of nested graph attributes would overflow the stack. This walks
 * the wire format along the schema's recursive fields first and refuses
 * nesting deeper than any real model has. Message kinds: */
enum { PB_MODEL, PB_GRAPH, PB_NODE, PB_ATTR, PB_TYPE, PB_TYPE_INNER, PB_FUNC, PB_TRAIN, PB_VINFO };

/* The submessage kind of field f in a message of kind k, or -1. */
static int pb_child(int k, uint64_t f) {
    switch (k) {
    case PB_MODEL: return f == 7 ? PB_GRAPH : f == 25 ? PB_FUNC : f == 20 ? PB_TRAIN : -1;
    case PB_GRAPH: return f == 1 ? PB_NODE : (f == 11 || f == 12 || f == 13) ? PB_VINFO : -1;
    case PB_NODE: return f == 5 ? PB_ATTR : -1;
    case PB_ATTR: return (f == 6 || f == 11) ? PB_GRAPH : (f == 14 || f == 15) ? PB_TYPE : -1;
    case PB_VINFO: return f == 2 ? PB_TYPE : -1;
    case PB_TYPE: return (f == 4 || f == 5 || f == 9) ? PB_TYPE_INNER : -1;
    case PB_TYPE_INNER: return (f == 1 || f == 2) ? PB_TYPE : -1;
    case PB_FUNC: return f == 7 ? PB_NODE : -1;
    case PB_TRAIN: return (f == 1 || f == 2) ? PB_GRAPH : -1;
    }
    return -1;
}

static bool pb_varint(const uint8_t **p, const uint8_t *end, uint64_t *v) {
    *v = 0;
    for (int s = 0; s < 64 && *p < end; s += 7) {
        uint8_t b = *(*p)++;
        *v |= (uint64_t)(b & 0x7f) << s;
        if (!(b & 0x80)) return true;
    }
    return false;
}

/* -1: nested too deep; 0: fine (or malformed: protobuf-c says so). */
static int pb_depth_ok(const uint8_t *p, const uint8_t *end, int kind, int depth) {
    if (depth > 48) return -1;
    while (p < end) {
        uint64_t key, len;
        if (!pb_varint(&p, end, &key)) return 0;
        switch (key & 7) {
        case 0:
            if (!pb_varint(&p, end, &len)) return 0;
            break;
        case 1:
            if (end - p < 8) return 0;
            p += 8;
            break;
        case 5:
            if (end - p < 4) return 0;
            p += 4;
            break;
        case 2: {
            if (!pb_varint(&p, end, &len) || len > (uint64_t)(end - p)) return 0;
            int c = pb_child(kind, key >> 3);
            if (c >= 0 && pb_depth_ok(p, p + len, c, depth + 1) < 0) return -1;
            p += len;
            break;
        }
        default: return 0;
        }
    }
    return 0;
}

void ox_read_model(Ox *x, const uint8_t *bytes, size_t n) {
    if (n == 0) ox_fail(x, "the file is empty: not an ONNX model");
    if (pb_depth_ok(bytes, bytes + n, PB_MODEL, 0) < 0)
        ox_fail(x, "the model nests subgraphs or types more than 48 deep: refused");
    x->m = onnx__model_proto__unpack(NULL, n, bytes);
    if (!x->m)
        ox_fail(x, "not a valid ONNX model: the protobuf cannot be decoded (truncated or "
                   "corrupt file?)");
    if (!x->m->graph) ox_fail(x, "the model has no graph");
    x->g = x->m->graph;
}

DType ox_dtype(Ox *x, int t, const char *what) {
    switch (t) {
    case ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT: return DT_F32;
    case ONNX__TENSOR_PROTO__DATA_TYPE__UINT8: return DT_U8;
    case ONNX__TENSOR_PROTO__DATA_TYPE__INT8: return DT_I8;
    case ONNX__TENSOR_PROTO__DATA_TYPE__INT16: return DT_I16;
    case ONNX__TENSOR_PROTO__DATA_TYPE__INT32: return DT_I32;
    case ONNX__TENSOR_PROTO__DATA_TYPE__INT64: return DT_I64;
    case ONNX__TENSOR_PROTO__DATA_TYPE__BOOL: return DT_BOOL;
    case ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT16: return DT_F16;
    case ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE: return DT_F64;
    case ONNX__TENSOR_PROTO__DATA_TYPE__BFLOAT16: return DT_BF16;
    case ONNX__TENSOR_PROTO__DATA_TYPE__UINT16: return DT_U16;
    case ONNX__TENSOR_PROTO__DATA_TYPE__UINT32: return DT_U32;
    case ONNX__TENSOR_PROTO__DATA_TYPE__UINT64: return DT_U64;
    }
    static const char *names[] = {"undefined",  "float",   "uint8",  "int8",   "uint16",
                                  "int16",      "int32",   "int64",  "string", "bool",
                                  "float16",    "double",  "uint32", "uint64", "complex64",
                                  "complex128", "bfloat16"};
    ox_fail(x,
            "%s: element type %s (%d) is not supported (float, float16, bfloat16, double, "
            "int64, int32, int16, int8, uint64, uint32, uint16, uint8, bool are)",
            what, t >= 0 && t <= 16 ? names[t] : "unknown", t);
}

/* path's target with every link resolved, relative to the model's
 * directory (itself resolved), or NULL when it lies outside it. */
static const char *resolved_inside(Ox *x, const char *path) {
    char *real = realpath(path, NULL), *dir = realpath(x->dir, NULL);
    const char *inside = NULL;
    size_t n = dir ? strlen(dir) : 0;
    if (real && dir && !strncmp(real, dir, n) && (real[n] == '/' || (n == 1 && dir[0] == '/')))
        inside = arena_strdup(x->a, real + n + (real[n] == '/'));
    free(real);
    free(dir);
    return inside;
}

/* Opens loc below the model's directory one component at a time, never
 * following a symbolic link blindly (O_NOFOLLOW on each): a link planted
 * beside the model, to /etc/passwd or to a folder elsewhere, is refused, as
 * is a location that is absolute or climbs out with "..", so the bytes read
 * are always a file inside the model's folder (ONNX Runtime confines
 * external data the same way). A link whose target, fully resolved, lies
 * inside the folder is allowed (cli.md): the resolved path is opened the
 * same way, this time with no link allowed (links_resolved). The folder
 * itself is the user's to reach through links. Returns the open regular
 * file, its size in *st. */
static int open_confined(Ox *x, const char *what, const char *loc, const char *path,
                         struct stat *st, bool links_resolved) {
    if (loc[0] == '/' || strchr(loc, '\\'))
        ox_fail(x, "%s: external data file '%s' is outside the model's directory: refused", what,
                loc);
    char *rest = arena_strdup(x->a, loc), *comp[64];
    int n = 0;
    for (char *c = rest, *next; c; c = next) {
        next = strchr(c, '/');
        if (next) *next++ = 0;
        if (!*c || !strcmp(c, ".")) continue;
        if (!strcmp(c, ".."))
            ox_fail(x, "%s: external data file '%s' is outside the model's directory: refused",
                    what, loc);
        if (n == 64) ox_fail(x, "%s: external data file '%s': too many folders deep", what, loc);
        comp[n++] = c;
    }
    if (!n) ox_fail(x, "%s: external data location '%s' names no file", what, loc);
    int fd = open(x->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        ox_fail(x, "%s: cannot open the model's directory '%s' for external data file '%s': %s",
                what, x->dir, path, strerror(errno));
    for (int k = 0; k < n; k++) {
        /* O_NONBLOCK: a FIFO opens at once (and is refused below). */
        int flags = O_RDONLY | O_NOFOLLOW | O_CLOEXEC | (k == n - 1 ? O_NONBLOCK : O_DIRECTORY);
        int next = openat(fd, comp[k], flags), e = errno;
        struct stat ls;
        bool link =
            next < 0 && fstatat(fd, comp[k], &ls, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(ls.st_mode);
        close(fd);
        if (link && !links_resolved) {
            const char *inside = resolved_inside(x, path);
            if (!inside)
                ox_fail(x,
                        "%s: external data file '%s': '%s' is a symbolic link whose target lies "
                        "outside the model's directory: refused (external data is read only "
                        "from inside the model's directory)",
                        what, path, comp[k]);
            return open_confined(x, what, inside, path, st, true);
        }
        if (link) /* it changed while being resolved */
            ox_fail(x, "%s: external data file '%s': '%s' is a symbolic link: refused", what, path,
                    comp[k]);
        if (next < 0)
            ox_fail(x, "%s: cannot open external data file '%s': %s", what, path, strerror(e));
        fd = next;
    }
    if (fstat(fd, st) != 0 || !S_ISREG(st->st_mode)) {
        close(fd);
        ox_fail(x, "%s: external data file '%s' is not a regular file", what, path);
    }
    return fd;
}

/* The most one initializer's external data may hold: 16 GiB, and never more
 * than the machine's memory. Checked before allocating, so that a huge (or
 * sparse) file is exit 1 naming the tensor, not "out of memory". */
static uint64_t external_limit(void) {
    uint64_t lim = (uint64_t)ONNX_MAX_EXTERNAL;
    long pages = sysconf(_SC_PHYS_PAGES), psize = sysconf(_SC_PAGESIZE);
    if (pages > 0 && psize > 0 && (uint64_t)pages * (uint64_t)psize < lim)
        lim = (uint64_t)pages * (uint64_t)psize;
    return lim;
}

/* External data: "location" relative to the model's directory (see
 * open_confined), "offset", "length". Every file read is listed once in
 * x->data_files. */
static const uint8_t *read_external(Ox *x, const Onnx__TensorProto *t, const char *what,
                                    size_t want) {
    const char *loc = NULL;
    long long off = 0, len = -1;
    for (size_t k = 0; k < t->n_external_data; k++) {
        const Onnx__StringStringEntryProto *e = t->external_data[k];
        if (!e || !e->key || !e->value) continue;
        char *end;
        if (!strcmp(e->key, "location")) {
            loc = e->value;
        } else if (!strcmp(e->key, "offset") || !strcmp(e->key, "length")) {
            errno = 0;
            long long v = strtoll(e->value, &end, 10);
            if (errno || end == e->value || *end || v < 0)
                ox_fail(x, "%s: external data %s '%s' is not a byte count", what, e->key, e->value);
            if (e->key[0] == 'o')
                off = v;
            else
                len = v;
        }
    }
    if (!loc || !*loc) ox_fail(x, "%s: external data without a location", what);
    if (!x->dir)
        ox_fail(x, "%s: external data file '%s': external data is not allowed here", what, loc);
    char *path = arena_printf(x->a, "%s/%s", x->dir, loc);
    struct stat st;
    int fd = open_confined(x, what, loc, path, &st, false);
    long long size = (long long)st.st_size;
    const char *bad = NULL;
    if (len < 0 && off <= size) len = size - off;
    if (off > size || len > size - off)
        bad = arena_printf(x->a, "%s: external data [%lld, %lld) lies outside '%s' (%lld bytes)",
                           what, off, off + (len < 0 ? 0 : len), path, size);
    else if ((size_t)len != want)
        bad = arena_printf(x->a, "%s: external data holds %lld bytes, the tensor needs %zu", what,
                           len, want);
    else if ((uint64_t)want > external_limit())
        bad = arena_printf(x->a,
                           "%s: %zu bytes of external data (in '%s', %lld bytes): more than "
                           "the %llu bytes tgc reads into memory for one initializer",
                           what, want, path, size, (unsigned long long)external_limit());
    uint8_t *buf = bad ? NULL : arena_try_alloc(x->a, want ? want : 1);
    if (!bad && !buf)
        bad = arena_printf(x->a, "%s: out of memory for its %zu bytes of external data ('%s')",
                           what, want, path);
    for (size_t got = 0; !bad && got < want;) {
        ssize_t r = pread(fd, buf + got, want - got, (off_t)(off + (long long)got));
        if (r <= 0)
            bad = arena_printf(x->a, "%s: cannot read %zu bytes of '%s': %s", what, want, path,
                               r < 0 ? strerror(errno) : "the file is shorter than it was");
        else
            got += (size_t)r;
    }
    close(fd);
    if (bad) ox_fail(x, "%s", bad);
    bool seen = false;
    for (int k = 0; k < x->ndata_files && !seen; k++)
        seen = !strcmp(x->data_files[k], path);
    if (!seen) ARENA_PUSH(x->a, x->data_files, x->ndata_files, x->capdata_files, path);
    return buf;
}

OxConst *ox_tensor_const(Ox *x, const Onnx__TensorProto *t, const char *what) {
    if (!t) ox_fail(x, "%s: missing tensor", what);
    if (!t->has_data_type) ox_fail(x, "%s: the tensor has no data type", what);
    DType dt = ox_dtype(x, t->data_type, what);
    if (t->n_dims > OX_MAX_DIMS)
        ox_fail(x, "%s: %zu dimensions (at most %d)", what, t->n_dims, OX_MAX_DIMS);
    if (t->segment) ox_fail(x, "%s: segmented tensors are not supported", what);
    int64_t shape[OX_MAX_DIMS];
    for (size_t k = 0; k < t->n_dims; k++) {
        if (t->dims[k] < 0 || t->dims[k] > ((int64_t)1 << 40))
            ox_fail(x, "%s: dimension %zu has size %lld", what, k, (long long)t->dims[k]);
        shape[k] = t->dims[k];
    }
    OxConst *c = ox_const_new(x, dt, (int)t->n_dims, shape);
    if (c->n > ((int64_t)1 << 34))
        ox_fail(x, "%s: %lld elements: too large", what, (long long)c->n);
    size_t es = dtype_size(dt), want = (size_t)c->n * es;
    if (t->has_data_location && t->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL) {
        c->raw = read_external(x, t, what, want);
        return c;
    }
    if (t->has_raw_data) {
        if (t->raw_data.len != want)
            ox_fail(x, "%s: raw_data holds %zu bytes, %s[%lld elements] needs %zu", what,
                    t->raw_data.len, dtype_name(dt), (long long)c->n, want);
        c->raw = t->raw_data.data;
        return c;
    }
    /* The typed fields: each dtype has its own (onnx.proto's comments). */
    size_t have;
    switch (dt) {
    case DT_F32: have = t->n_float_data; break;
    case DT_F64: have = t->n_double_data; break;
    case DT_I64: have = t->n_int64_data; break;
    case DT_U32:
    case DT_U64: have = t->n_uint64_data; break; /* onnx.proto: uint64_data */
    default: have = t->n_int32_data; break;
    }
    if (have != (size_t)c->n)
        ox_fail(x, "%s: %zu values stored, the shape needs %lld", what, have, (long long)c->n);
    uint8_t *buf = arena_alloc(x->a, want ? want : 1);
    for (int64_t k = 0; k < c->n; k++) {
        uint8_t *p = buf + (size_t)k * es;
        switch (dt) {
        case DT_F32: memcpy(p, &t->float_data[k], 4); break;
        case DT_F64: memcpy(p, &t->double_data[k], 8); break;
        case DT_I64: memcpy(p, &t->int64_data[k], 8); break;
        case DT_I32: memcpy(p, &t->int32_data[k], 4); break;
        case DT_U64: memcpy(p, &t->uint64_data[k], 8); break;
        case DT_U32: {
            uint32_t v = (uint32_t)t->uint64_data[k];
            memcpy(p, &v, 4);
            break;
        }
        case DT_U16:
        case DT_I16:
        case DT_F16:
        case DT_BF16: {
            uint16_t v = (uint16_t)t->int32_data[k];
            memcpy(p, &v, 2);
            break;
        }
        default: *p = (uint8_t)t->int32_data[k]; break; /* bool, u8, i8 */
        }
    }
    c->raw = buf;
    return c;
}

const Onnx__AttributeProto *ox_attr(Ox *x, const char *name) {
    Onnx__NodeProto *n = ox_cur(x);
    for (size_t k = 0; k < n->n_attribute; k++)
        if (n->attribute[k] && n->attribute[k]->name && !strcmp(n->attribute[k]->name, name))
            return n->attribute[k];
    return NULL;
}

int64_t ox_attr_i(Ox *x, const char *name, int64_t def) {
    const Onnx__AttributeProto *a = ox_attr(x, name);
    if (!a) return def;
    if (!a->has_i) ox_fail(x, "attribute '%s' should be an integer", name);
    return a->i;
}

float ox_attr_f(Ox *x, const char *name, float def) {
    const Onnx__AttributeProto *a = ox_attr(x, name);
    if (!a) return def;
    if (!a->has_f) ox_fail(x, "attribute '%s' should be a float", name);
    return a->f;
}

const char *ox_attr_s(Ox *x, const char *name, const char *def) {
    const Onnx__AttributeProto *a = ox_attr(x, name);
    if (!a) return def;
    if (!a->has_s) ox_fail(x, "attribute '%s' should be a string", name);
    return arena_strndup(x->a, (const char *)a->s.data, a->s.len);
}

const int64_t *ox_attr_ints(Ox *x, const char *name, int *n) {
    const Onnx__AttributeProto *a = ox_attr(x, name);
    *n = 0;
    if (!a) return NULL;
    if ((a->has_type && a->type != ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS) || a->n_floats ||
        a->n_strings)
        ox_fail(x, "attribute '%s' should be a list of integers", name);
    if (a->n_ints > OX_MAX_DIMS * 2)
        ox_fail(x, "attribute '%s' has %zu values: too many", name, a->n_ints);
    *n = (int)a->n_ints;
    return a->ints;
}

void ox_check_attrs(Ox *x, const char *const *known) {
    Onnx__NodeProto *n = ox_cur(x);
    for (size_t k = 0; k < n->n_attribute; k++) {
        const char *an = n->attribute[k] && n->attribute[k]->name ? n->attribute[k]->name : "";
        bool ok = false;
        for (const char *const *p = known; *p && !ok; p++)
            ok = !strcmp(*p, an);
        if (!ok) {
            char list[512] = "";
            for (const char *const *p = known; *p; p++)
                snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s",
                         p == known ? "" : ", ", *p);
            ox_fail(x, "attribute '%s' is not supported (supported: %s)", an,
                    *list ? list : "none");
        }
    }
}
