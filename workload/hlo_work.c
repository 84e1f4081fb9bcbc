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

/* One row per opcode that does vector work or that XLA's fusion treats
 * apart: {ALU ops, transcendentals} per element, and its fusion role (an
 * opcode without a row: data movement, no work, fused by its class). */
static const struct hlo_op_traits op_traits[HLO_OP_COUNT] = {
    [HLO_OP_ABS] = {1, 0, HLO_FUSE_CHEAP},
    [HLO_OP_ADD] = {1, 0, HLO_FUSE_CHEAP},
    [HLO_OP_AND] = {1, 0, HLO_FUSE_CHEAP},
    [HLO_OP_ATAN2] = {10, 1, 0},
    [HLO_OP_BATCH_NORM_GRAD] = {0, 0, HLO_FUSE_END},
    [HLO_OP_BATCH_NORM_INFERENCE] = {0, 0, HLO_FUSE_END},
    [HLO_OP_BATCH_NORM_TRAINING] = {0, 0, HLO_FUSE_END},
    [HLO_OP_BITCAST_CONVERT] = {0, 0, HLO_FUSE_CHEAP},
    [HLO_OP_BROADCAST] = {0, 0, HLO_FUSE_CHEAP},
    [HLO_OP_CBRT] = {3, 2, 0},
    [HLO_OP_CEIL] = {1, 0, 0},
    [HLO_OP_CHOLESKY] = {0, 0, HLO_FUSE_END},
    [HLO_OP_CLAMP] = {2, 0, HLO_FUSE_CHEAP},
    [HLO_OP_CLZ] = {1, 0, 0},
    [HLO_OP_COMPARE] = {1, 0, HLO_FUSE_CHEAP},
    [HLO_OP_CONVERT] = {1, 0, HLO_FUSE_CHEAP},
    [HLO_OP_COPY] = {0, 0, HLO_FUSE_CHEAP},
    [HLO_OP_COPY_START] = {0, 0, HLO_FUSE_END},
    [HLO_OP_COSINE] = {8, 0, 0},
    [HLO_OP_DIVIDE] = {1, 1, 0},
    [HLO_OP_ERF] = {10, 1, 0},
    [HLO_OP_EXP] = {1, 1, 0},
    [HLO_OP_EXPM1] = {2, 1, 0},
    [HLO_OP_FFT] = {0, 0, HLO_FUSE_END},
    [HLO_OP_FLOOR] = {1, 0, 0},
    [HLO_OP_IMAG] = {1, 0, 0},
    [HLO_OP_IOTA] = {0, 0, HLO_FUSE_CHEAP},
    [HLO_OP_IS_FINITE] = {1, 0, 0},
    [HLO_OP_LOG] = {1, 1, 0},
    [HLO_OP_LOG1P] = {2, 1, 0},
    [HLO_OP_LOGISTIC] = {3, 2, 0},
    [HLO_OP_MAP] = {0, 0, HLO_FUSE_END},
    [HLO_OP_MAXIMUM] = {1, 0, HLO_FUSE_CHEAP},
    [HLO_OP_MINIMUM] = {1, 0, HLO_FUSE_CHEAP},
    [HLO_OP_MULTIPLY] = {1, 0, HLO_FUSE_CHEAP},
    [HLO_OP_NEGATE] = {1, 0, HLO_FUSE_CHEAP},
    [HLO_OP_NOT] = {1, 0, HLO_FUSE_CHEAP},
    [HLO_OP_OR] = {1, 0, HLO_FUSE_CHEAP},
    [HLO_OP_POPCNT] = {1, 0, 0},
    [HLO_OP_POWER] = {3, 2, 0},
    [HLO_OP_REAL] = {1, 0, 0},
    [HLO_OP_REDUCE] = {0, 0, HLO_FUSE_END},
    [HLO_OP_REDUCE_PRECISION] = {2, 0, 0},
    [HLO_OP_REDUCE_WINDOW] = {0, 0, HLO_FUSE_END},
    [HLO_OP_REMAINDER] = {3, 1, 0},
    [HLO_OP_RESHAPE] = {0, 0, HLO_FUSE_CHEAP},
    [HLO_OP_RNG] = {0, 0, HLO_FUSE_END},
    [HLO_OP_RNG_BIT_GENERATOR] = {0, 0, HLO_FUSE_END},
    [HLO_OP_ROUND_AFZ] = {1, 0, 0},
    [HLO_OP_ROUND_EVEN] = {1, 0, 0},
    [HLO_OP_RSQRT] = {0, 1, 0},
    [HLO_OP_SELECT] = {1, 0, HLO_FUSE_CHEAP},
    [HLO_OP_SELECT_AND_SCATTER] = {0, 0, HLO_FUSE_END},
    [HLO_OP_SHL] = {1, 0, 0},
    [HLO_OP_SHRA] = {1, 0, 0},
    [HLO_OP_SHRL] = {1, 0, 0},
    [HLO_OP_SIGN] = {1, 0, 0},
    [HLO_OP_SINE] = {8, 0, 0},
    [HLO_OP_SLICE] = {0, 0, HLO_FUSE_CHEAP},
    [HLO_OP_SORT] = {0, 0, HLO_FUSE_END},
    [HLO_OP_SQRT] = {0, 1, 0},
    [HLO_OP_STOCHASTIC_CONVERT] = {2, 0, 0},
    [HLO_OP_SUBTRACT] = {1, 0, HLO_FUSE_CHEAP},
    [HLO_OP_TAN] = {17, 1, 0},
    [HLO_OP_TANH] = {0, 1, 0},
    [HLO_OP_TOPK] = {0, 0, HLO_FUSE_END},
    [HLO_OP_TRANSPOSE] = {0, 0, HLO_FUSE_CHEAP},
    [HLO_OP_TRIANGULAR_SOLVE] = {0, 0, HLO_FUSE_END},
    [HLO_OP_XOR] = {1, 0, HLO_FUSE_CHEAP},
};

const struct hlo_op_traits *hlo_op_traits(int opcode)
{
    static const struct hlo_op_traits none = {0, 0, 0};
    return opcode >= 0 && opcode < HLO_OP_COUNT ? &op_traits[opcode] : &none;
}

void hlo_work_per_elem(int opcode, double *alu, double *eup)
{
    const struct hlo_op_traits *t = hlo_op_traits(opcode);
    *alu = t->alu, *eup = t->eup;
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
