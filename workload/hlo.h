/* workload/hlo.h -- an XLA program as HLO text (after SPMD partitioning, as
 * `jax.jit(f).lower(...).compile().as_text()` or `--xla_dump_hlo_as_text`
 * writes it) read into a module, and lowered to a step's program
 * (workload/program.h): an instruction is an op named after it, its operands
 * the tensors it reads.
 *  - dot, and a fusion whose fused computation holds a dot: an einsum
 *    (batch, m, k, n from the dot's dimension numbers), block: auto;
 *  - the other fusions and array ops: a copy moving the bytes the
 *    instruction reads and writes, a fusion of those bytes doing the
 *    vector work of its instructions when they have any (workload/hlo_work.h);
 *  - all-gather, reduce-scatter, all-reduce, all-to-all (sync, *-start /
 *    *-done, async-start around one): the collective over the device groups
 *    of its replica_groups, mapped to chips (device d is chip d, or
 *    program.device_order's; on several slices chip d % N of slice d / N):
 *    a mesh of its own whose axes are the groups' strides (its outer axis
 *    over the DCN when the groups cross the slices), else replica_groups,
 *    one ring per group routed over the torus; collective-permute: a
 *    remote_copy with the pairs' torus shift; the async forms run beside
 *    the compute;
 *  - while with a known trip count: a loop; call and conditional (its most
 *    expensive branch) are inlined;
 *  - custom-call: a copy of its bytes and a warning; send, recv, infeed,
 *    outfeed: refused.
 * Errors read "file:line:col: what was expected, got what".
 * Uses base/, topology/topo.h and workload/program.h. */
#ifndef TPUSIM_WORKLOAD_HLO_H
#define TPUSIM_WORKLOAD_HLO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "base/diag.h"
#include "topology/topo.h"
#include "workload/program.h"

#define HLO_MAX_FILE_BYTES ((size_t)128 << 20)
#define HLO_MAX_INSTRUCTIONS (1 << 21) /* in the module */
#define HLO_MAX_OPS 100000             /* in the program, calls inlined */
#define HLO_MAX_RANK 12
#define HLO_MAX_TRIP_COUNT 1000000000LL

struct hlo_shape {
    int type;                   /* enum hlo_type; HLO_TUPLE for a tuple */
    int rank;
    int64_t dims[HLO_MAX_RANK];
    struct hlo_shape *elem;     /* owned: a tuple's elements */
    int nelem;
};

struct hlo_attr {
    char *key, *value; /* the value as written */
    int line, col;     /* of the value */
};

struct hlo_instr {
    char *name;
    int line, col;
    struct hlo_shape shape;
    int opcode;          /* enum hlo_opcode */
    char *raw;           /* constant/parameter: the text between the parentheses */
    int *operand, nops;  /* instruction indices in the same computation */
    char **opname;       /* the operands' names, until resolved */
    int *op_line, *op_col;
    struct hlo_attr *attr;
    int nattr;
};

struct hlo_comp {
    char *name;
    int line, col;
    bool entry;
    struct hlo_instr *ins;
    int nins;
    size_t cap;
    int root;  /* index of ROOT (the last instruction when none is marked) */
};

struct hlo_names;

struct hlo_module {
    char *file; /* for messages */
    struct hlo_names *cnames; /* computation name -> index */
    char *name;
    bool scheduled;
    int64_t num_partitions, replica_count;
    struct hlo_comp *comp;
    int ncomp;
    size_t cap;
    int entry;
};

/* Reads the HLO text 'text' (of 'len' bytes, from 'file'). Returns the
 * module, or NULL with the errors in 'd'. */
struct hlo_module *hlo_parse(const char *text, size_t len, const char *file, struct diag *d);
/* Reads the file 'path' (at most 'max_bytes'); errors as above. */
struct hlo_module *hlo_parse_file(const char *path, size_t max_bytes, struct diag *d);
void hlo_free(struct hlo_module *m);

/* The number of devices the module runs on: num_partitions x replica_count. */
int64_t hlo_devices(const struct hlo_module *m);
/* The index of computation 'name' (with or without its '%'), or -1. */
int hlo_find_comp(const struct hlo_module *m, const char *name);
/* The attribute 'key' of 'in', or NULL. */
const struct hlo_attr *hlo_attr(const struct hlo_instr *in, const char *key);
/* An opcode's name, as written. */
const char *hlo_opcode_name(int opcode);
/* Bytes of a shape (a tuple: the sum of its elements). */
double hlo_shape_bytes(const struct hlo_shape *s);

/* The module as a program for the slice 't' (device d is chip d, t's axis
 * 0 fastest; chip d % N of slice d / N when the module has more devices than
 * t's N chips), scheduled (workload/schedule.h). Warnings (custom calls, the
 * branch a conditional takes) go to 'warn' when not NULL. Returns the
 * program, or NULL with the errors in 'd'. */
struct program *hlo_program(const struct hlo_module *m, const struct topo *t, struct diag *d,
                            FILE *warn);

/* What the lowering decided that the program does not show (summary.json's
 * program: block). */
struct hlo_report {
    int64_t custom_calls;         /* priced by their bytes only (each warned) */
    int64_t estimated_calls;      /* custom calls priced from their cost_estimate */
    int64_t branches_skipped;     /* conditional branches not run (the costliest runs) */
    int64_t idle_collectives;     /* collectives over one-device groups: nothing moved */
    int64_t trips_from_condition; /* while loops whose trip count the condition gave */
    int64_t routed_collectives;   /* over replica groups that are no mesh axes: rings routed */
    /* hlo_memory(): per device */
    double parameter_bytes;           /* the entry's parameters */
    double temp_peak_bytes;           /* the most bytes live at once beyond them */
    double peak_bytes;                /* the sum: the program's peak */
    const struct hlo_instr *peak_at;  /* the entry's instruction it is reached at (borrowed) */
};

/* The peak memory per device of 'm' into 'rep' (its memory fields):
 * buffers live from the instruction that makes them to their last reader,
 * in the module's order (workload/hlo_mem.c). */
void hlo_memory(const struct hlo_module *m, struct hlo_report *rep);

/* As hlo_program, and what it decided into '*rep' (zeroed first). */
struct program *hlo_program_report(const struct hlo_module *m, const struct topo *t,
                                   struct diag *d, FILE *warn, struct hlo_report *rep);
/* As hlo_program_report, device d running on slice chip chip_of[d] (NULL: chip d;
 * program.device_order, workload/device_order.h). */
struct program *hlo_program_ordered(const struct hlo_module *m, const struct topo *t,
                                    const int *chip_of, struct diag *d, FILE *warn,
                                    struct hlo_report *rep);
/* The trip count of while 'w' (in computation 'caller'; its condition and
 * body computations 'cond' and 'body') from its code: the condition compares
 * element k of the loop's tuple against a constant, the body adds a constant
 * to it, the operand starts it at a constant (workload/hlo_trip.c). Returns 0
 * with '*n', -1 if the code is not such a loop, -2 if it never ends. */
int hlo_trip_from_condition(const struct hlo_module *m, const struct hlo_comp *caller,
                            const struct hlo_instr *w, int cond, int body, int64_t *n);

/* A convolution 'conv' (its kernel of shape 'rhs') as the matmul it runs
 * as (im2col, workload/hlo_conv.c): m, k, n. False if its dim_labels do not
 * say its batch, features and kernel's input and output features. */
bool hlo_conv_dims(const struct hlo_instr *conv, const struct hlo_shape *rhs, int64_t *m,
                   int64_t *k, int64_t *n);

/* A custom call's cost estimate (per device). */
struct hlo_cost {
    double flops, transcendentals, bytes; /* bytes: accessed in HBM */
};
/* The cost_estimate of 'in''s backend_config (workload/hlo_custom.c), as
 * jax's Pallas TPU kernels write it; false if it has none. */
bool hlo_cost_estimate(const struct hlo_instr *in, struct hlo_cost *c);

/* A Pallas TPU custom call recognised by its kernel's name (workload/hlo_pallas.c):
 * the tpusim op kind it runs as ("flash_attention", "matmul"), or NULL; and
 * that op's keys from its operands' shapes. */
const char *hlo_pallas_kind(const struct hlo_comp *c, const struct hlo_instr *in);
void hlo_pallas_params(struct prog_params *ps, const struct hlo_comp *c,
                       const struct hlo_instr *in, const char *kind);

/* The program: block as JSON (an object; new string, NULL when out of
 * memory): the source file and module, its instructions by opcode (fusions'
 * bodies apart), the program's ops by kind ('p', lowered from 'm'), what was
 * ignored and why. */
char *hlo_report_json(const struct hlo_module *m, const struct program *p,
                      const struct hlo_report *r);
/* The source name in 'in''s metadata (op_name="..."), at most n-1 bytes into
 * 'buf' (control characters as '?'); NULL when it has none. */
const char *hlo_metadata_op_name(const struct hlo_instr *in, char *buf, size_t n);

#endif
