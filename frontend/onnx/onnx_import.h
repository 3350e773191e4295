/* The ONNX front end: an ONNX ModelProto in, `.tg` source text and the
 * weights it names out. The importer never builds IR: the text goes
 * through the .tg front end like any hand-written graph, so importing and
 * then compiling the written `.tg` gives exactly what compiling the
 * `.onnx` gives (docs/onnx.md). */
#ifndef TGC_ONNX_IMPORT_H
#define TGC_ONNX_IMPORT_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ir/ir.h"

/* One weight of the written graph: its .tg param name, dtype, shape and
 * little-endian bytes in C order (owned by the import). */
typedef struct OnnxParam {
    const char *name;      /* the .tg param name (an identifier) */
    const char *onnx_name; /* the initializer (or Constant output) it came from */
    DType dtype;
    int ndim;
    int64_t shape[12];
    const void *data;
    size_t nbytes;
} OnnxParam;

typedef struct OnnxImport {
    char *text; /* the .tg source, NUL-terminated (malloc'd) */
    int len;
    OnnxParam *params; /* arena-allocated */
    int nparams;
    void *model; /* the unpacked protobuf: params may point into it */
    /* Every external data file read, once each, as "DIR/LOCATION"
     * (arena-allocated): inputs of the command as much as the model is,
     * so that no output is written over one (driver/outputs.h). */
    const char **data_files;
    int ndata_files;
} OnnxImport;

/* The most external data one initializer may have: 16 GiB, checked before
 * anything is allocated (a sparse file can claim any size). */
#define ONNX_MAX_EXTERNAL ((int64_t)1 << 34)

/* Imports the model in bytes[0..n). path names the model in messages and
 * its directory holds external data files (NULL: external data is refused,
 * as in the fuzzer): read only from inside it, never through a symbolic
 * link, each at most ONNX_MAX_EXTERNAL bytes (and the machine's memory).
 * ov/nov: -D values for the dynamic axes (they become the defaults of the
 * symbolic dims). False after errors reported to d (every message names
 * the node or tensor at fault). */
bool onnx_import(Arena *a, Diag *d, const char *path, const uint8_t *bytes, size_t n,
                 const DimOverride *ov, int nov, OnnxImport *out);
void onnx_import_free(OnnxImport *im);

/* A graph input as the model declares it: each dimension a size, or the
 * name of a dynamic axis (dim_param[k] non-NULL; an unnamed one gets the
 * name the import gives it, INPUT_dimK), which -D sets. */
typedef struct OnnxInput {
    const char *name;
    DType dtype;
    int ndim;
    const char *dim_param[12];
    int64_t dim_value[12];
} OnnxInput;

/* The graph's inputs (initializers listed as inputs left out), read
 * without importing the model; false after an error reported to d. */
bool onnx_read_inputs(Arena *a, Diag *d, const char *path, const uint8_t *bytes, size_t n,
                      OnnxInput **out, int *nout);

/* True for a path ending in ".onnx" (any case): the commands that take a
 * FILE import it instead of parsing it as .tg. */
bool onnx_is_model_path(const char *path);
#endif
