/* Instantiates the operation table from ops.def and parses its signature
 * strings into parameter specs once, at start-up. */
#include <stdlib.h>
#include <string.h>

#include "ir/infer.h"
#include "ir/vjp.h"

OpInfo op_table[OP_COUNT] = {
#define OP(id, nm, sg, fl, inf, lay, vj)                                                           \
    [OP_##id] = {.name = nm, .sig = sg, .flags = fl, .infer = inf, .layout = lay, .vjp = vj},
#include "ir/ops.def"
#undef OP
};

static ParamType parse_type(const char *s, size_t n) {
    static const struct {
        const char *name;
        ParamType t;
    } types[] = {{"T", PT_TENSOR}, {"int", PT_INT},     {"num", PT_NUM},   {"bool", PT_BOOL},
                 {"str", PT_STR},  {"dtype", PT_DTYPE}, {"ints", PT_INTS}, {"tensors", PT_TENSORS},
                 {"any", PT_ANY},  {"pad", PT_PAD}};
    for (size_t i = 0; i < sizeof types / sizeof *types; i++)
        if (strlen(types[i].name) == n && !strncmp(types[i].name, s, n)) return types[i].t;
    tgc_internal_error(__FILE__, __LINE__, "bad type in ops.def signature");
}

/* "input:T, dim:int?=None, *shape:ints" -> ParamSpec[] */
static void parse_signature(OpInfo *info) {
    const char *s = info->sig;
    info->nparams = 0;
    while (*s) {
        while (*s == ' ' || *s == ',')
            s++;
        if (!*s) break;
        TGC_ASSERT(info->nparams < (int)(sizeof info->params / sizeof info->params[0]));
        ParamSpec *p = &info->params[info->nparams++];
        if (*s == '*') {
            p->variadic = true;
            s++;
        }
        const char *colon = strchr(s, ':');
        TGC_ASSERT(colon);
        p->name = strndup(s, (size_t)(colon - s));
        s = colon + 1;
        const char *t = s;
        while (*s && *s != '?' && *s != '=' && *s != ',')
            s++;
        p->type = parse_type(t, (size_t)(s - t));
        if (*s == '?') {
            p->optional = true;
            s++;
        }
        if (*s == '=') {
            s++;
            const char *d = s;
            int depth = 0;
            while (*s && (depth || *s != ',')) {
                if (*s == '[') depth++;
                if (*s == ']') depth--;
                s++;
            }
            p->has_default = true;
            p->default_text = strndup(d, (size_t)(s - d));
        }
    }
}

void ops_init(void) {
    static bool done;
    if (done) return;
    done = true;
    for (int i = 0; i < OP_COUNT; i++)
        parse_signature(&op_table[i]);
}

const OpInfo *op_info(OpCode op) {
    return &op_table[op];
}

OpCode op_lookup(const char *name) {
    for (int i = 0; i < OP_COUNT; i++)
        if (!(op_table[i].flags & OPF_INTERNAL) && !strcmp(op_table[i].name, name))
            return (OpCode)i;
    return OP_COUNT;
}

const char *op_display_name(const Value *v) {
    return v->label ? v->label : op_table[v->op].name;
}
