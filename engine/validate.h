/* engine/validate.h -- what `run` checks before it starts and `check` reports:
 * every op against its kind's rules on the scenario's chip and topology (its
 * row in config/op_table.h), and the resource guards (grid steps and memory
 * estimated before anything runs). Uses kernels/ and config/cfg.h; no SimGrid. */
#ifndef TPUSIM_ENGINE_VALIDATE_H
#define TPUSIM_ENGINE_VALIDATE_H

#include <stdint.h>

#include "base/diag.h"
#include "config/cfg.h"

/* What a run will simulate, estimated from the ops as the engine will run
 * them: after SPMD folding (the engine's chips), for every op instance
 * (repeat), with kernel memos (a script replayed from its memo after its
 * first runs: once per overlap, on one chip when the others follow it) and
 * fast fidelity's scripts (their length counted by walking them, 2^23 steps
 * at most per estimate, past which a script counts its steps) and coalesced
 * ring passes. 'work' is in steps of
 * simulated work, one per SimGrid activity (a DMA, an execution, a
 * transfer, a sleep; 0.2 to 3 us of CPU each here) or grid step walked, and
 * is what --max-steps and options.max_steps limit (default 5e7: half a
 * minute to a few minutes); 'wall_s' what it takes here, to a factor 2 or 3; its parts by kind of op, and building splash MaskInfos. Every
 * count saturates at INT64_MAX. 'grid_steps' (the Pallas kernels' steps
 * over every simulated core and instance) and 'copy_chunks' (of hbm_copy)
 * are what the progress line counts; 'functional_bytes' the host arrays of
 * functional ops. */
struct validate_estimate {
    int64_t work;
    int64_t kernel, collective, copy, other, build;
    int64_t grid_steps;
    int64_t copy_chunks;
    double functional_bytes;
    double wall_s;       /* about what the run takes here: work at its measured rate */
    double memory_bytes; /* validate_estimate_memory */
};

/* The limits a run is held to; 0 means the scenario's (or the default). */
struct validate_limits {
    int64_t max_steps;       /* 0: options.max_steps */
    double max_memory_bytes; /* 0: 16 GiB */
    struct validate_estimate *estimate; /* if not NULL: the guards' estimate, once they pass */
};

/* Checks every op of 'sc' (block-shape rules, VMEM budgets, routing).
 * Returns 0 or -1 with messages in 'd'. */
int validate_ops(const struct cfg_scenario *sc, struct diag *d);
/* Checks the estimates against 'lim'. Returns 0 or -1 with messages in 'd'. */
int validate_guards(const struct cfg_scenario *sc, const struct validate_limits *lim,
                    struct diag *d);
void validate_estimate(const struct cfg_scenario *sc, struct validate_estimate *e);
/* "about 7 s and 76 MiB" (its wall_s and memory_bytes) into 'buf'. */
const char *validate_estimate_text(const struct validate_estimate *e, char *buf, size_t n);
/* grid_steps + copy_chunks: the progress line's total (walks no script). */
int64_t validate_estimate_steps(const struct cfg_scenario *sc);
/* What building op's kernel holds (splash MaskInfos, in closed form from
 * its shapes); 0 for kinds whose build is small. */
double validate_build_bytes(const struct op *op);
/* Checks what building the kernels will take (closed form, nothing built)
 * against 'lim'; before validate_ops, which builds them. Returns 0 or -1. */
int validate_prebuild(const struct cfg_scenario *sc, const struct validate_limits *lim,
                      struct diag *d);
/* validate_prebuild, validate_ops, then validate_guards: every check `run` makes before it
 * starts, which `check` makes too. Returns 0 or -1 with messages in 'd'. */
int validate_scenario(const struct cfg_scenario *sc, const struct validate_limits *lim,
                      struct diag *d);
/* The peak memory of a run in bytes: actors (~128 KiB each, measured on a
 * 6144-chip all-gather), per op its parameters and built kernels, per op
 * instance its bits and times, and the trace (at most 2M events of ~260
 * bytes); within 2x of the measured peak (tests/unit/test_guards.c). */
double validate_estimate_memory(const struct cfg_scenario *sc);
/* The trace events a run would record at each outputs/trace.h level
 * (ev[TRACE_NONE] is 0), every engine chip traced, before any cap. */
void validate_trace_events(const struct cfg_scenario *sc, double ev[4]);

#endif
