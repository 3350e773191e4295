/* The on-disk cache of NVRTC images: TGC_NVRTC_CACHE=DIR (off when unset
 * or empty). Each entry is DIR/<hash>.nvrtc and holds its whole key (the
 * caller's key text: NVRTC's identity, the options, the program name and
 * the source) next to the image, so a hit needs the key to match byte for
 * byte: the hash only names the file. Entries are written to a temporary
 * file and renamed, so concurrent builds never read half an entry. The
 * cache is an optimisation only: an unusable directory or a damaged entry
 * is a miss, never an error. */
#ifndef TGC_CU_NVRTC_CACHE_H
#define TGC_CU_NVRTC_CACHE_H
#include <stdbool.h>
#include <stddef.h>

#include "codegen/cuda/cu_nvrtc.h"

/* The cache directory from the environment, or NULL when off. */
const char *cu_cache_dir(void);
/* True, with out->data malloc'd, when DIR has the image of exactly this
 * key. */
bool cu_cache_get(const char *dir, const char *key, size_t nkey, NvrtcImage *out);
/* Stores img under key (best effort: failures are silent). */
void cu_cache_put(const char *dir, const char *key, size_t nkey, const NvrtcImage *img);
#endif
