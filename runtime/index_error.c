/* Formats the index-error cell's message (rt_index_error.h). */
#include "rt_index_error.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { MAXD = 16 };

static int parse_list(const char **s, int64_t *out) {
    int n = 0;
    while (**s && **s != ';') {
        char *end;
        long long v = strtoll(*s, &end, 10);
        if (end == *s) return -1;
        if (n < MAXD) out[n] = v;
        n++;
        *s = end;
        if (**s == ',') (*s)++;
    }
    if (**s != ';' || n > MAXD) return -1;
    (*s)++;
    return n;
}

/* The position whose element offset is off: dims taken largest stride
 * first (exact for any layout a view of a contiguous tensor has). */
static void position(const int64_t *shape, const int64_t *strides, int n, int64_t off, char *out,
                     size_t size) {
    int64_t pos[MAXD] = {0};
    bool used[MAXD] = {false};
    for (int k = 0; k < n; k++) {
        int best = -1;
        for (int d = 0; d < n; d++)
            if (!used[d] && strides[d] > 0 && (best < 0 || strides[d] > strides[best])) best = d;
        if (best < 0) break;
        used[best] = true;
        pos[best] = off / strides[best];
        if (pos[best] >= shape[best]) pos[best] = shape[best] - 1;
        off -= pos[best] * strides[best];
    }
    size_t at = (size_t)snprintf(out, size, "[");
    for (int d = 0; d < n && at < size; d++)
        at += (size_t)snprintf(out + at, size - at, "%s%lld", d ? ", " : "", (long long)pos[d]);
    if (at < size) snprintf(out + at, size - at, "]");
}

void rt_index_error_format(const char *desc, int64_t value, int64_t offset, char *out,
                           size_t size) {
    int64_t shape[MAXD], strides[MAXD];
    const char *s = desc + 1;
    int n, ns;
    if (!desc || desc[0] != '@' || (n = parse_list(&s, shape)) < 0 ||
        (ns = parse_list(&s, strides)) != n) {
        snprintf(out, size, "%s holds a value out of range for the dimension it indexes",
                 desc ? desc : "an index tensor");
        return;
    }
    char pos[256], val[32];
    position(shape, strides, n, offset, pos, sizeof pos);
    snprintf(val, sizeof val, "%lld", (long long)value);
    size_t at = 0;
    while (*s && at + 1 < size) {
        const char *rep = !strncmp(s, "{value}", 7) ? val : !strncmp(s, "{pos}", 5) ? pos : NULL;
        if (rep) {
            at += (size_t)snprintf(out + at, size - at, "%s", rep);
            s += rep == val ? 7 : 5;
            if (at >= size) at = size - 1;
        } else {
            out[at++] = *s++;
        }
    }
    out[at < size ? at : size - 1] = 0;
}
