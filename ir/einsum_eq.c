/* einsum_eq.h: the equation's subscripts, operand by operand, then the
 * output's. */
#include "ir/einsum_eq.h"

#include <stdio.h>
#include <string.h>

static bool is_letter(int c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

/* One operand's subscripts, from *pp up to ',' or the arrow. */
static bool read_operand(const char **pp, const char *arrow, int k, int rank, EinsumEq *e,
                         char *err, size_t nerr) {
    const char *p = *pp;
    char letters[TG_MAX_DIMS];
    int nl = 0, ell_at = -1;
    while (*p && *p != ',' && (!arrow || p < arrow)) {
        if (*p == ' ') {
            p++;
            continue;
        }
        if (!strncmp(p, "...", 3)) {
            if (ell_at >= 0) {
                snprintf(err, nerr, "einsum(): found more than one ellipsis for operand %d", k);
                return false;
            }
            ell_at = nl;
            p += 3;
            continue;
        }
        if (!is_letter((unsigned char)*p)) {
            snprintf(err, nerr,
                     "einsum(): invalid subscript '%c' in the equation (expected letters a-z, A-Z)",
                     *p);
            return false;
        }
        if (nl >= TG_MAX_DIMS) {
            snprintf(err, nerr, "einsum(): too many subscripts for operand %d", k);
            return false;
        }
        letters[nl++] = *p++;
    }
    int n_ell = rank - nl;
    if ((ell_at < 0 && n_ell != 0) || n_ell < 0 || rank > TG_MAX_DIMS) {
        snprintf(err, nerr,
                 "einsum(): the number of subscripts in the equation (%d) does not match the "
                 "number of dimensions (%d) for operand %d%s",
                 nl, rank, k, ell_at < 0 ? " and no ellipsis was given" : "");
        return false;
    }
    int dim = 0;
    for (int i = 0; i <= nl; i++) {
        if (i == ell_at)
            for (int x = 0; x < n_ell; x++)
                e->code[k][dim++] = EINSUM_ELL(n_ell, x);
        if (i == nl) break;
        e->code[k][dim++] = (unsigned char)letters[i];
        e->count[(unsigned char)letters[i]]++;
    }
    if (ell_at >= 0) e->any_ell = e->has_ell[k] = true;
    if (n_ell > e->nell) e->nell = n_ell;
    e->rank[k] = rank;
    *pp = p;
    return true;
}

static bool add_out(EinsumEq *e, int code, char *err, size_t nerr) {
    if (e->nout >= TG_MAX_DIMS) {
        snprintf(err, nerr, "einsum(): too many output dimensions");
        return false;
    }
    e->out[e->nout++] = code;
    return true;
}

static bool read_output(const char *arrow, EinsumEq *e, char *err, size_t nerr) {
    if (!arrow) {
        e->out_ell = true;
        for (int x = 0; x < e->nell; x++)
            if (!add_out(e, EINSUM_ELL(e->nell, x), err, nerr)) return false;
        for (int l = 'A'; l <= 'z'; l++)
            if (e->count[l] == 1 && !add_out(e, l, err, nerr)) return false;
        return true;
    }
    e->explicit_out = true;
    bool seen[128] = {0};
    for (const char *q = arrow + 2; *q; q++) {
        if (*q == ' ') continue;
        if (!strncmp(q, "...", 3)) {
            e->out_ell = true;
            for (int x = 0; x < e->nell; x++)
                if (!add_out(e, EINSUM_ELL(e->nell, x), err, nerr)) return false;
            q += 2;
            continue;
        }
        unsigned char l = (unsigned char)*q;
        if (l >= 128 || !e->count[l]) {
            snprintf(err, nerr,
                     "einsum(): output subscript %c does not appear in the equation for any "
                     "input operand",
                     l);
            return false;
        }
        if (seen[l]) {
            snprintf(err, nerr,
                     "einsum(): output subscript %c appears more than once in the output", l);
            return false;
        }
        seen[l] = true;
        if (!add_out(e, l, err, nerr)) return false;
    }
    return true;
}

bool einsum_eq_read(const char *eq, int nops, const int *ranks, EinsumEq *e, char *err,
                    size_t nerr) {
    memset(e, 0, sizeof *e);
    if (nops <= 0 || nops > TG_EINSUM_MAX_OPERANDS) {
        snprintf(err, nerr, "einsum(): between 1 and %d operands are supported, found %d",
                 TG_EINSUM_MAX_OPERANDS, nops);
        return false;
    }
    e->nops = nops;
    const char *arrow = strstr(eq, "->");
    const char *p = eq;
    for (int k = 0; k < nops; k++) {
        if (!read_operand(&p, arrow, k, ranks[k], e, err, nerr)) return false;
        if (k + 1 < nops) {
            if (*p != ',') {
                snprintf(err, nerr,
                         "einsum(): more operands were provided than specified in the equation");
                return false;
            }
            p++;
        }
    }
    if (*p == ',' || (arrow ? p != arrow : *p != 0)) {
        snprintf(err, nerr,
                 "einsum(): fewer operands were provided than specified in the equation");
        return false;
    }
    return read_output(arrow, e, err, nerr);
}
