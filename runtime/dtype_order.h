/* Asserts at compile time that an enum lists dtype.def's rows in order,
 * so that the compiler's DType and the runtime's RtDType agree value for
 * value. The includer defines DTYPE_VALUE(ID), its enum's value for row ID
 * (DT_##ID, RT_##ID), and DTYPE_VALUES, its count. No include guard: one
 * use per file. */
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
