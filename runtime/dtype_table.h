/* dtype.def's rows as a table, for a file whose dtype enum lists them in
 * order (the compiler's DType in ir/dtype.c, the runtime's RtDType in
 * runtime/dtype.c): the lookups both make, and a compile-time check that
 * the enum does list the rows in order, since generated code passes a
 * DType where the runtime reads an RtDType. The includer defines
 * DTYPE_VALUE(ID), its enum's value for row ID (DT_##ID, RT_##ID), and
 * DTYPE_VALUES, its count. Not a public header; one use per file. */
#include <stddef.h>
#include <string.h>

enum {
#define DTYPE(id, name, size) DTYPE_ROW_##id,
#include "dtype.def"
#undef DTYPE
    DTYPE_ROWS
};
#define DTYPE(id, name, size)                                                                      \
    _Static_assert(DTYPE_VALUE(id) == (int)DTYPE_ROW_##id, "the dtype enum follows dtype.def");
#include "dtype.def"
#undef DTYPE
_Static_assert(DTYPE_VALUES == (int)DTYPE_ROWS,
               "the dtype enum has one value per row of dtype.def");

static const struct {
    const char *name;
    size_t size;
} dtype_rows[DTYPE_ROWS] = {
#define DTYPE(id, name, size) {name, size},
#include "dtype.def"
#undef DTYPE
};

/* Row t's name, "none" when t is no row. */
static inline const char *dtype_row_name(int t) {
    return t >= 0 && t < DTYPE_ROWS ? dtype_rows[t].name : "none";
}
/* Row t's bytes per element, 0 when t is no row. */
static inline size_t dtype_row_size(int t) {
    return t >= 0 && t < DTYPE_ROWS ? dtype_rows[t].size : 0;
}
/* The row whose name is name (not NULL), or -1. */
static inline int dtype_row_find(const char *name) {
    for (int t = 0; t < DTYPE_ROWS; t++)
        if (!strcmp(name, dtype_rows[t].name)) return t;
    return -1;
}
