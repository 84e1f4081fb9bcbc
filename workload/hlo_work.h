/* workload/hlo_work.h -- the vector work of an XLA loop fusion, read from
 * its instructions (workload/hlo_work.c): VPU ALU ops and EUP
 * transcendentals, summed over the instructions a fusion runs (a fused
 * computation after XLA's fusion, or an instruction and the producers
 * tpusim fuses into it, workload/hlo_fuse.h, for a module dumped before).
 * Uses workload/hlo.h. */
#ifndef TPUSIM_WORKLOAD_HLO_WORK_H
#define TPUSIM_WORKLOAD_HLO_WORK_H

#include <stdbool.h>

#include "workload/hlo.h"

/* Totals over a loop's instructions (not per element). */
struct hlo_work {
    double alu; /* VPU ALU ops */
    double eup; /* transcendentals (EUP pushes) */
};

/* What the vector-work count and XLA's fusion (workload/hlo_fuse.c) know of
 * an opcode: one table, a row per opcode (workload/hlo_work.c). */
enum {
    HLO_FUSE_END = 1,  /* never a fused producer: a reduce, a sort, ... ends a fusion */
    HLO_FUSE_CHEAP = 2 /* duplicated into each of several readers (XLA: not expensive) */
};
struct hlo_op_traits {
    unsigned char alu, eup; /* ALU ops and transcendentals per element */
    unsigned char fuse;     /* HLO_FUSE_* */
};
const struct hlo_op_traits *hlo_op_traits(int opcode);

/* Per element of an instruction of 'opcode': its ALU ops and transcendentals
 * (0 for data movement). */
void hlo_work_per_elem(int opcode, double *alu, double *eup);
/* Adds instruction 'in' of 'c': the per-element counts times its output's
 * elements (a reduce or a map: its reducer's counts per element read); an
 * instruction of one element runs on the scalar unit and adds nothing. */
void hlo_work_instr(const struct hlo_module *m, const struct hlo_comp *c,
                    const struct hlo_instr *in, struct hlo_work *w);
/* Adds every instruction of computation 'ci' (a fusion's body; nested
 * fusions followed). */
void hlo_work_comp(const struct hlo_module *m, int ci, struct hlo_work *w);
/* Adds instruction 'i' of 'c' and, through its operands, every producer
 * 'fused' puts into it, each once (a producer duplicated into several
 * readers counts in each). 'mark' and 'stack' are c->nins ints of the
 * caller's ('mark' zeroed once per computation; entries are set to i + 1). */
void hlo_work_fused(const struct hlo_module *m, const struct hlo_comp *c, int i,
                    const bool *fused, int *mark, int *stack, struct hlo_work *w);

#endif
