/* kernels/ops.c -- op kind names. */
#include "kernels/ops.h"

#include <stdlib.h>
#include <string.h>

#include "kernels/maskinfo.h"

static const char *const kind_names[OP_KIND_COUNT] = {
    "hbm_copy",       "ppermute",       "matmul",     "flash_attention", "splash_attention",
    "paged_attention", "ragged_paged_attention", "all_gather", "reduce_scatter", "all_reduce",
    "all_to_all",     "collective_matmul", "remote_copy"};

const char *op_kind_name(enum op_kind kind)
{
    return kind < OP_KIND_COUNT ? kind_names[kind] : "?";
}

int op_kind_parse(const char *s, enum op_kind *kind)
{
    for (int i = 0; i < OP_KIND_COUNT; i++) {
        if (strcmp(s, kind_names[i]) == 0) {
            *kind = (enum op_kind)i;
            return 0;
        }
    }
    return -1;
}

void op_fini(struct op *op)
{
    free(op->name);
    if (op->kind == OP_SPLASH) {
        for (int i = 0; i < op->u.splash.nmasks; i++)
            mask_free(op->u.splash.masks[i]);
        free(op->u.splash.masks);
    } else if (op->kind == OP_PAGED) {
        free(op->u.paged.lengths);
    } else if (op->kind == OP_RAGGED) {
        free(op->u.ragged.q_lens);
        free(op->u.ragged.kv_lens);
    }
    memset(op, 0, sizeof *op);
}
