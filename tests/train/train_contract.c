/* tgc compile --train's API on bad calls (run_state.py): the graph
 * state_api (an MLP under AdamW) as an object. NAME_create with a NULL out
 * is 7 (as rt_context_create), not a crash; get_param/set_param with an
 * index out of range are 7 with a message naming the index and the range;
 * set_param of an optimizer state checks its values as a state file's
 * are (9, nothing changed). Prints one line per check; exits 1 on any
 * failure. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "state_api.h"

static int fails;

static void check(int ok, const char *what, const char *detail) {
    printf("%s %s (%s)\n", ok ? "ok  " : "FAIL", what, detail ? detail : "");
    fails += !ok;
}

static int index_of(const char *name) {
    for (int i = 0; i < state_api_num_params(); i++)
        if (!strcmp(state_api_param_name(i), name)) return i;
    return -1;
}

int main(void) {
    check(state_api_create(NULL, NULL, 1) == 7, "create(NULL, ...) is 7", "");
    check(state_api_create_from_memory(NULL, NULL, 0, 1) == 7, "create_from_memory(NULL, ...) is 7",
          "");
    state_api_ctx *c = NULL;
    if (state_api_create(&c, NULL, 1)) {
        printf("FAIL create: %s\n", state_api_error(c));
        state_api_destroy(c);
        return 1;
    }
    char range[64];
    snprintf(range, sizeof range, "0..%d", state_api_num_params() - 1);
    float buf[64] = {0};
    const int bad[] = {state_api_num_params(), -1, 1000};
    for (int k = 0; k < 3; k++) {
        char idx[16], what[80];
        snprintf(idx, sizeof idx, "%d", bad[k]);
        snprintf(what, sizeof what, "get_param(%d) is 7 naming the index and %s", bad[k], range);
        int s = state_api_get_param(c, bad[k], buf);
        const char *e = state_api_error(c);
        check(s == 7 && strstr(e, idx) && strstr(e, range), what, e);
        snprintf(what, sizeof what, "set_param(%d) is 7 naming the index and %s", bad[k], range);
        s = state_api_set_param(c, bad[k], buf);
        e = state_api_error(c);
        check(s == 7 && strstr(e, idx) && strstr(e, range), what, e);
    }
    int s = state_api_get_param(c, 0, NULL);
    check(s == 7 && strstr(state_api_error(c), "NULL"), "get_param(0, NULL) is 7 naming NULL",
          state_api_error(c));

    int step = index_of("__step"), sq = index_of("w1.exp_avg_sq");
    check(step >= 0 && sq >= 0 && state_api_param_is_state(step), "__step and w1.exp_avg_sq", "");
    if (step < 0 || sq < 0) return 1;
    float v = NAN;
    s = state_api_set_param(c, step, &v);
    check(s == 9 && strstr(state_api_error(c), "__step"), "set_param(__step = nan) is 9",
          state_api_error(c));
    v = 4;
    check(state_api_set_param(c, step, &v) == 0, "set_param(__step = 4) is 0", state_api_error(c));
    for (int i = 0; i < 30; i++)
        buf[i] = 0.5f;
    buf[11] = -1;
    s = state_api_set_param(c, sq, buf);
    check(s == 9 && strstr(state_api_error(c), "w1.exp_avg_sq") &&
              strstr(state_api_error(c), "element 11"),
          "set_param(w1.exp_avg_sq with a -1) is 9 naming the element", state_api_error(c));
    buf[11] = 0.5f;
    check(state_api_set_param(c, sq, buf) == 0, "set_param(w1.exp_avg_sq >= 0) is 0",
          state_api_error(c));

    float x[8 * 6], onehot[8 * 3] = {0};
    for (int i = 0; i < 8 * 6; i++)
        x[i] = (float)((i * 7) % 11) / 11.0f - 0.5f;
    for (int i = 0; i < 8; i++)
        onehot[i * 3 + i % 3] = 1;
    const void *in[2] = {x, onehot};
    double loss = 0;
    s = state_api_train_step(c, in, &loss);
    float got = 0;
    state_api_get_param(c, step, &got);
    char d[64];
    snprintf(d, sizeof d, "status %d, __step %g", s, got);
    check(s == 0 && got == 5, "a step after the checks runs from __step 4", d);
    state_api_destroy(c);
    return fails ? 1 : 0;
}
