/* The CUDA attention kernel's tiles: how many query rows and keys a
 * thread block stages in shared memory (cu_attention.c generates the
 * kernel from them), and cg_cuda_attention_scratch, the recognition pass's
 * question on --target cuda. */
#include "codegen/cuda/cu_attention_tiles.h"

#include "codegen/codegen.h"

static const int TILES[][2] = {{64, 64}, {64, 32}, {32, 32}, {16, 32}, {16, 16}};

static CuAttnTiles tiles_for(int64_t e, int64_t ev, int br, int bc) {
    CuAttnTiles t = {.br = br, .bc = bc};
    /* Odd row strides: the 16 threads reading column e of 16 K rows (or
     * the two row groups of a warp reading Q) hit distinct banks. */
    t.qs = (int)(e % 2 ? e : e + 1);
    /* P rows of the two row groups of a warp 16 banks apart. */
    t.ps = bc + 16 / (br / 16);
    t.kvs = t.qs > ev ? t.qs : (int)ev;
    t.smem = 4 * ((int64_t)br * t.qs + (int64_t)bc * t.kvs + (int64_t)br * t.ps);
    return t;
}

bool cu_attention_tiles(const RtAttnDesc *d, int smem_max, CuAttnTiles *out) {
    for (size_t i = 0; i < sizeof TILES / sizeof TILES[0]; i++) {
        CuAttnTiles t = tiles_for(d->e, d->ev, TILES[i][0], TILES[i][1]);
        if (t.smem <= smem_max) {
            *out = t;
            return true;
        }
    }
    return false;
}

bool cu_attention_grid_fits(const RtAttnDesc *d, int br) {
    int64_t blocks = (d->l + br - 1) / br;
    for (int b = 0; b < d->nbatch; b++)
        blocks = d->batch[b] && blocks > INT32_MAX / d->batch[b] ? INT32_MAX + 1LL
                                                                 : blocks * d->batch[b];
    return blocks <= INT32_MAX;
}

size_t cg_cuda_attention_scratch(const RtAttnDesc *d) {
    /* 48 KiB: below every architecture's opt-in limit (64 KiB on sm_75,
     * 99 KiB from sm_80), so the tiles the module then picks fit too. */
    CuAttnTiles t;
    if (!cu_attention_tiles(d, 48 * 1024, &t) || !cu_attention_grid_fits(d, t.br)) return SIZE_MAX;
    return 0;
}
