/* The profiler's side that contexts use (profile.c; program.c calls it
 * around each forward). Internal to the runtime. */
#ifndef TGCRT_PROFILE_INTERNAL_H
#define TGCRT_PROFILE_INTERNAL_H
#include "tgcrt.h"

RtProfile *rt_prof_new(int nsteps); /* NULL when out of memory */
void rt_prof_free(RtProfile *p);    /* NULL is fine */
/* Around one forward: a row for its marks (a run that finds no room, or
 * that misses a mark, is not kept). */
void rt_prof_run_begin(RtProfile *p);
void rt_prof_run_end(RtProfile *p);
/* Names convolution i's implementation (a copy is kept). */
void rt_prof_set_conv_impl(RtProfile *p, int i, const char *name);
#endif
