/* study/autotune.h -- `block: auto` (and `block_sizes: auto`): a stage between
 * loading a scenario and validating it, which gives each auto op the fastest
 * feasible blocks for its shape on the scenario's chip.
 *
 * The candidates come from the kernel's search (kernels/tune.h): feasible
 * blocks (the kernel's rules, the VMEM budget of the op's scoped limit)
 * ordered by an analytic lower bound, the kernel's default among them, handed
 * out lazily (a candidate's bound is computed only when its floor could put it
 * among those timed, so most dry runs of a large search are skipped). They
 * are timed with the real engine: a forked child runs one scenario holding
 * the first N candidates as consecutive ops on one chip through sim_run (so
 * each time is what a sweep point with those blocks gives) and sends the
 * times back through a pipe. Candidates beyond the first N whose bound is
 * below the best time found are timed in a second run (branch and bound):
 * one that is not timed provably cannot win. The fastest wins; ties go to the
 * earlier candidate. A search is cached per (op kind and parameters, scoped
 * VMEM limit, fidelity, chip) in the caller's cache, so identical ops search
 * once. Uses kernels/tune.h, engine/sim.h. */
#ifndef TPUSIM_STUDY_AUTOTUNE_H
#define TPUSIM_STUDY_AUTOTUNE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "base/diag.h"
#include "kernels/tune.h"
#include "config/cfg.h"
#include "outputs/summary.h"

#define AUTOTUNE_N 8          /* candidates timed per run, by default */

struct autotune_opts {
    int n;        /* candidates per run; 0: AUTOTUNE_N */
    int sg_argc;  /* SimGrid flags for the children, e.g. --cfg=contexts/factory:thread */
    char **sg_argv;
};

/* Searches done in a process; identical ops are searched once. */
struct autotune_cache;
/* Returns a new, empty cache; caller frees with autotune_cache_free(). */
struct autotune_cache *autotune_cache_new(void);
void autotune_cache_free(struct autotune_cache *c); /* NULL is a no-op */

struct autotune_stats {
    int ops;      /* auto ops resolved */
    int searches; /* distinct searches run */
    int runs;     /* child runs (engine runs of candidate sets) */
    int feasible; /* feasible candidates of the searches, in all */
    int bounds;   /* of which had their lower bound computed (often a dry run) */
    double wall_s;
};
void autotune_stats(const struct autotune_cache *c, struct autotune_stats *st);

/* Gives every auto op of 'sc' its blocks and fills sc->plan.tuned (NULL when no op
 * is auto). Returns 0; 2 with "file:line:col: path: kind: block: auto: no
 * feasible blocks ..." in 'd' when an op has none; 1 when a child run failed;
 * 130 when it was interrupted. 'o' may be NULL. Must run before SimGrid
 * starts in this process (the children fork from it). */
int autotune_resolve(struct cfg_scenario *sc, struct autotune_cache *c,
                     const struct autotune_opts *o, struct diag *d);

/* A line per auto op of 'sc', as the run's table ends (summary_print_auto). */
void autotune_print(const struct cfg_scenario *sc, FILE *out);

#endif
