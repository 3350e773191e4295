#include "support/strmap.h"

#include <stdint.h>
#include <string.h>

static uint64_t strmap_hash(const char *s) {
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (; *s; s++)
        h = (h ^ (uint8_t)*s) * 1099511628211ull;
    return h ^ (h >> 29);
}

/* The slot holding key, or the empty slot where it would go. */
static int strmap_slot(const StrMap *m, const char *key) {
    uint64_t mask = (uint64_t)m->cap - 1;
    for (uint64_t i = strmap_hash(key) & mask;; i = (i + 1) & mask)
        if (!m->keys[i] || !strcmp(m->keys[i], key)) return (int)i;
}

int *strmap_find(const StrMap *m, const char *key) {
    if (!m->cap) return NULL;
    int i = strmap_slot(m, key);
    return m->keys[i] ? &m->vals[i] : NULL;
}

/* Doubles the table (kept at most half full, so probes stay short). */
static void strmap_grow(Arena *a, StrMap *m) {
    StrMap n = {.cap = m->cap ? m->cap * 2 : 64, .count = m->count};
    n.keys = ARENA_ARRAY(a, const char *, n.cap);
    n.vals = ARENA_ARRAY(a, int, n.cap);
    for (int k = 0; k < m->cap; k++)
        if (m->keys[k]) {
            int i = strmap_slot(&n, m->keys[k]);
            n.keys[i] = m->keys[k];
            n.vals[i] = m->vals[k];
        }
    *m = n;
}

int *strmap_at(Arena *a, StrMap *m, const char *key, bool *added) {
    if (2 * (m->count + 1) > m->cap) strmap_grow(a, m);
    int i = strmap_slot(m, key);
    if (added) *added = !m->keys[i];
    if (!m->keys[i]) {
        m->keys[i] = key;
        m->vals[i] = 0;
        m->count++;
    }
    return &m->vals[i];
}

bool strmap_add(Arena *a, StrMap *m, const char *key) {
    bool added;
    strmap_at(a, m, key, &added);
    return added;
}
