/* The program's interface: which buffer slot each input, param and output
 * takes. Codegen addresses bufs[slot]; the glue fills the same order. */
#include "codegen/codegen.h"

#include <string.h>

#include "passes/pipeline.h"

void cg_program_plan(Arena *a, Graph *g, CgProgram *p) {
    cg_program_plan_target(a, g, p, false);
}

void cg_program_plan_target(Arena *a, Graph *g, CgProgram *p, bool cuda) {
    cg_program_plan_layout(a, g, p, cuda, true);
}

void cg_program_plan_layout(Arena *a, Graph *g, CgProgram *p, bool cuda, bool channels_last) {
    memset(p, 0, sizeof *p);
    p->g = g;
    /* Written-out attention becomes scaled_dot_product_attention where
     * the target's kernel saves memory (CPU: its scratch against the
     * scores; CUDA: none, wherever the flash kernel can run). */
    PipelinePlan pp;
    pipeline_plan(a, g, cuda ? cg_cuda_attention_scratch : rt_attention_scratch_bytes,
                  channels_last && !cuda, &pp);
    p->dt = pp.dt;
    p->kp = pp.kp;
    p->sched = pp.sched;
    p->plan = pp.mem;
    /* The target's own: the interface's slots and the scratch its
     * convolutions, attention and quantized products take at the arena's
     * tail. */
    cg_interface_init(a, p);
    cg_conv_plan(a, p, pp.mem, cuda);
    cg_attn_plan(p, pp.mem, cuda);
    cg_qmm_plan(p, pp.mem, cuda);
}

/* Whether a training step's update o may be written over its param's own
 * buffer: the kernel that writes o is elementwise and reads the param only
 * at o's index (same shape, dense), and no later kernel reads the param's
 * old value. Then the step needs no second copy of the param. */
static bool update_in_place(const CgProgram *p, const Value *o) {
    const Value *par = o->updates;
    const Schedule *s = p->sched;
    if (!s || o->storage != o || p->dt[o->order] != p->dt[par->order] ||
        !value_same_shape(o, par) || !layout_is_contiguous(o))
        return false;
    int w = -1;
    for (int k = 0; k < s->nsteps && w < 0; k++)
        for (int j = 0; j < s->steps[k].nwrites; j++)
            if (s->steps[k].writes[j] == o) w = k;
    if (w < 0 || !s->steps[w].elementwise || s->steps[w].nwrites != 1) return false;
    for (int k = w; k < s->nsteps; k++)
        for (int j = 0; j < s->steps[k].nreads; j++) {
            const Value *r = s->steps[k].reads[j];
            if (r->storage != par) continue;
            if (k > w || !value_same_shape(r, o) || r->offset || !layout_is_contiguous(r))
                return false;
        }
    return true;
}

void cg_interface_init(Arena *a, CgProgram *p) {
    const Graph *g = p->g;
    CgInterface *it = &p->iface;
    int nv = g->nvalues > 0 ? g->nvalues : 1;
    it->slot = ARENA_ARRAY(a, int, nv);
    for (int i = 0; i < g->nvalues; i++) {
        it->slot[i] = -1;
        it->ninputs += g->values[i]->op == OP_INPUT;
        it->nparams += g->values[i]->op == OP_PARAM;
    }
    it->inputs = ARENA_ARRAY(a, Value *, it->ninputs + 1);
    it->params = ARENA_ARRAY(a, Value *, it->nparams + 1);
    it->outputs = ARENA_ARRAY(a, Value *, g->noutputs + 1);
    int ni = 0, np = 0;
    for (int i = 0; i < g->nvalues; i++) {
        Value *v = g->values[i];
        if (v->op == OP_INPUT) it->inputs[ni++] = v;
        if (v->op == OP_PARAM) it->params[np++] = v;
    }
    for (int i = 0; i < ni; i++)
        it->slot[it->inputs[i]->order] = 1 + i;
    for (int i = 0; i < np; i++)
        it->slot[it->params[i]->order] = 1 + ni + i;
    it->noutputs = g->noutputs;
    for (int i = g->noutputs - 1; i >= 0; i--) {
        it->outputs[i] = g->outputs[i];
        Value *o = g->outputs[i];
        /* An output that owns its storage is written in place by its
         * kernel; the first declaration wins when one is output twice. */
        if (o->storage == o && o->op != OP_INPUT && o->op != OP_PARAM && o->op != OP_SCALAR)
            it->slot[o->order] = 1 + ni + np + i;
    }
    it->in_place = ARENA_ARRAY(a, bool, g->noutputs + 1);
    for (int i = 0; i < g->noutputs; i++)
        if (g->outputs[i]->updates && update_in_place(p, g->outputs[i])) {
            it->in_place[i] = true;
            it->slot[g->outputs[i]->order] = it->slot[g->outputs[i]->updates->order];
        }
    it->error_slot = 1 + ni + np + g->noutputs;
    it->conv_slot = -1;
    for (int i = 0; i < g->nvalues; i++)
        if ((op_info(g->values[i]->op)->flags & OPF_CONV) && !g->values[i]->dead)
            it->conv_slot = it->error_slot + 1;
    it->nslots = it->conv_slot > 0 ? it->conv_slot + 1 : it->error_slot + 1;
}
