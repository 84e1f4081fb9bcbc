/* outputs/summary.h -- the per-op results of a run and their writers.
 * summary.json is a contract scripts rely on (docs/reference.md, "Outputs"):
 *   {"scenario", "chip", "topology": [..], "total_time_s", "ops": [{"name",
 *    "kind", "start_s", "end_s", "time_s", "flops", "hbm_bytes", "ici_bytes",
 *    "vmem_peak_bytes", "grid_steps", "bound", ...extra fields}]}
 * Fields may be added, never removed or renamed. */
#ifndef TPUSIM_OUTPUTS_SUMMARY_H
#define TPUSIM_OUTPUTS_SUMMARY_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "outputs/trace.h"

enum bound { BOUND_MXU, BOUND_VPU, BOUND_HBM, BOUND_ICI, BOUND_OVERHEAD, BOUND_LATENCY,
             BOUND_PCIE, BOUND_DCN, BOUND_COUNT };

#define SUMMARY_MAX_AUTO 12

/* What `block: auto` chose for an op (study/autotune.h): the blocks by name,
 * how many candidates were timed and how many were feasible, the winner's
 * time in the search (one instance), its bounding unit and analytic lower
 * bound, and the default blocks' time (-1: not timed, its bound was above). */
struct summary_auto {
    int n;
    const char *names[SUMMARY_MAX_AUTO]; /* static */
    int64_t values[SUMMARY_MAX_AUTO];
    int candidates, feasible;
    double time_s, lower_bound_s, default_s;
    char bound[16];
    bool cached;
};

/* What one TensorCore of chip 0 did in an op, or in one of its pallas_calls
 * (a sub-kernel: fwd, di, dkv, dq...): its time and units' busy time (s). */
struct summary_core_work {
    double time_s;               /* summed over instances */
    double mxu_s, vpu_s, overhead_s, hbm_bytes;
};

#define SUMMARY_MAX_CORES 2
#define SUMMARY_MAX_SUB 8

/* A pallas_call of an op that runs several (sub-kernels). */
struct summary_sub {
    char name[96];               /* the call's name, as upstream names the kernel */
    char phase[8];               /* fwd, di, dkv, dq, bwd (fused), or "" */
    struct summary_core_work core[SUMMARY_MAX_CORES];
};

/* A collective's bandwidths as nccl-tests define them (its PERFORMANCE.md):
 * algbw = S / t with S the collective's data size (all_gather: the gathered
 * output, n x bytes; the others: 'bytes'), busbw = algbw x 2(n-1)/n for
 * all_reduce, x (n-1)/n for all_gather, reduce_scatter, all_to_all, x 1 for
 * ppermute; link_peak_Bps: the chip's outgoing ICI bandwidth on the axes it
 * uses (2 link directions per axis); link_share = busbw / link_peak. */
struct summary_coll {
    bool present;
    int n;                       /* devices in a group */
    double data_bytes;           /* S, per instance */
    double algbw_Bps, busbw_Bps, link_peak_Bps, link_share;
};

struct summary_op {
    char *name;                 /* owned */
    char *op_name;              /* owned: the source program's name (op_name:); NULL: none */
    const char *kind;           /* static */
    double start_s, end_s;
    double flops, vpu_flops, transcendentals;
    double hbm_bytes, ici_bytes;
    double useful_bytes;        /* of hbm_bytes, data the kernel uses (no tile padding or
                                   discarded fetches): padded = hbm_bytes - useful_bytes */
    double pcie_bytes;          /* host_copy: bytes over the chips' PCIe links */
    double dcn_bytes;           /* sent over the DCN (multislice); written when slices > 1 */
    uint64_t vmem_peak_bytes;
    int64_t grid_steps;         /* summed over cores */
    int64_t compute_steps;      /* grid steps that ran matmuls (blocks visited; skipped ones did not) */
    int64_t dmas;
    int64_t coalesced_runs;
    /* busy time per unit, summed over cores (seconds) */
    double mxu_s, vpu_s, overhead_s, hbm_s, ici_s, latency_s, pcie_s;
    double dcn_s;               /* DCN bytes per chip over its share of its host's NICs */
    double peak_frac;           /* of the bounding unit's peak, 0..1 */
    enum bound bound;
    int cores;                  /* TensorCores that ran it (summed over its instances) */
    const char *category;       /* static: matmul, attention, fusion, collective, copy */
    int64_t instances;          /* times it ran (repeat blocks) */
    double time_s;              /* the sum over instances of the longest run on any core */
    struct summary_auto *tuned; /* owned: `block: auto` chose its blocks; NULL otherwise */
    enum bound runner_up;       /* the unit with the second most busy time per core */
    double bound_frac, runner_up_frac; /* their busy time per core over time_s */
    int ncore;                  /* chip 0's TensorCores (per_core) */
    struct summary_core_work core[SUMMARY_MAX_CORES];
    int nsub;                   /* pallas_calls when more than one */
    struct summary_sub *sub;    /* owned */
    struct summary_coll coll;
    const char *unc_family;     /* static: its error-bar family (engine/uncertainty.h); NULL: none */
    double unc_relative;        /* that family's relative band */
};

/* One TensorCore of chip 0 over the run: its units' busy time, the time its
 * compute stream ran ops, and the rest (idle). */
struct summary_tc {
    double mxu_s, vpu_s, overhead_s, hbm_s;
    double compute_s, idle_s;
    enum bound bound, runner_up;
};

/* Where the time of chip 0's timeline went (seconds): compute by category
 * (the compute stream runs one op at a time, so these add up), async work
 * hidden behind compute or exposed, and idle time. */
enum summary_cat {
    CAT_MATMUL, CAT_ATTENTION, CAT_FUSION, CAT_COMPUTE_OTHER, CAT_COLLECTIVE_EXPOSED,
    CAT_COLLECTIVE_HIDDEN, CAT_COPY_EXPOSED, CAT_COPY_HIDDEN, CAT_IDLE, CAT_COUNT
};

/* One op of the critical path: the instances of it on the path and their time. */
struct summary_path_op {
    char *name;                 /* owned */
    int64_t instances;
    double time_s;
    int op;                     /* its index in the summary's ops (last: positional initializers) */
};

/* A model step's figures (workload/model.h): throughput, MaxText's MFU, memory. */
struct summary_model {
    bool present;
    char mode[16];              /* train, prefill, decode */
    double tokens;              /* per step, all chips */
    double tokens_per_s, tokens_per_s_per_chip;
    double flops_per_device;    /* MaxText's model FLOPs per device and step */
    double mfu;                 /* those over the step time and the device's peak in
                                   peak_dtype */
    char peak_dtype[8];         /* the model's dtype, whose peak the MFU is taken against */
    /* per chip, bytes */
    double mem_params, mem_grads, mem_optimizer, mem_activations, mem_weights_gathered,
        mem_logits, mem_kv_cache, mem_total, mem_capacity;
    /* pipeline parallelism (stages > 1): its schedule and bubble */
    int pipeline_stages;
    int64_t pipeline_microbatches, pipeline_repeats, pipeline_iterations;
    double pipeline_bubble;
    char pipeline_schedule[12];
    /* mixture of experts (moe): the routing as it runs */
    bool moe;
    double moe_capacity_factor; /* <= 0: dropless */
    double moe_load_imbalance, moe_dropped_share;
    bool moe_sparse_matmul;
    /* a decode step's memory-bandwidth utilisation: the bytes each chip
     * must read per step (its weights and KV cache) over the step time and
     * the chip's peak HBM bandwidth (0 bytes: not a decode step) */
    double mbu, mbu_bytes_per_chip;
};

/* What a step costs (engine/cost.h): the price of a chip-hour in use, per
 * step and per million tokens (the model step's tokens; -1: no model). */
struct summary_cost {
    bool present;
    char commitment[12];        /* on_demand, 1y, 3y, or "given" */
    double usd_per_chip_hour;
    int chips;
    double usd_per_hour, usd_per_step, usd_per_million_tokens;
};

/* The energy of a step (engine/cost.h): P = idle + (tdp - idle) x utilization per chip. */
struct summary_energy {
    bool present;
    double tdp_w, idle_w;       /* per chip */
    double utilization;         /* chip 0's TensorCores' busy time over theirs and the step's */
    double avg_power_w;         /* per chip */
    double joules_per_step;     /* all chips */
    double joules_per_million_tokens; /* -1: no model */
};

/* A training run (train:; engine/cost.h): its steps, evaluations, checkpoints
 * and compile time, and their sum. */
struct summary_train {
    bool present;
    int64_t steps;
    double tokens;              /* steps x the step's tokens */
    double step_s;
    int64_t eval_interval;      /* steps between evaluations (0: none) */
    int64_t evals, eval_steps;  /* evaluations, forward-only steps in each */
    double eval_step_s, eval_s; /* one forward-only step; one evaluation */
    double eval_block_s;        /* eval_interval steps and one evaluation */
    int64_t checkpoints;
    double checkpoint_bytes_per_chip, checkpoint_s; /* one checkpoint */
    double compile_s;
    double time_to_train_s;
    double usd_to_train;        /* -1: no price */
    double joules_to_train;     /* -1: no power figures */
};

/* The step time's error bar (engine/uncertainty.h): sigma_s, the band's
 * half-width, from the critical path's ops and their families' bands; for a
 * model step at least the model-step family's band (floored). */
#define SUMMARY_UNC_FAMILIES 4
struct summary_unc {
    bool present;
    double sigma_s, relative, low_s, high_s;
    double ops_sigma_s;         /* sqrt of the families' squared sums, before the floor */
    double family_s[SUMMARY_UNC_FAMILIES]; /* per family: band x its critical-path time */
    double floor_s;             /* model steps: the model-step family's band x the step; else 0 */
    bool floored;               /* the floor set sigma_s */
};

/* A repeat block: the time of each of its iterations on chip 0. */
struct summary_block {
    char *name;                 /* owned */
    int64_t count;              /* iterations per enclosing iteration */
    int64_t niter;              /* iterations in all (count times the enclosing ones) */
    double *start_s, *end_s;    /* owned, per iteration */
};

/* What trace.json holds (outputs/trace.h) and the filters that shaped it. */
struct summary_trace {
    bool present;               /* the run wrote its outputs */
    struct trace_stats st;
    char *chips;                /* owned: --trace-chips as given; NULL: every simulated chip */
    bool window;
    double window_t0_s, window_t1_s;
};

struct summary {
    char *scenario, *chip;      /* owned */
    int ndims;
    int shape[3];
    double total_time_s;
    int nops;
    struct summary_op *ops;     /* owned */
    int64_t total_steps;
    int slices;                 /* ICI slices joined by the DCN (0 or 1: one slice) */
    int sim_chips;              /* chips simulated (the SPMD fold of the slice, engine/spmd.h,
                                 * in every slice) */
    int sim_shape[3];
    int64_t memo_replays;       /* kernel replays taken from memos (engine/eng_memo.c) */
    int64_t memo_measured;      /* memos measured */
    /* the program's timeline (chip 0): present when 'timeline' */
    bool timeline;
    double cat_s[CAT_COUNT];
    int npath;
    struct summary_path_op *path; /* owned: the critical path, in order */
    int nblocks;
    struct summary_block *blocks; /* owned */
    struct summary_model model;
    struct summary_trace trace;
    int ntc;                    /* chip 0's TensorCores */
    struct summary_tc tc[SUMMARY_MAX_CORES];
    struct summary_cost cost;
    struct summary_energy energy;
    struct summary_train train;
    struct summary_unc unc;
    /* faults: and goodput: (engine/fault_report.h): what moved against the run
     * without faults, and the expected useful share; NULL without them */
    char *faults_json;          /* owned: the members ",\n  \"faults\": {...}..." */
    char *faults_text;          /* owned: lines for the console */
    char *program_json;         /* owned: an HLO program's program: block (a JSON object); NULL: none */
};

/* "matmul", "collective_exposed", ... */
const char *summary_cat_name(enum summary_cat c);

/* "mxu", "vpu", "hbm", "ici", "overhead", "latency", "dcn" ("?" out of range). Static. */
const char *bound_name(enum bound b);
/* Multiplies what 'op' sums over chips and cores (FLOPs, bytes, steps, DMAs,
 * busy times, cores) by 'mult'. */
void summary_op_scale(struct summary_op *op, int mult);
/* Sets op->bound to the unit with the most busy time per core, op->runner_up
 * to the next (ties: the earlier in enum bound). */
void summary_pick_bound(struct summary_op *op);
/* The same over 'busy' (BOUND_COUNT values). */
void summary_rank_units(const double *busy, enum bound *first, enum bound *second);
/* Writes summary.json to 'path' atomically (base/fsutil.h). Returns 0 or -1 (errno). */
int summary_write_json(const struct summary *s, const char *path);
/* Prints one line about what `block: auto` chose for op 'name': "auto NAME:
 * bm=.. bk=.. bn=.. (fastest of N timed, F feasible: T, mxu-bound; lower
 * bound B; default blocks D)". */
void summary_print_auto(const char *name, const struct summary_auto *a, FILE *out);
/* Prints to 'out' the slice (and its SPMD fold, if any), the per-op table
 * (start, time, % of peak, bound, grid steps), the total, a line per op whose
 * blocks `block: auto` chose and, with a timeline, chip 0's time by category
 * and the critical path. */
void summary_print_table(const struct summary *s, FILE *out);
/* Writes to 'buf' how to get what the trace left out (dropped by the cap,
 * filtered, or below its level): one sentence, "" when it holds everything. */
void summary_trace_hint(const struct summary *s, char *buf, size_t n);
/* Prints "wrote DIR/trace.json (level, events, MB; ...)" and, when events
 * were dropped, a warning with the hint. */
void summary_print_trace(const struct summary *s, const char *dir, FILE *out);
void summary_fini(struct summary *s); /* frees what 's' owns and zeroes it */

/* Writes the cost, energy and train blocks of summary.json (those present;
 * outputs/summary_cost.c). */
void summary_write_cost(FILE *f, const struct summary *s);
/* Prints a line each for the cost, the energy and the training run (those present). */
void summary_print_cost(const struct summary *s, FILE *out);

/* Formats 's' seconds as the console does: "1.234 s", "5.678 ms", "9.012 us". */
void summary_format_time(char *buf, size_t n, double s);

#endif
