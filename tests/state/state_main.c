/* Drives kv.h (tests/state/run_state.py writes the graph): a state kept
 * between runs and written in place by slice_scatter at a run-time position.
 *
 *   input x : f32[1, 1, W], input pos : i64[], state cache : f32[1, S, W]
 *   c2 = slice_scatter(cache, x * 2, dim=1, start=pos); output y = c2.sum(dim=1)
 *   state seen : f32[1, S, W]; unread = slice_scatter(seen, x, dim=1, start=pos)
 * (unread: an update no output reads still runs; the next run reads it).
 *
 * Runs at positions 0, 1, 2 with x = 10 * (pos + 1) + j, and checks after
 * each run y (the rows written so far, summed) and the state read back
 * (rows written: 2 * x, the others 0), computed here from the inputs
 * chosen; then reset_state: the state reads zeros and the next run's y
 * sees only its own row; then an out-of-range position: the run fails,
 * naming the start and the valid range, and the state is unchanged.
 * Prints "state_main: ok" or the first difference, exit 1. */
#include <stdio.h>
#include <string.h>

#include "kv.h"

enum { S = 4, W = 8 };

static int fails;

static void check(int ok, const char *what, int pos) {
    if (!ok) {
        printf("state_main: FAIL: %s (pos %d)\n", what, pos);
        fails++;
    }
}

/* expect[r][j]: cache's rows as the runs wrote them; `seen` holds half
 * of each (x itself). */
static void check_state(kv_ctx *c, float expect[S][W], int pos) {
    static const char *names[2] = {"cache", "seen"};
    for (int k = 0; k < 2; k++) {
        float got[S * W];
        memset(got, 0xff, sizeof got);
        check(kv_get_state(c, names[k], got) == 0, "get_state returns 0", pos);
        for (int r = 0; r < S; r++)
            for (int j = 0; j < W; j++) {
                float want = k ? expect[r][j] / 2 : expect[r][j];
                if (got[r * W + j] != want) {
                    printf("state_main: %s[0][%d][%d] = %g, expected %g\n", names[k], r, j,
                           got[r * W + j], want);
                    check(0, "the state holds the writes", pos);
                    return;
                }
            }
    }
}

static void run_at(kv_ctx *c, int64_t pos, float expect[S][W]) {
    float x[W], y[W];
    for (int j = 0; j < W; j++)
        x[j] = (float)(10 * (pos + 1) + j);
    check(kv_run(c, x, &pos, y) == 0, "run returns 0", (int)pos);
    for (int j = 0; j < W; j++)
        expect[pos][j] = 2 * x[j];
    for (int j = 0; j < W; j++) {
        float sum = 0;
        for (int r = 0; r < S; r++)
            sum += expect[r][j];
        if (y[j] != sum) {
            printf("state_main: y[0][%d] = %g, expected %g\n", j, y[j], sum);
            check(0, "y sums the rows written so far", (int)pos);
            break;
        }
    }
    check_state(c, expect, (int)pos);
}

int main(void) {
    kv_ctx *c = NULL;
    if (kv_create(&c, NULL, 1)) {
        printf("state_main: FAIL: create: %s\n", c ? kv_error(c) : "out of memory");
        kv_destroy(c);
        return 1;
    }
    float expect[S][W];
    memset(expect, 0, sizeof expect);
    check_state(c, expect, -1); /* zero when created */
    for (int pos = 0; pos < 3; pos++)
        run_at(c, pos, expect);

    check(kv_reset_state(c) == 0, "reset_state returns 0", -1);
    memset(expect, 0, sizeof expect);
    check_state(c, expect, -1);
    run_at(c, 3, expect); /* only row 3 now */

    float x[W] = {0}, y[W];
    int64_t bad = S; /* one row at S: past the end */
    check(kv_run(c, x, &bad, y) != 0, "an out-of-range start fails", (int)bad);
    const char *msg = kv_error(c);
    check(strstr(msg, "start 4 of 'pos'") && strstr(msg, "expected 0 to 3"),
          "the message names the start and the range", (int)bad);
    printf("state_main: out of range: %s\n", msg);
    check_state(c, expect, (int)bad); /* nothing written */

    float got[S * W];
    check(kv_get_state(c, "nope", got) != 0, "get_state of an unknown name fails", -1);
    kv_destroy(c);
    if (fails) return 1;
    printf("state_main: ok\n");
    return 0;
}
