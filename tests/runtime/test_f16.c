/* rt_f32_to_f16: every half round-trips through rt_f16_to_f32; every
 * rounding boundary between two adjacent halves (the midpoint and the
 * floats either side of it) rounds to nearest even; overflow, underflow,
 * signed zeros and NaNs. run_runtime.py also compares it with torch on
 * random floats. The vectorised row conversions of the matmul widening
 * path (rt_half_widen_row / rt_half_narrow_row) must give the scalar
 * functions' bits on every half and on floats of every kind. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "rt_internal.h"
#include "rt_test.h"
#include "tgcrt.h"

static float bits_f(uint32_t u) {
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static float next_up(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    return bits_f(u + 1); /* positive finite f only */
}

static float next_down(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    return bits_f(u - 1);
}

static uint32_t f_bits(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

/* Every half widened (rows of 65536 and of odd lengths, for the tails);
 * NaN only has to stay NaN: vcvtph2ps quiets a signalling NaN. */
static void test_widen_rows(bool f16) {
    enum { N = 65536 };
    uint16_t *h = malloc(2 * N);
    float *w = malloc(4 * (N + 8));
    for (int i = 0; i < N; i++)
        h[i] = (uint16_t)i;
    int bad = 0, lens[] = {N, 1, 7, 9, 15, 17};
    for (size_t l = 0; l < sizeof lens / sizeof lens[0]; l++) {
        int n = lens[l], off = l ? 12345 : 0;
        w[n] = 42.0f; /* past the row: must stay */
        if (!rt_half_widen_row(w, h + off, n, f16)) {
            printf("widen %s: no vector path on this CPU, not checked\n", f16 ? "f16" : "bf16");
            free(h), free(w);
            return;
        }
        for (int i = 0; i < n; i++) {
            float want = f16 ? rt_f16_to_f32(h[off + i]) : rt_bf16_to_f32(h[off + i]);
            bool ok = isnan(want) ? isnan(w[i]) : f_bits(w[i]) == f_bits(want);
            if (!ok && bad++ < 5)
                printf("widen %s 0x%04x: got 0x%08x, want 0x%08x\n", f16 ? "f16" : "bf16",
                       h[off + i], f_bits(w[i]), f_bits(want));
        }
        bad += w[n] != 42.0f;
    }
    CHECK_INT(0, bad);
    free(h), free(w);
}

/* Random bit patterns (every kind of float), the rounding midpoints of
 * each half and the specials, narrowed 8 at a time and one by one. */
static void test_narrow_rows(bool f16) {
    enum { N = 1 << 20 };
    float *f = malloc(4 * N);
    uint16_t *h = malloc(2 * (N + 8));
    uint32_t r = 12345;
    for (int i = 0; i < N; i++) {
        r = r * 1664525u + 1013904223u;
        f[i] = bits_f(r);
    }
    for (int i = 0; i < 65536 && 2 * i + 1 < N / 2; i++) { /* midpoints and their neighbours */
        uint32_t mid =
            f16 ? f_bits(rt_f16_to_f32((uint16_t)i)) + (1u << 12) : ((uint32_t)i << 16) | 0x8000u;
        f[N / 2 + 2 * i] = bits_f(mid);
        f[N / 2 + 2 * i + 1] = bits_f(mid + (i & 1 ? 1u : (uint32_t)-1));
    }
    const float special[] = {0.0f,     -0.0f,    INFINITY, -INFINITY,    NAN,     -NAN,  65504.0f,
                             65520.0f, 0x1p-25f, 0x1p-24f, 0x1.ffcp-15f, 3.4e38f, 1e-45f};
    for (size_t i = 0; i < sizeof special / sizeof special[0]; i++)
        f[i] = special[i];
    int bad = 0;
    h[N] = 0x1234;
    if (!rt_half_narrow_row(h, f, N, f16)) {
        printf("narrow %s: no vector path on this CPU, not checked\n", f16 ? "f16" : "bf16");
        free(f), free(h);
        return;
    }
    for (int i = 0; i < N; i++) {
        uint16_t want = f16 ? rt_f32_to_f16(f[i]) : rt_f32_to_bf16(f[i]);
        if (h[i] != want && bad++ < 5)
            printf("narrow %s 0x%08x: got 0x%04x, want 0x%04x\n", f16 ? "f16" : "bf16",
                   f_bits(f[i]), h[i], want);
    }
    bad += h[N] != 0x1234;
    CHECK_INT(0, bad);
    free(f), free(h);
}

int main(void) {
    test_widen_rows(false);
    test_widen_rows(true);
    test_narrow_rows(false);
    test_narrow_rows(true);
    /* Round trip of all 65536 halves; NaNs stay NaNs, quiet, sign kept. */
    int bad = 0, nans = 0;
    for (uint32_t h = 0; h < 65536; h++) {
        float f = rt_f16_to_f32((uint16_t)h);
        uint16_t r = rt_f32_to_f16(f);
        if (isnan(f)) {
            nans++;
            if ((r & 0x7c00u) != 0x7c00u || !(r & 0x0200u) || (r & 0x8000u) != (h & 0x8000u)) bad++;
        } else if (r != h) {
            if (bad < 5) printf("round trip 0x%04x -> %a -> 0x%04x\n", (unsigned)h, f, (unsigned)r);
            bad++;
        }
    }
    CHECK_INT(0, bad);
    CHECK_INT(2 * 1023, nans);

    /* Every boundary between adjacent finite halves, both signs: the
     * midpoint ties to the even one, the floats either side go to the
     * nearer one. Halves have 11-bit significands, so midpoints are exact
     * floats. */
    bad = 0;
    for (uint32_t h = 0; h < 0x7bff; h++) {
        for (uint32_t sign = 0; sign <= 0x8000u; sign += 0x8000u) {
            float lo = rt_f16_to_f32((uint16_t)h), hi = rt_f16_to_f32((uint16_t)(h + 1));
            float mid = (lo + hi) / 2;
            float s = sign ? -1.0f : 1.0f;
            uint16_t even = (uint16_t)((h & 1u) ? h + 1 : h);
            if (rt_f32_to_f16(s * mid) != (sign | even)) bad++;
            if (rt_f32_to_f16(s * next_down(mid)) != (sign | h)) bad++;
            if (rt_f32_to_f16(s * next_up(mid)) != (sign | (h + 1))) bad++;
        }
    }
    CHECK_INT(0, bad);

    /* Overflow: 65504 is the largest half; 65520 (the midpoint to 65536)
     * ties to even, which is infinity. */
    CHECK_INT(0x7bff, rt_f32_to_f16(65504.0f));
    CHECK_INT(0x7bff, rt_f32_to_f16(next_down(65520.0f)));
    CHECK_INT(0x7c00, rt_f32_to_f16(65520.0f));
    CHECK_INT(0xfc00, rt_f32_to_f16(-65520.0f));
    CHECK_INT(0x7c00, rt_f32_to_f16(1e30f));
    CHECK_INT(0x7c00, rt_f32_to_f16(INFINITY));
    CHECK_INT(0xfc00, rt_f32_to_f16(-INFINITY));
    /* Underflow: 2^-25 is the midpoint between 0 and the smallest
     * subnormal 2^-24 and ties to 0; anything above rounds up. */
    CHECK_INT(0x0000, rt_f32_to_f16(0x1p-25f));
    CHECK_INT(0x0001, rt_f32_to_f16(next_up(0x1p-25f)));
    CHECK_INT(0x8000, rt_f32_to_f16(-0x1p-25f));
    CHECK_INT(0x0001, rt_f32_to_f16(0x1p-24f));
    CHECK_INT(0x0000, rt_f32_to_f16(1e-30f));
    CHECK_INT(0x0000, rt_f32_to_f16(bits_f(1))); /* the smallest float subnormal */
    CHECK_INT(0x8000, rt_f32_to_f16(-0.0f));
    /* The largest subnormal half and the smallest normal. */
    CHECK_INT(0x03ff, rt_f32_to_f16(0x1.ff8p-15f));
    CHECK_INT(0x0400, rt_f32_to_f16(0x1p-14f));
    CHECK_INT(0x0400, rt_f32_to_f16(0x1.ffcp-15f)); /* the midpoint ties up to even 0x400 */
    CHECK_INT(0x3c00, rt_f32_to_f16(1.0f));
    CHECK_INT(0x3c00, rt_f32_to_f16(1.00048828125f)); /* 1 + 2^-11: tie to even */
    CHECK_INT(0x3c02, rt_f32_to_f16(1.00146484375f)); /* 1 + 3*2^-11: tie to even */
    CHECK_INT(0xc000, rt_f32_to_f16(-2.0f));
    /* NaN: the quiet NaN c10 gives, sign kept. */
    CHECK_INT(0x7e00, rt_f32_to_f16(NAN));
    CHECK_INT(0x7e00, rt_f32_to_f16(bits_f(0x7f800001u)));
    CHECK_INT(0xfe00, rt_f32_to_f16(bits_f(0xffc00000u)));
    return rt_test_report();
}
