/* workload/model_moe_int.h -- a mixture-of-experts layer as MaxText runs it
 * (maxtext layers/moe.py): the router matmul, softmax and top-k on the VPU,
 * the tokens sorted by expert (permute), the dispatch all-to-all over the
 * expert axis, the experts' matmuls (megablox's grouped matmul with
 * sparse_matmul, or the einsums over a capacity-padded dispatch mask
 * without it), the combine all-to-all and the unpermute. This file sizes
 * them (rows, bytes, the dropped share); workload/model.c emits the ops.
 * Internal to workload/ (model.c, model_moe.c). */
#ifndef TPUSIM_WORKLOAD_MODEL_MOE_INT_H
#define TPUSIM_WORKLOAD_MODEL_MOE_INT_H

#include <stddef.h>
#include <stdint.h>

#include "workload/model.h"

struct moe_plan {
    int64_t routed;          /* rows a device routes: its tokens x top_k */
    int64_t rows_per_expert; /* rows each local expert's matmul runs on the busiest device */
    double load;             /* the busiest device's rows over the mean (imbalance, capped
                                by the capacity factor) */
    double a2a_bytes;        /* the dispatch (and the combine) buffer per chip */
    double dropped;          /* the share of routed rows over capacity (0 dropless) */
    int64_t capacity;        /* dense: rows per expert and sequence; 0 dropless */
    /* dense (sparse_matmul: false): the dispatch and combine einsums,
     * [batch] x [m, k] x [k, n] (per sequence, the mask [S, E x C] against
     * the tokens [S, D]) */
    int64_t disp_batch, disp_m, disp_k, disp_n;
};

/* Checks the MoE keys against each other. Returns 0, or -1 with the reason. */
int moe_check(const struct model *m, char *err, size_t n);
/* Sizes the layer for one device of 's'. */
void moe_plan(const struct model *m, const struct model_shard *s, struct moe_plan *p);
/* The share of routed rows dropped with 'experts' experts, a load of
 * max/mean 'imbalance' (one hot expert takes imbalance x the mean, the others
 * share the rest evenly) and 'capacity_factor' (<= 0: dropless, 0). */
double moe_dropped_share(double imbalance, double capacity_factor, int64_t experts);

#endif
