/* kernels/pallas.h -- a pallas_call in C: grid, BlockSpecs, pipelining.
 * The runtime walks the grid in lexicographic order and issues HBM<->VMEM
 * DMAs exactly as Pallas' TPU pipeline does (jax pipeline.py Scheduler; see
 * docs/pallas-semantics.md section 1): the next block is fetched at the
 * start of a step only if its block index differs from the step before; the
 * current block is waited on before the body; an output is written back when
 * its index is about to change or at the last step and waited one step
 * later. Time is not kept here: an executor (struct pl_exec, implemented with
 * SimGrid in engine/, or by a recorder in tests) performs DMAs, compute and
 * overheads. Functional mode moves real data through host buffers. */
#ifndef TPUSIM_KERNELS_PALLAS_H
#define TPUSIM_KERNELS_PALLAS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "models/chip.h"
#include "models/vpu.h"

#define PL_MAX_GRID 5
#define PL_MAX_RANK 5
#define PL_MAX_OPERANDS 24
#define PL_SQUEEZED (-1) /* a block dim given as None: size 1, not in the kernel's view */

enum pl_space { PL_VMEM, PL_ANY, PL_SMEM };
enum pl_dim_sem { PL_ARBITRARY, PL_PARALLEL };
enum pl_dir { PL_IN, PL_OUT };

/* Maps grid indices (and scalar-prefetch data 'user') to block indices. */
typedef void pl_index_fn(const int64_t *grid_idx, const void *user, int64_t *block_idx);

struct pl_operand {
    const char *name;
    enum pl_dir dir;
    enum pl_space space;
    enum dtype dt;
    int rank;
    int64_t shape[PL_MAX_RANK]; /* whole array */
    int64_t block[PL_MAX_RANK]; /* block shape; PL_SQUEEZED for None */
    pl_index_fn *index;         /* NULL: all zeros */
    int buffers;                /* 1 or 2; 0 means the default 2 */
    float *data;                /* functional mode: the HBM array, row-major; borrowed */
};

struct pl_scratch {
    const char *name;
    enum pl_space space;
    enum dtype dt;
    int rank;
    int64_t shape[PL_MAX_RANK];
};

/* The work a body reports for one grid step. Times are filled by the
 * pl_matmul/pl_vpu helpers from models/. */
struct pl_work {
    double mxu_s, vpu_s;
    double flops;          /* useful MXU FLOPs */
    double vpu_flops;      /* element-wise FLOPs (cost_estimate rules) */
    double transcendentals;
    struct vpu_ops vops;   /* pending VPU ops, folded into vpu_s by pl_vpu_flush */
    struct vpu_ops feed;   /* pl_mxu_feed ops for the next pl_matmul */
    struct vpu_ops io;     /* the open matmul's feed and drain ops */
    double mm_s;           /* the open matmul's MXU time (closed by the next one) */
};

struct pl_ctx;
typedef void pl_body_fn(struct pl_ctx *ctx, const int64_t *grid_idx, void *user);

struct pl_call {
    const char *name;
    int ngrid;
    int64_t grid[PL_MAX_GRID];
    enum pl_dim_sem sem[PL_MAX_GRID];
    int noperands;
    struct pl_operand operands[PL_MAX_OPERANDS];
    int nscratch;
    struct pl_scratch scratch[PL_MAX_OPERANDS];
    pl_body_fn *body;
    void *user;              /* handed to body and index maps (scalar prefetch) */
    uint64_t smem_prefetch_bytes; /* scalar-prefetch operands copied to SMEM first */
    uint64_t vmem_limit_bytes;    /* 0: the chip's default scoped limit */
    bool functional;
    bool manual;             /* the body issues DMAs itself (pl_dma_start): no coalescing */
    bool stream;             /* every step reads fresh blocks of each input, writes one block of
                                each output and does the same work (an elementwise pass):
                                fast fidelity may run it whole (pallas_fast.c, run_stream) */
    size_t state_bytes;      /* per-core mutable state for the body (pl_state), zeroed */
    int64_t repeat;          /* the call runs this many times back to back, each run its own
                                pipeline (0 or 1: once); fast fidelity prices a stream's
                                repeats in one go (pallas_fast.c, pl_run_stream) */
};

/* --- executor: how time passes (engine/ implements it with SimGrid) --- */
struct pl_exec_ops {
    /* Starts a DMA of 'bytes' (HBM->VMEM if 'in', else VMEM->HBM) for operand
     * 'operand' (-1: several); returns a handle that dma_wait consumes once. */
    void *(*dma_start)(void *ex, bool in, uint64_t bytes, int operand);
    void (*dma_wait)(void *ex, void *handle);
    /* Runs the compute of 'w' for 'nsteps' steps starting at flat step 'step'. */
    void (*compute)(void *ex, const struct pl_work *w, int64_t step, int64_t nsteps);
    /* Lets 'seconds' of scalar (step) overhead pass. */
    void (*delay)(void *ex, double seconds);
    /* Optional: dma_wait(dma_start(...)) for a DMA waited on at once, with
     * the same timing (an executor may run it more cheaply). */
    void (*dma_sync)(void *ex, bool in, uint64_t bytes, int operand);
    /* Optional: a whole bandwidth-bound stream (fast fidelity, run_stream):
     * delay(pre_s), the 'n' dma_start calls of DMAs issued at that instant,
     * compute(w, step, nsteps), delay(mid_s), a dma_wait of each DMA and
     * delay(post_s), with the same timing (an executor may run it with fewer
     * sleeps). */
    void (*stream)(void *ex, int n, const bool *in, const uint64_t *bytes, const int *operand,
                   const struct pl_work *w, int64_t step, int64_t nsteps, double pre_s,
                   double mid_s, double post_s);
};

struct pl_exec {
    const struct pl_exec_ops *ops;
    void *ex;
    bool coalesce; /* runs of identical steady-state steps become one DMA + one compute */
};

/* Statistics of one pallas_call on one core. */
struct pl_stats {
    int64_t steps;          /* grid steps this core ran */
    int64_t compute_steps;  /* of which ran matmuls: the blocks a sparse kernel visits */
    int64_t dmas;           /* DMAs issued */
    double hbm_bytes;       /* bytes moved between HBM and VMEM */
    double useful_bytes;    /* of which data the kernel uses: without the tile layout's
                               padding, and (manual DMAs) without fetches it discards */
    double flops, vpu_flops, transcendentals;
    double mxu_s, vpu_s, overhead_s;
    double scalar_s;        /* of vpu_s: the scalar core's bundles (pl_scalar) */
    uint64_t vmem_bytes;    /* footprint: buffers x count + scratch */
    int64_t coalesced_runs; /* bulk() calls */
};

/* --- checks --- */
/* Checks block shapes, buffer counts, dimension semantics and the VMEM budget
 * of 'call' on 'chip'. On failure writes a message into 'err' (naming each
 * operand's footprint when VMEM overflows) and returns -1. */
int pl_check(const struct pl_call *call, const struct chip_params *chip, char *err, size_t n);
/* VMEM footprint in bytes: blocked VMEM operands x buffers + VMEM scratch. */
uint64_t pl_vmem_bytes(const struct pl_call *call, const struct chip_params *chip);

/* Number of grid steps. */
int64_t pl_num_steps(const struct pl_call *call);
/* The flat step range [*begin, *end) core 'core' of 'ncores' runs: the
 * flattened parallel prefix split contiguously (ceil), each with the full
 * arbitrary suffix. With 1 core or no parallel dims core 0 runs all. */
void pl_core_range(const struct pl_call *call, int core, int ncores, int64_t *begin,
                   int64_t *end);

/* Runs the steps [begin, end) of 'call' on one core through 'exec'. Adds to '*st'. */
void pl_run(const struct pl_call *call, const struct chip_params *chip, int64_t begin,
            int64_t end, const struct pl_exec *exec, struct pl_stats *st);

/* The work the body of 'call' reports at flat step 'step' (not functional;
 * not for manual calls, whose bodies issue DMAs). */
void pl_step_work(const struct pl_call *call, const struct chip_params *chip, int64_t step,
                  struct pl_work *w);
/* Runs the steps [begin, end) of 'call' with no executor: no time passes, but
 * '*st' counts what a run of them does (steps, DMAs, bytes, busy times), as
 * pl_run with coalescing would. For estimates (kernels/tune.h). */
void pl_dry_run(const struct pl_call *call, const struct chip_params *chip, int64_t begin,
                int64_t end, struct pl_stats *st);

/* --- scripts: a run recorded once, replayed on many cores ---
 * What pl_run asks of its executor depends only on the call and the step
 * range, never on when things happen (no call is told the time), so the
 * sequence of executor calls of a non-functional, non-manual call can be
 * recorded once and replayed on every core, chip and instance that runs the
 * same call over the same range: the same DMAs, computes and delays in the
 * same order, and the same statistics, without walking the grid again. */
struct pl_script;
/* True if 'call' may be recorded (neither functional nor manual). */
bool pl_scriptable(const struct pl_call *call);
/* Records pl_run(call, chip, begin, end) with coalescing as given. */
struct pl_script *pl_record(const struct pl_call *call, const struct chip_params *chip,
                            int64_t begin, int64_t end, bool coalesce);
/* Issues the recorded executor calls to 'x' and adds the run's statistics to
 * '*st' (vmem_bytes set, steps advanced as pl_run advances them). */
void pl_replay(const struct pl_script *s, const struct pl_exec *x, struct pl_stats *st);
/* Adds to '*st' what pl_replay(s, ...) adds, without issuing anything (for a
 * replay whose time is known: engine/eng_memo.c). */
void pl_script_stats(const struct pl_script *s, struct pl_stats *st);
void pl_script_free(struct pl_script *s);
/* The executor calls pl_record(call, chip, begin, end, coalesce) would
 * record (what each replay issues), counted without keeping them: the
 * resource guard's estimate (engine/validate.h). Walks the steps. */
int64_t pl_script_length(const struct pl_call *call, const struct chip_params *chip,
                         int64_t begin, int64_t end, bool coalesce);

/* --- for bodies --- */
/* Reports one matmul (M, K, N) with inputs of 'dt'. */
void pl_matmul(struct pl_ctx *ctx, int64_t m, int64_t k, int64_t n, enum dtype dt);
/* Reports 'count' independent matmuls (M, K, N) issued back to back (a block
 * of batch elements): one MXU chain (models/mxu.h mxu_chain_time_s). */
void pl_matmuls(struct pl_ctx *ctx, int64_t count, int64_t m, int64_t k, int64_t n, enum dtype dt);
/* Reports vector work on a (rows, cols) f32 tile: 'alu' element-wise ops,
 * 'eup' transcendentals, 'xlu' cross-lane reductions, per element; loads and
 * stores of the tile in vregs. 'flops' counts cost_estimate FLOPs per element. */
void pl_vpu(struct pl_ctx *ctx, int64_t rows, int64_t cols, double alu, double load,
            double store, double eup, double xlu);
/* Vector work that streams a matmul's operands into the MXU (loads, casts of
 * the rows pushed) or its result out (pops, stores): it issues in the same
 * bundles as the systolic pass, so a matmul with its feed and drain takes
 * max(MXU time, their VPU slot time); only the excess is serial VPU time.
 * pl_mxu_feed counts toward the next pl_matmul, pl_mxu_drain toward the last
 * one (there must be one): its pops, cast and stored. Arithmetic on the
 * result stays pl_vpu, serial: what needs a whole result (a row max, exp of
 * the logits) waits for the matmul, and an accumulation (acc += dot) is
 * counted so too, as the blocked matmul's calibration against XLA's
 * matmuls has it. Counted per element as pl_vpu. */
void pl_mxu_feed(struct pl_ctx *ctx, int64_t rows, int64_t cols, double alu, double load);
/* Reports 'bundles' of scalar-core work on the body's serial path (address
 * arithmetic, DMA descriptors, loop bookkeeping of a manual kernel), one
 * bundle a cycle at the chip's clock: the TensorCore issues it in the same
 * instruction stream as the vector work, so it is counted with vpu_s (and
 * in pl_stats scalar_s). */
void pl_scalar(struct pl_ctx *ctx, double bundles);
void pl_mxu_drain(struct pl_ctx *ctx, int64_t rows, int64_t cols, double alu, double store);
/* Manual DMAs (operands in memory space ANY): starts a copy of 'bytes' between
 * HBM and VMEM; returns a handle for pl_dma_wait. Only in calls marked
 * 'manual', whose bodies run at their place in simulated time: the compute
 * reported so far is executed before the DMA is issued or waited on. */
void *pl_dma_start(struct pl_ctx *ctx, bool in, uint64_t bytes);
/* The same, of which only 'useful' bytes are data the kernel uses (the rest:
 * tile padding, or a fetch whose data is discarded). */
void *pl_dma_start_useful(struct pl_ctx *ctx, bool in, uint64_t bytes, uint64_t useful);
void pl_dma_wait(struct pl_ctx *ctx, void *handle);
/* Executes the compute reported so far (manual calls; a no-op otherwise). */
void pl_flush(struct pl_ctx *ctx);
/* Closes a group of VPU ops issued together (their slots overlap). */
void pl_vpu_flush(struct pl_ctx *ctx);
/* Functional mode: the current VMEM buffer of operand 'i' (block-sized,
 * row-major over the non-squeezed block dims), or NULL when not functional. */
float *pl_buf(struct pl_ctx *ctx, int i);
/* Functional mode: scratch buffer 'i'. */
float *pl_scratch_buf(struct pl_ctx *ctx, int i);
bool pl_functional(const struct pl_ctx *ctx);
/* The call's per-core mutable state ('state_bytes', zeroed at the start of
 * pl_run): DMA handles kept across steps, scalar-prefetch flags. The body's
 * 'user' pointer is shared by every core that runs the call, so anything a
 * body changes must live here. */
void *pl_state(struct pl_ctx *ctx);
const struct chip_params *pl_chip(const struct pl_ctx *ctx);
/* First or last step of this core's range; and whether the body ran compute. */
int64_t pl_step(const struct pl_ctx *ctx);

/* Rounds 'x' to the precision of 'dt' (bf16: round-to-nearest-even of the top
 * 16 bits; int8/int32: rounds and saturates; fp8: e4m3 approximation). */
float pl_round(float x, enum dtype dt);

#endif
