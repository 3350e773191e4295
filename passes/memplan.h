/* The arena planner: every intermediate buffer gets an offset in one arena.
 * Code generation allocates the arena once and addresses each intermediate
 * at its planned offset; the report prints the same plan. One plan, one
 * source of truth.
 *
 * Requires: a Schedule (passes/schedule.h) with live ranges.
 * Gives: a MemPlan: per buffer its offset (64-byte aligned) and the buffer
 * whose slot it reuses in place, the arena size, the lower bound (the
 * largest sum of slot sizes live at one step: no plan for this schedule can
 * use less), the unplanned sum, and the bytes live at every step.
 *
 * Method: in-place reuse first (an elementwise kernel writes its output
 * over an operand that dies at that kernel, has the same size and layout,
 * and is read by no view there), which joins the two buffers into one slot;
 * then offsets by greedy-by-size (Pisarchyk & Lee, "Efficient Memory
 * Management for Deep Neural Net Inference", 2020): slots in decreasing
 * size, each put in the smallest gap between already-placed slots whose
 * lifetimes overlap it, or above them all. Other orders are tried too (by
 * the live total during a slot's lifetime, "breadth", and sizes perturbed
 * at random with a fixed seed, as many as a work budget allows) and the
 * smallest arena is kept. */
#ifndef TGC_MEMPLAN_H
#define TGC_MEMPLAN_H
#include <stddef.h>

#include "passes/schedule.h"

#define MEMPLAN_ALIGN 64

typedef struct MemPlan {
    int nbufs, nsteps;
    int64_t *offset;     /* by buffer: bytes from the arena's start; -1 outside the arena */
    int64_t *size;       /* by buffer: the slot size (bytes rounded up to 64); 0 outside */
    int *inplace_of;     /* by buffer: the buffer whose slot it takes over in place, or -1 */
    int *slot;           /* by buffer: slot id (buffers sharing in place share it); -1 outside */
    int64_t *step_live;  /* by step: slot bytes live during that step */
    int64_t arena_bytes; /* max over slots of offset + size: a multiple of 64 */
    int64_t lower_bound_bytes; /* max over steps of step_live */
    int64_t unplanned_bytes;   /* every intermediate once, rounded to 64 */
    int peak_step;             /* the first step whose step_live is the lower bound; -1 when none */
    int ninplace;
    const char *strategy; /* which order produced the kept plan */
} MemPlan;

MemPlan *memplan_plan(Arena *a, const Schedule *s);

/* Checks the plan's invariants: every slot inside the arena and aligned, no
 * two buffers live at one step overlap unless one takes the other's slot in
 * place, arena >= lower bound. Returns true, or false with a reason in why. */
bool memplan_verify(const MemPlan *p, const Schedule *s, char *why, size_t nwhy);

int64_t memplan_align(int64_t bytes);
#endif
