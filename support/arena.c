#include "support/arena.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct ArenaChunk {
    ArenaChunk *next;
    size_t size, used;
    _Alignas(16) unsigned char data[];
};

static void out_of_memory(void) {
    fputs("tgc: out of memory\n", stderr);
    exit(3);
}

void *arena_try_alloc(Arena *a, size_t size) {
    if (size > SIZE_MAX - sizeof(ArenaChunk) - 16) return NULL;
    size = (size + 15) & ~(size_t)15;
    ArenaChunk *c = a->head;
    if (!c || c->size - c->used < size) {
        size_t cap = size > 65536 ? size : 65536;
        c = malloc(sizeof(ArenaChunk) + cap);
        if (!c) return NULL;
        c->size = cap;
        c->used = 0;
        c->next = a->head;
        a->head = c;
    }
    void *p = c->data + c->used;
    c->used += size;
    a->used_total += size;
    memset(p, 0, size);
    return p;
}

void *arena_alloc(Arena *a, size_t size) {
    void *p = arena_try_alloc(a, size);
    if (!p) out_of_memory();
    return p;
}

void *arena_dup(Arena *a, const void *p, size_t size) {
    void *q = arena_alloc(a, size ? size : 1);
    if (size) memcpy(q, p, size);
    return q;
}

char *arena_strndup(Arena *a, const char *s, size_t n) {
    char *q = arena_alloc(a, n + 1);
    memcpy(q, s, n);
    q[n] = 0;
    return q;
}

char *arena_strdup(Arena *a, const char *s) {
    return arena_strndup(a, s, strlen(s));
}

char *arena_printf(Arena *a, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    char *q = arena_alloc(a, (size_t)n + 1);
    va_start(ap, fmt);
    vsnprintf(q, (size_t)n + 1, fmt, ap);
    va_end(ap);
    return q;
}

void *arena_grow(Arena *a, void *old, size_t elem, int count, int *cap) {
    int ncap = *cap ? *cap * 2 : 8;
    void *p = arena_alloc(a, elem * (size_t)ncap);
    if (old && count) memcpy(p, old, elem * (size_t)count);
    *cap = ncap;
    return p;
}

void arena_free(Arena *a) {
    ArenaChunk *c = a->head;
    while (c) {
        ArenaChunk *n = c->next;
        free(c);
        c = n;
    }
    a->head = NULL;
    a->used_total = 0;
}
