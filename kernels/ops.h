/* kernels/ops.h -- the operations a scenario's workload lists.
 * Every TensorCore runs the ops in order (SPMD); ops are separated by a
 * barrier unless an op says overlap: true. The config loader fills these;
 * sim/ runs them. */
#ifndef TPUSIM_KERNELS_OPS_H
#define TPUSIM_KERNELS_OPS_H

#include <stdbool.h>
#include <stdint.h>

#include "models/chip.h"

enum op_kind { OP_HBM_COPY, OP_PPERMUTE, OP_MATMUL, OP_KIND_COUNT };

struct op_hbm_copy {
    uint64_t bytes;       /* per TensorCore */
    uint64_t chunk_bytes; /* 0: half the scoped VMEM limit */
};

struct op_ppermute {
    uint64_t bytes; /* per chip */
    int axis;
    int shift;
};

struct op_matmul {
    int64_t m, k, n;
    enum dtype dt;
    int64_t bm, bk, bn;
};

struct op {
    enum op_kind kind;
    char *name;                /* owned; defaults to the kind's name and index */
    bool overlap;              /* do not wait for the previous op's barrier */
    bool functional;           /* compute real numbers and check them */
    uint64_t vmem_limit_bytes; /* 0: the chip's default */
    union {
        struct op_hbm_copy hbm_copy;
        struct op_ppermute ppermute;
        struct op_matmul matmul;
    } u;
};

/* YAML name of 'kind': "hbm_copy", "ppermute", "matmul". */
const char *op_kind_name(enum op_kind kind);
int op_kind_parse(const char *s, enum op_kind *kind);

#endif
