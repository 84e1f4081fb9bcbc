/* engine/eng_runners.c -- how the engine runs each op kind: one row per kind
 * that is not a Pallas kernel (a Pallas kind, whose op table row has a
 * builder, runs as a kernel and needs no row). A new engine op is its enum
 * value and parameters (kernels/ops.h), its op table row (config/op_table.c),
 * its runner (engine/eng_ops.c) and its row here. */
#include "engine/engine.h"

static eng_run_fn *const runners[OP_KIND_COUNT] = {
    [OP_HBM_COPY] = eng_run_hbm_copy,
    [OP_PPERMUTE] = eng_run_ppermute,
    [OP_ALL_GATHER] = eng_run_collective,
    [OP_REDUCE_SCATTER] = eng_run_collective,
    [OP_ALL_REDUCE] = eng_run_collective,
    [OP_ALL_TO_ALL] = eng_run_collective,
    [OP_COLLECTIVE_MATMUL] = eng_run_collective_matmul,
    [OP_REMOTE_COPY] = eng_run_remote_copy,
    [OP_HOST_COPY] = eng_run_host_copy,
};
_Static_assert(sizeof runners / sizeof runners[0] == OP_KIND_COUNT, "one runner slot per op kind");

eng_run_fn *eng_runner(enum op_kind kind)
{
    if ((int)kind < 0 || kind >= OP_KIND_COUNT)
        return NULL;
    if (runners[kind])
        return runners[kind];
    return op_row(kind)->kern ? eng_run_kernel : NULL;
}
