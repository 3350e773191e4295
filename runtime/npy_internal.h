/* Shared by npy.c and npy_input.c; not part of the public interface. */
#ifndef TGCRT_NPY_INTERNAL_H
#define TGCRT_NPY_INTERNAL_H
#include <stdio.h>

#include "tgcrt.h"

/* Opens path and validates its .npy header against the file's size; on
 * success *fp is positioned at the data, which is exactly *nbytes long. */
RtStatus rt_npy_open(const char *path, FILE **fp, RtDesc *desc, size_t *nbytes, RtError *err);
/* Reads n data bytes into dst; a short read is TGCRT_ERR_IO. */
RtStatus rt_npy_read_data(FILE *fp, const char *path, void *dst, size_t n, RtError *err);
/* numpy reads any non-zero byte of a b1 array as True: make them 1. */
void rt_npy_normalize_bool(unsigned char *p, size_t n);
#endif
