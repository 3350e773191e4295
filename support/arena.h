/* Bump allocator: every compilation allocates from one arena and frees it
 * whole, so no pass has to track ownership and nothing leaks on error paths. */
#ifndef TGC_ARENA_H
#define TGC_ARENA_H
#include <stddef.h>

typedef struct ArenaChunk ArenaChunk;
typedef struct Arena {
    ArenaChunk *head;
    size_t used_total;
} Arena;

void *arena_alloc(Arena *a, size_t size); /* zeroed, 16-byte aligned */
/* The same, NULL when memory is short (arena_alloc exits 3, "out of
 * memory"): for sizes that come from the input, so the message can name it. */
void *arena_try_alloc(Arena *a, size_t size);
void *arena_dup(Arena *a, const void *p, size_t size);
char *arena_strdup(Arena *a, const char *s);
char *arena_strndup(Arena *a, const char *s, size_t n);
char *arena_printf(Arena *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Grows a vector of elements of size elem: returns the new array. */
void *arena_grow(Arena *a, void *old, size_t elem, int count, int *cap);
void arena_free(Arena *a);

#define ARENA_NEW(a, T) ((T *)arena_alloc((a), sizeof(T)))
#define ARENA_ARRAY(a, T, n) ((T *)arena_alloc((a), sizeof(T) * (size_t)(n)))
/* Appends x to the vector (ptr, count, cap) allocated in arena a. */
#define ARENA_PUSH(a, ptr, count, cap, x)                                                          \
    do {                                                                                           \
        if ((count) >= (cap)) (ptr) = arena_grow((a), (ptr), sizeof(*(ptr)), (count), &(cap));     \
        (ptr)[(count)++] = (x);                                                                    \
    } while (0)
#endif
