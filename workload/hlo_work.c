/* workload/hlo_work.c -- the vector work of a loop fusion from its HLO
 * instructions (workload/hlo_work.h). Counts per element follow the named
 * XLA forms' (kernels/xla.c): an arithmetic, compare, select, logic or
 * convert op is 1 ALU op; exp and log are 1 ALU (the log2(e) scale around
 * the EUP's exp2/log2) and 1 transcendental; a divide a reciprocal (1 EUP)
 * and a multiply; rsqrt, sqrt and tanh 1 EUP; logistic -x, exp, +1, 1/x
 * (3 ALU, 2 EUP). With no EUP form on TPU, sine and cosine are a range
 * reduction and a polynomial (8 ALU, an estimate); power, cbrt are log, a
 * multiply, exp; erf and atan2 a polynomial and one reciprocal (estimates).
 * A reduce counts its reducer's ops per element it reads (an add: 1); data
 * movement (broadcast, reshape, transpose, slices, concatenate, pad, iota,
 * gathers) counts nothing: its cost is its bytes. */
#include "workload/hlo_work.h"

#include "workload/hlo_int.h"

#define HLO_WORK_DEPTH 8 /* nested fusions and reducers followed */

void hlo_work_per_elem(int opcode, double *alu, double *eup)
{
    double a = 0, e = 0;
    switch (opcode) {
    case HLO_OP_ADD:
    case HLO_OP_SUBTRACT:
    case HLO_OP_MULTIPLY:
    case HLO_OP_MAXIMUM:
    case HLO_OP_MINIMUM:
    case HLO_OP_NEGATE:
    case HLO_OP_ABS:
    case HLO_OP_COMPARE:
    case HLO_OP_SELECT:
    case HLO_OP_AND:
    case HLO_OP_OR:
    case HLO_OP_XOR:
    case HLO_OP_NOT:
    case HLO_OP_SHL:
    case HLO_OP_SHRA:
    case HLO_OP_SHRL:
    case HLO_OP_SIGN:
    case HLO_OP_FLOOR:
    case HLO_OP_CEIL:
    case HLO_OP_ROUND_AFZ:
    case HLO_OP_ROUND_EVEN:
    case HLO_OP_CONVERT:
    case HLO_OP_IS_FINITE:
    case HLO_OP_POPCNT:
    case HLO_OP_CLZ:
    case HLO_OP_REAL:
    case HLO_OP_IMAG:
        a = 1;
        break;
    case HLO_OP_CLAMP:
    case HLO_OP_REDUCE_PRECISION:
    case HLO_OP_STOCHASTIC_CONVERT:
        a = 2;
        break;
    case HLO_OP_EXP:
    case HLO_OP_LOG:
    case HLO_OP_DIVIDE:
        a = 1, e = 1;
        break;
    case HLO_OP_EXPM1:
    case HLO_OP_LOG1P:
        a = 2, e = 1;
        break;
    case HLO_OP_TANH:
    case HLO_OP_RSQRT:
    case HLO_OP_SQRT:
        e = 1;
        break;
    case HLO_OP_LOGISTIC:
        a = 3, e = 2;
        break;
    case HLO_OP_REMAINDER:
        a = 3, e = 1;
        break;
    case HLO_OP_POWER:
    case HLO_OP_CBRT:
        a = 3, e = 2;
        break;
    case HLO_OP_SINE:
    case HLO_OP_COSINE:
        a = 8;
        break;
    case HLO_OP_TAN:
        a = 17, e = 1;
        break;
    case HLO_OP_ERF:
    case HLO_OP_ATAN2:
        a = 10, e = 1;
        break;
    default: /* data movement, and what is no loop */
        break;
    }
    *alu = a, *eup = e;
}

/* The reducer of 'in' (to_apply) per element it reads. */
static void reducer(const struct hlo_module *m, const struct hlo_instr *in, int depth,
                    struct hlo_work *per)
{
    const struct hlo_attr *a = hlo_attr(in, "to_apply");
    int ci = a && m ? hlo_find_comp(m, a->value) : -1;
    if (ci < 0 || depth >= HLO_WORK_DEPTH)
        return;
    const struct hlo_comp *r = &m->comp[ci];
    for (int i = 0; i < r->nins; i++) { /* scalars: one each per element read */
        double al, eu;
        hlo_work_per_elem(r->ins[i].opcode, &al, &eu);
        per->alu += al, per->eup += eu;
    }
}

static void comp_work(const struct hlo_module *m, int ci, int depth, struct hlo_work *w);

static void instr_work(const struct hlo_module *m, const struct hlo_comp *c,
                       const struct hlo_instr *in, int depth, struct hlo_work *w)
{
    if (in->shape.type == HLO_TUPLE && in->opcode != HLO_OP_REDUCE &&
        in->opcode != HLO_OP_FUSION)
        return;
    if (in->opcode == HLO_OP_FUSION) {
        const struct hlo_attr *a = hlo_attr(in, "calls");
        int ci = a && m ? hlo_find_comp(m, a->value) : -1;
        if (ci >= 0 && depth < HLO_WORK_DEPTH)
            comp_work(m, ci, depth + 1, w);
        return;
    }
    if (in->opcode == HLO_OP_REDUCE || in->opcode == HLO_OP_MAP) {
        if (in->nops < 1 || in->operand[0] < 0 || in->operand[0] >= c->nins)
            return;
        double n = (double)hlo_shape_elems(&c->ins[in->operand[0]].shape);
        struct hlo_work per = {0, 0};
        reducer(m, in, depth, &per);
        if (n > 1)
            w->alu += per.alu * n, w->eup += per.eup * n;
        return;
    }
    double al, eu, n = (double)hlo_shape_elems(&in->shape);
    hlo_work_per_elem(in->opcode, &al, &eu);
    if (n > 1)
        w->alu += al * n, w->eup += eu * n;
}

static void comp_work(const struct hlo_module *m, int ci, int depth, struct hlo_work *w)
{
    const struct hlo_comp *c = &m->comp[ci];
    for (int i = 0; i < c->nins; i++)
        instr_work(m, c, &c->ins[i], depth, w);
}

void hlo_work_instr(const struct hlo_module *m, const struct hlo_comp *c,
                    const struct hlo_instr *in, struct hlo_work *w)
{
    instr_work(m, c, in, 0, w);
}

void hlo_work_comp(const struct hlo_module *m, int ci, struct hlo_work *w)
{
    if (ci >= 0 && ci < m->ncomp)
        comp_work(m, ci, 0, w);
}

void hlo_work_fused(const struct hlo_module *m, const struct hlo_comp *c, int i,
                    const bool *fused, int *mark, int *stack, struct hlo_work *w)
{
    int n = 0;
    mark[i] = i + 1;
    stack[n++] = i;
    while (n > 0) { /* each instruction of the fusion once, however often it is read */
        const struct hlo_instr *in = &c->ins[stack[--n]];
        instr_work(m, c, in, 0, w);
        for (int k = 0; fused && k < in->nops; k++) {
            int o = in->operand[k];
            if (o >= 0 && o < c->nins && fused[o] && mark[o] != i + 1) {
                mark[o] = i + 1;
                stack[n++] = o;
            }
        }
    }
}
