/* The builder's name scope: every name is bound once (dims, inputs,
 * params, lets, a def's locals), found through a hash index, and an unknown
 * one gets a "did you mean" from the bindings or the op table. */
#include <string.h>

#include "frontend/tg/build_internal.h"

Ev bld_ev_err(void) {
    return (Ev){.kind = EV_ERR};
}

const char *bld_ev_kind_name(const Ev *e) {
    switch (e->kind) {
    case EV_TENSOR: return "a tensor";
    case EV_INT: return "an integer";
    case EV_FLOAT: return "a float";
    case EV_BOOL: return "a bool";
    case EV_STR: return "a string";
    case EV_NONE: return "None";
    case EV_DTYPE: return "a dtype";
    case EV_LIST: return "a list";
    case EV_TUPLE: return "several values";
    case EV_ELLIPSIS: return "'...'";
    case EV_SLICE: return "a slice";
    default: return "an invalid value";
    }
}

static unsigned hash_name(const char *s) {
    unsigned h = 2166136261u; /* FNV-1a */
    while (*s)
        h = (h ^ (unsigned char)*s++) * 16777619u;
    return h;
}

/* Names are bound once, so the index maps each name to its one binding. */
Binding *bld_lookup(Builder *B, const char *name) {
    if (!B->index_cap) return NULL;
    for (unsigned i = hash_name(name) & (unsigned)(B->index_cap - 1);;
         i = (i + 1) & (unsigned)(B->index_cap - 1)) {
        int at = B->index[i];
        if (!at) return NULL;
        if (!strcmp(B->binds[at - 1].name, name)) return &B->binds[at - 1];
    }
}

static void index_insert(Builder *B, int pos) {
    unsigned mask = (unsigned)(B->index_cap - 1);
    for (unsigned i = hash_name(B->binds[pos].name) & mask;; i = (i + 1) & mask)
        if (!B->index[i]) {
            B->index[i] = pos + 1;
            return;
        }
}

static int edit_distance(const char *a, const char *b) {
    int la = (int)strlen(a), lb = (int)strlen(b);
    if (la > 32 || lb > 32) return 99;
    int d[33][33];
    for (int i = 0; i <= la; i++)
        d[i][0] = i;
    for (int j = 0; j <= lb; j++)
        d[0][j] = j;
    for (int i = 1; i <= la; i++)
        for (int j = 1; j <= lb; j++) {
            int sub = d[i - 1][j - 1] + (a[i - 1] != b[j - 1]);
            int del = d[i - 1][j] + 1, ins = d[i][j - 1] + 1;
            d[i][j] = sub < del ? (sub < ins ? sub : ins) : (del < ins ? del : ins);
        }
    return d[la][lb];
}

/* A close known name, for "did you mean" hints. */
const char *bld_suggest(Builder *B, const char *name, bool ops) {
    const char *best = NULL;
    int best_d = (int)strlen(name) <= 3 ? 1 : 2;
    best_d++;
    if (ops) {
        for (int i = 0; i < OP_COUNT; i++) {
            if (op_table[i].flags & OPF_INTERNAL) continue;
            int dist = edit_distance(name, op_table[i].name);
            if (dist < best_d) best_d = dist, best = op_table[i].name;
        }
    } else {
        for (int i = 0; i < B->nbinds; i++) {
            int dist = edit_distance(name, B->binds[i].name);
            if (dist < best_d) best_d = dist, best = B->binds[i].name;
        }
    }
    return best;
}

void bld_bind(Builder *B, const char *name, SrcLoc loc, BindKind kind, Ev ev) {
    Binding b = {.name = name, .kind = kind, .ev = ev, .loc = loc};
    ARENA_PUSH(B->a, B->binds, B->nbinds, B->cap, b);
    if (2 * B->nbinds > B->index_cap) { /* keep the load under one half */
        B->index_cap = B->index_cap ? B->index_cap * 4 : 64;
        B->index = ARENA_ARRAY(B->a, int, B->index_cap);
        for (int i = 0; i < B->nbinds; i++)
            index_insert(B, i);
    } else {
        index_insert(B, B->nbinds - 1);
    }
}

/* Checks a new name is free; reports the earlier binding otherwise. */
bool bld_name_free(Builder *B, const char *name, SrcLoc loc) {
    Binding *old = bld_lookup(B, name);
    if (!old) {
        if (dtype_from_name(name) != DT_NONE) {
            diag_error(B->d, loc, "'%s' names a dtype and cannot be bound", name);
            return false;
        }
        return true;
    }
    if (old->kind == BIND_DIM)
        diag_error(B->d, loc, "'%s' is already a dimension of the graph; names are bound once",
                   name);
    else
        diag_error(B->d, loc, "'%s' is already bound; names are bound once (no reassignment)",
                   name);
    if (old->loc.line) diag_note(B->d, old->loc, "'%s' was bound here", name);
    return false;
}

Value *bld_add_value(Builder *B, Value *v) {
    graph_append(B->g, v);
    return v;
}

Value *bld_make_scalar(Builder *B, const Ev *e) {
    Value *v = value_new(B->g, OP_SCALAR, e->loc);
    v->weak = true;
    v->ndim = 0;
    if (e->kind == EV_BOOL) {
        v->dtype = DT_BOOL;
        v->scalar = (double)e->i;
        v->scalar_is_int = true;
    } else if (e->kind == EV_INT) {
        v->dtype = DT_I64;
        v->scalar = (double)e->i;
        v->scalar_is_int = true;
    } else {
        v->dtype = DT_F32;
        v->scalar = e->f;
    }
    return bld_add_value(B, v);
}
