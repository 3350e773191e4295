/* States (graph-language "State"): params declared `state`, which a
 * context keeps between runs and slice_scatter updates in place. */
#ifndef TGC_IR_STATE_H
#define TGC_IR_STATE_H
#include "ir/ir.h"

/* A param declared `state`. */
bool ir_is_state(const Value *v);
/* A slice_scatter whose input is a state: it writes the state's storage
 * in place, and its result is a view of that storage. */
bool ir_is_state_update(const Value *v);
/* Every state's readers: an updated state may have no reader but its one
 * update (its other readers read the update's result). Reports each
 * violation at the extra reader, with a note at the update; false when
 * any. */
bool ir_check_states(const Graph *g, Diag *d);
#endif
