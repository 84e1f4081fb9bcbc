/* kernels/ops.c -- op kind names. */
#include "kernels/ops.h"

#include <string.h>

static const char *const kind_names[OP_KIND_COUNT] = {"hbm_copy", "ppermute", "matmul"};

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
