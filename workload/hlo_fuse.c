/* workload/hlo_fuse.c -- what XLA's TPU pipeline would still do to a module
 * dumped before its fusion passes (the HLO right after SPMD partitioning, as
 * tools/hlo_dump.py --stage spmd writes it), planned per computation for the
 * lowering (workload/hlo_lower.c):
 *  - fusion: an elementwise instruction (or a broadcast, a convert, a
 *    reshape, a transpose, a slice, ...) read by exactly one instruction
 *    that can take it (another such instruction, a reduce, a dot, an
 *    in-place update) runs inside that reader, as XLA's instruction fusion
 *    puts a producer into its consumer: it makes no op and its result never
 *    reaches HBM; the reader reads what it read (a broadcast or an iota: its
 *    small operand; a slice: its slice). A cheap producer (data movement,
 *    elementwise arithmetic short of transcendentals and divisions) read by
 *    several such readers is fused into each, as XLA duplicates them.
 *  - reduce-scatter: an all-reduce whose one reader is a dynamic-slice of
 *    1/N of it (N its group size) is a reduce-scatter of its operand, the
 *    slice its result (XLA's ReduceScatterCreator; the CPU pipeline has no
 *    such pass, TPU's has); decided where the all-reduce is lowered.
 *  - multi-output fusion: a reduce whose data operand is (through the unary
 *    producers fused into it: a convert) the result of a loop that is
 *    written anyway for other readers, of as many elements, is computed in
 *    that loop as its second output (XLA's producer-consumer multi-output
 *    fusion, xla/service/multi_output_fusion.h: a softmax's exp and its
 *    sum in one pass): the reduce reads nothing of it from HBM.
 *  - fusible sinking: a loop-invariant element of a while's tuple that is a
 *    broadcast (of a small operand), an iota, a constant or elementwise ops
 *    over such -- a causal mask or a fill value jax hoisted out of a scan --
 *    is sunk into the body and fused into its readers, which read only its
 *    small operands (XLA's WhileLoopFusibleSinking,
 *    xla/service/while_loop_fusible_sinking.h).
 *  - collective pipelining: an all-gather in a while body whose operand is
 *    sliced out of the loop's parameters (a layer's weights out of the
 *    stacked ones: nothing the iteration computes) is issued one iteration
 *    ahead, as XLA TPU's collective pipeliner moves it (the lowering makes
 *    its result loop-carried: the schedule's prefetch, as model:'s weight
 *    gathers run); and a dynamic-update-slice of a while body that stores
 *    what a collective returns (a layer's reduce-scattered gradient into
 *    the stacked ones) is flagged to run with its collective: the schedule
 *    moves it to the body's end, where XLA's bottom-up latency-hiding
 *    scheduler puts a done's only user (workload/schedule.c).
 * Modules that hold fusions already (after optimizations) are planned as
 * they are: nothing fused.
 * Uses workload/hlo.h. */
#include <stdlib.h>
#include <string.h>

#include "base/xalloc.h"
#include "workload/hlo_fuse.h"
#include "workload/hlo_int.h"
#include "workload/hlo_work.h"

/* Whether 'op' is an XLA-fusible producer: elementwise or pure data movement
 * (a reduce, a sort, ... end a fusion: workload/hlo_work.c's table). */
static bool producer_kind(int op)
{
    if (hlo_op_traits(op)->fuse & HLO_FUSE_END)
        return false;
    enum hlo_class c = hlo_class_of(op);
    return c == HLO_C_BYTES || op == HLO_OP_SLICE || op == HLO_OP_DYNAMIC_SLICE;
}

/* Whether 'op' can take a producer into its fusion. */
static bool consumer_kind(int op)
{
    enum hlo_class c = hlo_class_of(op);
    return producer_kind(op) || op == HLO_OP_REDUCE || c == HLO_C_DOT || c == HLO_C_UPDATE;
}

/* Whether XLA duplicates 'op' into each of several readers rather than
 * writing it out: data movement and elementwise arithmetic that is not
 * expensive (XLA's instruction fusion duplicates all but transcendentals,
 * divisions and the like; workload/hlo_work.c's table). */
static bool cheap(int op)
{
    return (hlo_op_traits(op)->fuse & HLO_FUSE_CHEAP) != 0;
}

/* Whether the module was dumped before XLA's fusion: no fusion anywhere. */
bool hlo_unfused(const struct hlo_module *m)
{
    for (int c = 0; c < m->ncomp; c++)
        for (int i = 0; i < m->comp[c].nins; i++)
            if (m->comp[c].ins[i].opcode == HLO_OP_FUSION)
                return false;
    return true;
}

/* The loop whose result reduce 'r' reads (its data operand, through unary
 * fused producers) that runs the reduce as its second output, or -1: an
 * elementwise loop of as many elements, written for another reader too. */
static int mof_producer(const struct hlo_comp *c, const struct hlo_fuse *f, int r)
{
    const struct hlo_instr *in = &c->ins[r];
    if (in->opcode != HLO_OP_REDUCE || f->fused[r] || in->nops != 2 || in->operand[0] < 0 ||
        in->operand[0] >= r)
        return -1;
    int64_t elems = hlo_shape_elems(&c->ins[in->operand[0]].shape);
    int p = in->operand[0];
    for (int d = 0; d < 16 && p >= 0 && f->fused[p]; d++)
        p = c->ins[p].nops == 1 ? c->ins[p].operand[0] : -1;
    if (p < 0 || p >= r || f->fused[p] || f->sunk[p] || !producer_kind(c->ins[p].opcode) ||
        hlo_class_of(c->ins[p].opcode) != HLO_C_BYTES || c->ins[p].shape.type == HLO_TUPLE ||
        hlo_shape_elems(&c->ins[p].shape) != elems)
        return -1;
    return f->users[p] >= 2 ? p : -1;
}

/* What each instruction reads from HBM: a fused (or sunk) operand's own reads. */
static void read_bytes(const struct hlo_comp *c, struct hlo_fuse *f)
{
    int n = c->nins;
    for (int i = 0; i < n; i++) {
        const struct hlo_instr *in = &c->ins[i];
        double b = 0;
        if (f->sunk[i])
            continue;
        if (f->fused[i] && (in->opcode == HLO_OP_SLICE || in->opcode == HLO_OP_DYNAMIC_SLICE)) {
            f->in_bytes[i] = hlo_shape_bytes(&in->shape);
            continue;
        }
        for (int k = 0; k < in->nops; k++) {
            int o = in->operand[k];
            if (o < 0 || o >= n)
                continue;
            b += (f->fused[o] || f->sunk[o]) && o < i ? f->in_bytes[o]
                                                      : hlo_shape_bytes(&c->ins[o].shape);
        }
        f->in_bytes[i] = b;
    }
    for (int i = 0; f->fusing && i < n; i++) {
        int p = mof_producer(c, f, i);
        if (p >= 0)
            f->in_bytes[i] -= hlo_shape_bytes(&c->ins[p].shape);
    }
}

void hlo_fuse_plan(const struct hlo_comp *c, bool fuse, struct hlo_fuse *f)
{
    int n = c->nins;
    f->fused = xcalloc((size_t)n + 1, sizeof *f->fused);
    f->free_slice = xcalloc((size_t)n + 1, sizeof *f->free_slice);
    f->in_bytes = xcalloc((size_t)n + 1, sizeof *f->in_bytes);
    f->sunk = xcalloc((size_t)n + 1, sizeof *f->sunk);
    int *users = xcalloc((size_t)n + 1, sizeof *users);
    bool *all_consumers = xcalloc((size_t)n + 1, sizeof *all_consumers);
    for (int i = 0; i < n; i++)
        all_consumers[i] = true;
    if (n)
        users[c->root]++, all_consumers[c->root] = false; /* the result leaves */
    for (int i = 0; i < n; i++)
        for (int k = 0; k < c->ins[i].nops; k++) {
            int o = c->ins[i].operand[k];
            if (o < 0 || o >= n)
                continue;
            users[o]++;
            if (!consumer_kind(c->ins[i].opcode))
                all_consumers[o] = false;
        }
    for (int i = 0; fuse && i < n; i++) {
        const struct hlo_instr *in = &c->ins[i];
        if (!producer_kind(in->opcode) || in->shape.type == HLO_TUPLE || users[i] == 0)
            continue;
        f->fused[i] = all_consumers[i] && (users[i] == 1 || cheap(in->opcode));
    }
    f->fusing = fuse;
    f->users = users;
    read_bytes(c, f);
    free(all_consumers);
}

void hlo_fuse_free(struct hlo_fuse *f)
{
    free(f->fused);
    free(f->free_slice);
    free(f->in_bytes);
    free(f->sunk);
    free(f->users);
    memset(f, 0, sizeof *f);
}

int hlo_fuse_scatter_slice(const struct hlo_comp *c, int ar)
{
    int ds = -1;
    for (int i = ar + 1; i < c->nins; i++)
        for (int k = 0; k < c->ins[i].nops; k++)
            if (c->ins[i].operand[k] == ar) {
                if (ds >= 0 || c->ins[i].opcode != HLO_OP_DYNAMIC_SLICE || k != 0)
                    return -1;
                ds = i;
            }
    if (ds < 0 || c->root == ar)
        return -1;
    return ds;
}

/* Whether instruction 'i' of 'c' is computed from the computation's
 * parameters and constants through indexing and plumbing only (at most
 * 'depth' deep): a weight sliced out of a loop's stacked parameters (an
 * element of a tuple, through jax.checkpoint's opt-barrier, is followed
 * alone). */
static bool plumbing(const struct hlo_comp *c, int i, int depth)
{
    const struct hlo_instr *in = &c->ins[i];
    switch (in->opcode) {
    case HLO_OP_PARAMETER:
    case HLO_OP_CONSTANT:
    case HLO_OP_PARTITION_ID:
    case HLO_OP_REPLICA_ID:
    case HLO_OP_IOTA:
        return true;
    case HLO_OP_GET_TUPLE_ELEMENT:
    case HLO_OP_BITCAST:
    case HLO_OP_RESHAPE:
    case HLO_OP_COPY:
    case HLO_OP_CONVERT:
    case HLO_OP_TRANSPOSE:
    case HLO_OP_BROADCAST:
    case HLO_OP_SLICE:
    case HLO_OP_DYNAMIC_SLICE:
    case HLO_OP_ADD:
    case HLO_OP_SUBTRACT:
    case HLO_OP_MULTIPLY:
    case HLO_OP_COMPARE:
    case HLO_OP_SELECT:
        break;
    default:
        return false;
    }
    if (depth == 0)
        return false;
    if (in->opcode == HLO_OP_GET_TUPLE_ELEMENT && in->nops == 1) { /* element k only */
        int t = in->operand[0];
        while (t >= 0 && t < i && c->ins[t].opcode == HLO_OP_OPT_BARRIER && c->ins[t].nops == 1)
            t = c->ins[t].operand[0]; /* jax.checkpoint's barrier passes its tuple on */
        const struct hlo_attr *a = hlo_attr(in, "index");
        long k = a ? strtol(a->value, NULL, 10) : -1;
        if (t >= 0 && t < i && c->ins[t].opcode == HLO_OP_TUPLE)
            return k >= 0 && k < c->ins[t].nops && c->ins[t].operand[k] < t &&
                   plumbing(c, c->ins[t].operand[k], depth - 1);
    }
    for (int k = 0; k < in->nops; k++)
        if (in->operand[k] < 0 || in->operand[k] >= i || !plumbing(c, in->operand[k], depth - 1))
            return false;
    return true;
}

bool hlo_fuse_pipelined(const struct hlo_comp *c, int ag)
{
    const struct hlo_instr *in = &c->ins[ag];
    if (in->opcode != HLO_OP_ALL_GATHER || in->nops < 1)
        return false;
    for (int k = 0; k < in->nops; k++)
        if (in->operand[k] < 0 || in->operand[k] >= ag || !plumbing(c, in->operand[k], 16))
            return false;
    return true;
}

static double sinkable(const struct hlo_comp *c, int x, int depth)
{
    if (x < 0 || x >= c->nins || depth > 8)
        return -1;
    const struct hlo_instr *in = &c->ins[x];
    if (in->shape.type == HLO_TUPLE)
        return -1;
    switch (in->opcode) {
    case HLO_OP_CONSTANT:
        return hlo_shape_elems(&in->shape) > 1 ? hlo_shape_bytes(&in->shape) : 0;
    case HLO_OP_IOTA:
        return 0;
    case HLO_OP_BROADCAST: { /* reads its operand once per iteration: when it is small */
        if (in->nops != 1 || in->operand[0] < 0 || in->operand[0] >= x)
            return -1;
        const struct hlo_shape *src = &c->ins[in->operand[0]].shape;
        if (src->type == HLO_TUPLE || 8 * hlo_shape_elems(src) > hlo_shape_elems(&in->shape))
            return -1;
        double b = sinkable(c, in->operand[0], depth + 1);
        return b >= 0 ? b : hlo_shape_bytes(src);
    }
    default:
        break;
    }
    if (!cheap(in->opcode) || in->opcode == HLO_OP_SLICE || in->nops < 1)
        return -1;
    double b = 0; /* elementwise over sinkable values */
    for (int k = 0; k < in->nops; k++) {
        if (in->operand[k] < 0 || in->operand[k] >= x)
            return -1;
        double o = sinkable(c, in->operand[k], depth + 1);
        if (o < 0)
            return -1;
        b += o;
    }
    return b;
}

double hlo_fuse_sinkable(const struct hlo_comp *c, int x)
{
    return sinkable(c, x, 0);
}

/* Whether instruction 'i' of 'c' is element '*k' of the computation's parameter. */
static bool param_elem(const struct hlo_comp *c, int i, long *k)
{
    const struct hlo_instr *in = &c->ins[i];
    if (in->opcode != HLO_OP_GET_TUPLE_ELEMENT || in->nops != 1 || in->operand[0] < 0 ||
        in->operand[0] >= c->nins || c->ins[in->operand[0]].opcode != HLO_OP_PARAMETER)
        return false;
    const struct hlo_attr *a = hlo_attr(in, "index");
    *k = a ? strtol(a->value, NULL, 10) : -1;
    return *k >= 0;
}

bool hlo_fuse_invariant(const struct hlo_comp *body, int k)
{
    if (body->nins < 1)
        return false;
    const struct hlo_instr *r = &body->ins[body->root];
    long e;
    return r->opcode == HLO_OP_TUPLE && k >= 0 && k < r->nops && r->operand[k] >= 0 &&
           r->operand[k] < body->nins && param_elem(body, r->operand[k], &e) && e == k;
}

void hlo_fuse_sink(const struct hlo_comp *c, const double *sunk, int n, struct hlo_fuse *f)
{
    bool any = false;
    for (int i = 0; i < c->nins; i++) {
        long k;
        if (param_elem(c, i, &k) && k < n && sunk[k] >= 0) {
            f->sunk[i] = true;
            f->in_bytes[i] = sunk[k];
            any = true;
        }
    }
    if (any)
        read_bytes(c, f);
}
