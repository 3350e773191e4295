/* `tgc report --accuracy N`: a policy's measured error against f32.
 *
 * Builds the graph twice with this very tgc (--precision f32, and the
 * policy), runs both on the same N random inputs (--random-inputs 0..N-1:
 * floats standard normal) and compares every output. */
#ifndef TGC_ACCURACY_H
#define TGC_ACCURACY_H
#include <stdbool.h>

#include "driver/driver.h"

typedef struct AccOutput {
    const char *name;
    double max_abs; /* max |policy - f32| over all runs and elements */
    double max_rel; /* max_abs / max |f32| (normwise, so zeros do not divide) */
    bool nonfinite; /* the policy gave inf/NaN where f32 was finite */
} AccOutput;

typedef struct Accuracy {
    AccOutput *out; /* one per graph output */
    int nout;
    double max_abs, max_rel; /* over every output */
} Accuracy;

typedef struct AccSession {
    char dir[4096];      /* scratch directory */
    int dir_slot;        /* its rt_tmp registry slot */
    char wpath[4200];    /* synthesized weights */
    const Options *o;    /* the graph file and -D values */
    const char *weights; /* the user's, or a synthesized file in dir */
    bool synthesized;    /* weights made up: uniform(+-1/sqrt(fan_in)) */
    bool ref_built;
    int runs;
} AccSession;

/* Prepares dir and the weights; false with a message on error. */
bool accuracy_begin(AccSession *s, const Options *o, const Graph *declared, const char *weights,
                    int runs);
/* Measures pol against f32 (built once per session); false with a message. */
bool accuracy_measure(AccSession *s, const PrecisionPolicy *pol, const Graph *g, Accuracy *acc);
/* Removes dir. */
void accuracy_end(AccSession *s);
#endif
