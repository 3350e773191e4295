/* The CUDA attention kernel's tiles (codegen/cuda/cu_attention_tiles.c):
 * kept apart from the kernel's source generation so that the planning
 * (codegen/interface.c, through cg_cuda_attention_scratch) can ask whether
 * the kernel can run a node without linking the CUDA code generator. */
#ifndef TGC_CU_ATTENTION_TILES_H
#define TGC_CU_ATTENTION_TILES_H
#include <stdbool.h>
#include <stdint.h>

#include "runtime/tgcrt_abi.h" /* RtAttnDesc: the header only */

typedef struct CuAttnTiles {
    int br, bc;   /* query rows and keys per tile */
    int qs, ps;   /* row strides (floats) of the Q/K and P tiles */
    int kvs;      /* floats per row of the K/V buffer */
    int64_t smem; /* bytes */
} CuAttnTiles;

/* The largest tiles whose shared memory fits smem_max bytes; false when
 * even the smallest do not. */
bool cu_attention_tiles(const RtAttnDesc *d, int smem_max, CuAttnTiles *out);
/* One block per (batch index, tile of br query rows) in the runtime's 1-D
 * grid: false past 2^31 - 1 blocks. */
bool cu_attention_grid_fits(const RtAttnDesc *d, int br);
#endif
