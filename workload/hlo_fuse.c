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
 *    small operand; a slice: its slice). A broadcast or iota read by several
 *    such readers is fused into each (XLA duplicates cheap producers).
 *  - reduce-scatter: an all-reduce whose one reader is a dynamic-slice of
 *    1/N of it (N its group size) is a reduce-scatter of its operand, the
 *    slice its result (XLA's ReduceScatterCreator; the CPU pipeline has no
 *    such pass, TPU's has); decided where the all-reduce is lowered.
 * Modules that hold fusions already (after optimizations) are planned as
 * they are: nothing fused.
 * Uses workload/hlo.h. */
#include <stdlib.h>
#include <string.h>

#include "base/xalloc.h"
#include "workload/hlo_fuse.h"
#include "workload/hlo_int.h"

/* Whether 'op' is an XLA-fusible producer: elementwise or pure data movement. */
static bool producer_kind(int op)
{
    switch (op) {
    case HLO_OP_REDUCE: /* a reduce ends a fusion (its output is another shape) */
    case HLO_OP_REDUCE_WINDOW:
    case HLO_OP_SORT:
    case HLO_OP_TOPK:
    case HLO_OP_FFT:
    case HLO_OP_CHOLESKY:
    case HLO_OP_TRIANGULAR_SOLVE:
    case HLO_OP_BATCH_NORM_GRAD:
    case HLO_OP_BATCH_NORM_INFERENCE:
    case HLO_OP_BATCH_NORM_TRAINING:
    case HLO_OP_SELECT_AND_SCATTER:
    case HLO_OP_MAP:
    case HLO_OP_RNG:
    case HLO_OP_RNG_BIT_GENERATOR:
    case HLO_OP_COPY_START:
        return false;
    default:
        break;
    }
    enum hlo_class c = hlo_class_of(op);
    return c == HLO_C_BYTES || op == HLO_OP_SLICE || op == HLO_OP_DYNAMIC_SLICE;
}

/* Whether 'op' can take a producer into its fusion. */
static bool consumer_kind(int op)
{
    enum hlo_class c = hlo_class_of(op);
    return producer_kind(op) || op == HLO_OP_REDUCE || c == HLO_C_DOT || c == HLO_C_UPDATE;
}

static bool cheap(int op)
{
    return op == HLO_OP_BROADCAST || op == HLO_OP_IOTA;
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

void hlo_fuse_plan(const struct hlo_comp *c, bool fuse, struct hlo_fuse *f)
{
    int n = c->nins;
    f->fused = xcalloc((size_t)n + 1, sizeof *f->fused);
    f->free_slice = xcalloc((size_t)n + 1, sizeof *f->free_slice);
    f->in_bytes = xcalloc((size_t)n + 1, sizeof *f->in_bytes);
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
    /* what each instruction reads from HBM: a fused operand's own reads */
    for (int i = 0; i < n; i++) {
        const struct hlo_instr *in = &c->ins[i];
        double b = 0;
        if (f->fused[i] && (in->opcode == HLO_OP_SLICE || in->opcode == HLO_OP_DYNAMIC_SLICE)) {
            f->in_bytes[i] = hlo_shape_bytes(&in->shape);
            continue;
        }
        for (int k = 0; k < in->nops; k++) {
            int o = in->operand[k];
            if (o < 0 || o >= n)
                continue;
            b += f->fused[o] && o < i ? f->in_bytes[o] : hlo_shape_bytes(&c->ins[o].shape);
        }
        f->in_bytes[i] = b;
    }
    free(users);
    free(all_consumers);
}

void hlo_fuse_free(struct hlo_fuse *f)
{
    free(f->fused);
    free(f->free_slice);
    free(f->in_bytes);
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
