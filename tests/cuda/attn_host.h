/* Host emulation of the CUDA C that codegen/cuda/cu_attention.c and
 * cu_qmatmul.c emit, for run_attention_emul.py and run_qmatmul_emul.py on
 * machines without a GPU: the generated kernel
 * (one `extern "C" __global__` function, pasted in after this header by
 * the script) runs as 256 host threads per block, its __syncthreads a
 * std::barrier, its half-warp shuffles an exchange through a table
 * between two barriers (every thread of the kernel reaches every shuffle,
 * so a block-wide exchange is the same). Blocks run one after another
 * (their shared memory is one global array). The f16/bf16 conversions are
 * the prelude's (codegen/cuda/cu_prelude.c) semantics in plain C++. */
#include <barrier>
#include <math.h>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

struct Idx {
    unsigned x, y, z;
};
static thread_local Idx threadIdx, blockIdx;
static std::barrier<> *tg_bar;
static float tg_shfl[1024];

struct alignas(16) float4 {
    float x, y, z, w;
};
alignas(16) float4 attn_smem[256 * 1024 / 16]; /* 256 KiB: more than any tile set takes */
alignas(16) float4 qmm_smem[64 * 1024 / 16];   /* cu_qmatmul.c's x tile and row offsets */

#define __global__
#define __launch_bounds__(n)
#define __shared__
#define TG_INF __int_as_float(0x7f800000)

static inline float __int_as_float(unsigned u) {
    float f;
    memcpy(&f, &u, 4);
    return f;
}
static inline unsigned __float_as_uint(float f) {
    unsigned u;
    memcpy(&u, &f, 4);
    return u;
}
static inline void __syncthreads() {
    tg_bar->arrive_and_wait();
}
static inline float __shfl_xor_sync(unsigned, float v, int lane_mask) {
    unsigned t = threadIdx.x;
    tg_shfl[t] = v;
    tg_bar->arrive_and_wait();
    float r = tg_shfl[t ^ (unsigned)lane_mask];
    tg_bar->arrive_and_wait();
    return r;
}
static inline float tg_h2f(unsigned short h) {
    _Float16 x;
    memcpy(&x, &h, 2);
    return (float)x;
}
static inline unsigned short tg_f2h(float f) {
    _Float16 x = (_Float16)f;
    unsigned short h;
    memcpy(&h, &x, 2);
    return h;
}
static inline float tg_b2f(unsigned short b) {
    return __int_as_float((unsigned)b << 16);
}
static inline unsigned short tg_f2b(float f) {
    if (f != f) return (unsigned short)0x7fc0;
    unsigned u = __float_as_uint(f);
    return (unsigned short)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

/* argv: GRID OUT_SLOT then a file per slot 0..n-1 of bufs ("-": no
 * buffer, e.g. the arena of a kernel that must not read it); the file of
 * OUT_SLOT is overwritten with that buffer after the run. */
#define TG_HOST_MAIN(kernel)                                                                       \
    int main(int argc, char **argv) {                                                              \
        if (argc < 4) return 2;                                                                    \
        unsigned grid = (unsigned)atol(argv[1]);                                                   \
        int out = atoi(argv[2]), n = argc - 3;                                                     \
        std::vector<std::vector<char>> data(n);                                                    \
        std::vector<char *> bufs(n, nullptr);                                                      \
        for (int i = 0; i < n; i++) {                                                              \
            if (!strcmp(argv[3 + i], "-")) continue;                                               \
            FILE *f = fopen(argv[3 + i], "rb");                                                    \
            if (!f) return 2;                                                                      \
            fseek(f, 0, SEEK_END);                                                                 \
            data[i].resize((size_t)ftell(f) + 16);                                                 \
            fseek(f, 0, SEEK_SET);                                                                 \
            if (fread(data[i].data(), 1, data[i].size() - 16, f) != data[i].size() - 16) return 2; \
            fclose(f);                                                                             \
            bufs[i] = data[i].data();                                                              \
        }                                                                                          \
        if (out < 0 || out >= n || !bufs[out]) return 2;                                           \
        std::barrier<> bar(256);                                                                   \
        tg_bar = &bar;                                                                             \
        std::vector<std::thread> th;                                                               \
        for (unsigned t = 0; t < 256; t++)                                                         \
            th.emplace_back([&, t] {                                                               \
                threadIdx = {t, 0, 0};                                                             \
                for (unsigned b = 0; b < grid; b++) {                                              \
                    blockIdx = {b, 0, 0};                                                          \
                    kernel(bufs.data());                                                           \
                    tg_bar->arrive_and_wait(); /* the block's shared memory is free */             \
                }                                                                                  \
            });                                                                                    \
        for (auto &t : th)                                                                         \
            t.join();                                                                              \
        FILE *f = fopen(argv[3 + out], "wb");                                                      \
        if (!f || fwrite(data[out].data(), 1, data[out].size() - 16, f) != data[out].size() - 16)  \
            return 2;                                                                              \
        fclose(f);                                                                                 \
        return 0;                                                                                  \
    }
