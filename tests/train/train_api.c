/* tgc compile --train from C: examples/linear_regression.tg as an object,
 * trained through the header's API on y = 2x + 1 (x = i / 100), then its
 * params read back. Prints "w W b B loss L params N states S". */
#include <stdio.h>
#include <string.h>

#include "linear_regression.h"

int main(void) {
    linear_regression_ctx *c = NULL;
    if (linear_regression_create(&c, NULL, 1)) {
        fprintf(stderr, "create: %s\n", linear_regression_error(c));
        linear_regression_destroy(c);
        return 1;
    }
    float x[100], y[100];
    for (int i = 0; i < 100; i++) {
        x[i] = (float)i / 100.0f;
        y[i] = 2.0f * x[i] + 1.0f;
    }
    const void *in[2] = {x, y};
    double loss = 0;
    for (int s = 0; s < 500; s++)
        if (linear_regression_train_step(c, in, &loss)) {
            fprintf(stderr, "step %d: %s\n", s + 1, linear_regression_error(c));
            linear_regression_destroy(c);
            return 1;
        }
    float w = 0, b = 0;
    int states = 0;
    for (int i = 0; i < linear_regression_num_params(); i++) {
        const char *n = linear_regression_param_name(i);
        states += linear_regression_param_is_state(i);
        if (!strcmp(n, "w") && linear_regression_get_param(c, i, &w)) return 1;
        if (!strcmp(n, "b") && linear_regression_get_param(c, i, &b)) return 1;
    }
    printf("w %.9g b %.9g loss %.9g params %d states %d\n", w, b, loss,
           linear_regression_num_params(), states);
    linear_regression_destroy(c);
    return 0;
}
