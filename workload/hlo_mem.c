/* workload/hlo_mem.c -- an HLO program's peak memory per device: the
 * entry's parameters, and the buffers live at once as the instructions run
 * in the module's order (each from the instruction that makes it to its
 * last reader; the outputs to the end). Aliases make no buffer: a bitcast,
 * a tuple, a get-tuple-element, a *-done, a while (its carried tuple is its
 * operand's) keep their operands' alive as long as they are read. A
 * fusion's body stays in its fusion (on chip); a while's body, a call's, a
 * conditional's costliest branch and an async computation add their own
 * peak while they run. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/xalloc.h"
#include "workload/hlo.h"
#include "workload/hlo_fuse.h"
#include "workload/hlo_int.h"

#define MEM_MAX_DEPTH 64

struct memx {
    const struct hlo_module *m;
    double *peak; /* per computation: its peak beyond its parameters; < 0: not known yet */
    bool *active;
    int depth;
    bool unfused; /* dumped before XLA's fusion: fused instructions make no buffer */
};

static bool aliases(const struct hlo_instr *in)
{
    enum hlo_class c = hlo_class_of(in->opcode);
    return c == HLO_C_FREE || c == HLO_C_DONE || c == HLO_C_PARAM || c == HLO_C_WHILE;
}

/* The bytes instruction 'in' makes: a start's tuple holds its operand and
 * its result (the result is new), an async-start's ((operands), result,
 * context), a copy-start's (destination, source, context). */
static double made_bytes(const struct hlo_instr *in)
{
    const struct hlo_shape *s = &in->shape;
    if (aliases(in))
        return 0;
    if (s->type == HLO_TUPLE && s->nelem > 1) {
        if (in->opcode == HLO_OP_ASYNC_START)
            return hlo_shape_bytes(&s->elem[1]);
        if (in->opcode == HLO_OP_COPY_START)
            return hlo_shape_bytes(&s->elem[0]);
        if (hlo_class_of(in->opcode) == HLO_C_START)
            return hlo_shape_bytes(&s->elem[s->nelem - 1]);
    }
    return hlo_shape_bytes(s);
}

static double comp_peak(struct memx *x, int ci, int *at);

static double called_peak(struct memx *x, const struct hlo_instr *in, const char *key)
{
    const struct hlo_attr *a = hlo_attr(in, key);
    int ci = a ? hlo_find_comp(x->m, a->value) : -1;
    return ci >= 0 ? comp_peak(x, ci, NULL) : 0;
}

/* What 'in' holds beyond its result while it runs: the peak of the code it runs. */
static double nested_peak(struct memx *x, const struct hlo_instr *in)
{
    switch (in->opcode) {
    case HLO_OP_WHILE:
        return called_peak(x, in, "body");
    case HLO_OP_CALL:
        return called_peak(x, in, "to_apply");
    case HLO_OP_ASYNC_START:
        return called_peak(x, in, "calls");
    case HLO_OP_CONDITIONAL: {
        const struct hlo_attr *a = hlo_attr(in, "branch_computations");
        double best = 0;
        for (const char *s = a ? a->value : ""; *s;) { /* {%b0, %b1, ...} */
            s += strspn(s, "{}, %");
            size_t len = strcspn(s, "{}, ");
            char name[256];
            snprintf(name, sizeof name, "%.*s", (int)(len < 255 ? len : 255), s);
            int ci = len ? hlo_find_comp(x->m, name) : -1;
            double p = ci >= 0 ? comp_peak(x, ci, NULL) : 0;
            best = p > best ? p : best;
            s += len;
        }
        const char *keys[2] = {"true_computation", "false_computation"};
        for (int k = 0; k < 2; k++) {
            double p = called_peak(x, in, keys[k]);
            best = p > best ? p : best;
        }
        return best;
    }
    default:
        return 0;
    }
}

/* Computation 'ci''s peak of live bytes beyond its parameters; '*at' (when
 * not NULL) the instruction it is reached at. */
static double comp_peak(struct memx *x, int ci, int *at)
{
    if (at == NULL && x->peak[ci] >= 0)
        return x->peak[ci];
    if (x->active[ci] || x->depth >= MEM_MAX_DEPTH)
        return 0; /* the lowering refuses cycles */
    const struct hlo_comp *c = &x->m->comp[ci];
    int n = c->nins;
    int *last = xcalloc((size_t)n + 1, sizeof *last);
    double *free_at = xcalloc((size_t)n + 1, sizeof *free_at);
    for (int i = 0; i < n; i++) {
        last[i] = i; /* a value no one reads dies once made */
        for (int k = 0; k < c->ins[i].nops; k++)
            if (c->ins[i].operand[k] < i && last[c->ins[i].operand[k]] < i)
                last[c->ins[i].operand[k]] = i;
    }
    if (n)
        last[c->root] = n; /* the result lives to the end */
    struct hlo_fuse fz;
    hlo_fuse_plan(c, x->unfused, &fz);
    for (int i = n - 1; i >= 0; i--) /* reading an alias reads what it aliases */
        if (aliases(&c->ins[i]) || fz.fused[i])
            for (int k = 0; k < c->ins[i].nops; k++)
                if (c->ins[i].operand[k] < i && last[c->ins[i].operand[k]] < last[i])
                    last[c->ins[i].operand[k]] = last[i];
    x->active[ci] = true;
    x->depth++;
    double live = 0, peak = 0;
    int where = n ? c->root : 0;
    for (int i = 0; i < n; i++) {
        double made = fz.fused[i] ? 0 : made_bytes(&c->ins[i]);
        double during = live + made + nested_peak(x, &c->ins[i]);
        if (during > peak)
            peak = during, where = i;
        live += made;
        free_at[last[i]] += made;
        live -= free_at[i];
    }
    x->depth--;
    x->active[ci] = false;
    free(last);
    free(free_at);
    hlo_fuse_free(&fz);
    x->peak[ci] = peak;
    if (at)
        *at = where;
    return peak;
}

void hlo_memory(const struct hlo_module *m, struct hlo_report *rep)
{
    struct memx x = {.m = m, .peak = xcalloc((size_t)m->ncomp + 1, sizeof *x.peak),
                     .active = xcalloc((size_t)m->ncomp + 1, sizeof *x.active),
                     .unfused = hlo_unfused(m)};
    for (int i = 0; i < m->ncomp; i++)
        x.peak[i] = -1;
    const struct hlo_comp *e = &m->comp[m->entry];
    rep->parameter_bytes = 0;
    for (int i = 0; i < e->nins; i++)
        if (e->ins[i].opcode == HLO_OP_PARAMETER)
            rep->parameter_bytes += hlo_shape_bytes(&e->ins[i].shape);
    int at = 0;
    rep->temp_peak_bytes = comp_peak(&x, m->entry, &at);
    rep->peak_bytes = rep->parameter_bytes + rep->temp_peak_bytes;
    rep->peak_at = e->nins ? &e->ins[at] : NULL;
    free(x.peak);
    free(x.active);
}
