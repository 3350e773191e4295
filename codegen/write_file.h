/* Writing a generated file (object, assembly, LLVM IR, CUDA source, CUBIN,
 * PTX) with every step checked: both code generators use it. */
#ifndef TGC_CODEGEN_WRITE_FILE_H
#define TGC_CODEGEN_WRITE_FILE_H

#include <stdbool.h>
#include <stddef.h>

/* Writes n bytes of data to path. On failure err gets "error: cannot write
 * 'PATH': REASON" (a full disk is ENOSPC, exit 1 upstream, never an abort)
 * and the result is false; the stream is closed once whatever fails. */
bool cg_write_file(const char *path, const void *data, size_t n, char *err, size_t nerr);

#endif
