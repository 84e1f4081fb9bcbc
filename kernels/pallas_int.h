/* kernels/pallas_int.h -- what kernels/pallas.c (the grid walk and the exact
 * per-step schedule) and kernels/pallas_fast.c (fast fidelity: coalesced
 * runs, whole streams, scripts) share. Internal to kernels/. */
#ifndef TPUSIM_KERNELS_PALLAS_INT_H
#define TPUSIM_KERNELS_PALLAS_INT_H

#include "kernels/pallas.h"

struct pl_ctx {
    const struct pl_call *call;
    const struct chip_params *chip;
    const struct pl_exec *x;
    struct pl_stats *st;
    bool live; /* the body runs at its place in simulated time (manual DMAs) */
    bool mm_open; /* work.mm_s holds a matmul (pl_mxu_drain may follow) */
    struct pl_work work;
    int64_t step;
    float *bufs[PL_MAX_OPERANDS][2];
    int slot[PL_MAX_OPERANDS];
    float *scratch[PL_MAX_OPERANDS];
    void *state;
    int64_t begin; /* first step of this core's range */
};

/* One operand's pipeline state on this core. */
struct opstate {
    int64_t idx_prev[PL_MAX_RANK], idx_cur[PL_MAX_RANK], idx_next[PL_MAX_RANK];
    void *cur;      /* DMA handle of the current block (inputs) */
    void *pending;  /* write-back awaiting its wait (outputs) */
    uint64_t bytes; /* DMA bytes of one block */
    uint64_t raw;   /* of which data: the block's elements x dtype size (no tile padding) */
    bool trivial, single, piped;
};

/* The decisions of one step, compared to coalesce runs. */
struct plan {
    int64_t s; /* flat step index */
    uint32_t fetch, wait, out_start, out_wait;
    uint64_t fetch_bytes, out_bytes;
    uint64_t fetch_raw, out_raw; /* of which data (opstate.raw) */
    struct pl_work w;
};

/* The sums of a run are taken from zero and added to the caller's at its end,
 * so a replayed script (pl_replay) adds exactly what the run would have. */
struct pl_sums {
    double hbm_bytes, flops, vpu_flops, transcendentals, mxu_s, vpu_s, overhead_s;
    double useful_bytes;
};
void pl_sums_take(struct pl_stats *st, struct pl_sums *saved);
void pl_sums_add(struct pl_stats *st, const struct pl_sums *to);

/* --- pallas.c: the schedule's pieces --- */
bool pl_same_idx(const int64_t *a, const int64_t *b);
/* Starts a DMA through 'x' and counts it in '*st' ('raw' of its bytes are data). */
void *pl_start_dma(const struct pl_exec *x, struct pl_stats *st, bool in, uint64_t bytes,
                   uint64_t raw, int op);
/* A DMA waited on at once. */
void pl_sync_dma(const struct pl_exec *x, struct pl_stats *st, bool in, uint64_t bytes,
                 uint64_t raw, int op);
/* Decides what step 's' of [b, e) does; fills 'p' (without the body's work). */
void pl_plan_step(struct pl_ctx *c, struct opstate *os, int64_t s, int64_t b, int64_t e,
                  struct plan *p);
/* Runs the body of step 's' and returns the work it reported in '*w'. */
void pl_run_body(struct pl_ctx *c, int64_t s, struct pl_work *w);
/* Waits each input DMA named in 'mask' once (operands may share a handle). */
void pl_wait_inputs(struct opstate *os, int noperands, uint32_t mask, const struct pl_exec *x);
/* Moves every operand's block indices one step on. */
void pl_advance_idx(struct pl_ctx *c, struct opstate *os, int64_t s, int64_t e);
/* Adds 'n' steps of work 'w' and step overhead 'o_s' to '*st'. */
void pl_account(struct pl_stats *st, const struct pl_work *w, double n, double o_s);
/* Executes step 's' of plan 'p' exactly: its overhead, DMAs, waits, compute
 * and write-backs. */
void pl_exact_step(struct pl_ctx *c, struct opstate *os, const struct plan *p, int64_t s);

/* --- pallas_fast.c: fast fidelity --- */
/* A stream call run whole (one step's body is run first): true if it was, false if
 * the caller must walk its steps. */
bool pl_run_stream(struct pl_ctx *c, struct opstate *os, int64_t b, int64_t e);
/* Steps [b, e), planned a group at a time, repeated groups and runs of
 * identical steady steps coalesced. */
void pl_run_grouped(struct pl_ctx *c, struct opstate *os, int64_t b, int64_t e);

#endif
