/* rt_f32_to_f16: every half round-trips through rt_f16_to_f32; every
 * rounding boundary between two adjacent halves (the midpoint and the
 * floats either side of it) rounds to nearest even; overflow, underflow,
 * signed zeros and NaNs. run_runtime.py also compares it with torch on
 * random floats. */
#include <math.h>
#include <stdint.h>

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

int main(void) {
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
