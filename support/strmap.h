/* A set of strings with an int for each (open addressing, in an arena):
 * names checked for uniqueness, or counted, in O(1) each, where a linear
 * scan over every earlier name would make an import or a parse quadratic.
 * Keys are not copied: they must live as long as the map (arena strings). */
#ifndef TGC_STRMAP_H
#define TGC_STRMAP_H
#include <stdbool.h>

#include "support/arena.h"

typedef struct StrMap {
    const char **keys; /* NULL: an empty slot */
    int *vals;
    int cap, count; /* cap: 0 or a power of two */
} StrMap;

/* key's value, or NULL when absent (m zeroed: an empty map). */
int *strmap_find(const StrMap *m, const char *key);
/* key's value, inserted as 0 when absent (*added says which). */
int *strmap_at(Arena *a, StrMap *m, const char *key, bool *added);
/* Inserts key: false when it was there already. */
bool strmap_add(Arena *a, StrMap *m, const char *key);
#endif
