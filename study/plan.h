/* study/plan.h -- `tpusim plan`: which slice, mesh, remat policy and batch
 * for a model step. A plan spec (YAML) names a model scenario and what to
 * search:
 *   name: NAME                        # optional; default: the spec's file name
 *   base: FILE.yaml                   # a model scenario (its topology and mesh are not used)
 *   plan:
 *     chips: 512                      # the chips of all slices; or
 *     budget_usd_per_hour: 2200       # every legal slice whose chips cost at most this
 *     slices: [1, 2]                  # multislice splits over the DCN (default [1])
 *     axes: [fsdp, tensor]            # mesh axes to split the chips over (default)
 *     remat: [full, save_qkv_proj]    # remat policies (default: the base's)
 *     batch_per_chip: [1, 2]          # sequences per chip (default: the base's global batch)
 *     rank_by: step_time              # | mfu | usd_per_million_tokens | time_to_train
 *     max_points: 10000               # refuse a larger search space (at most 1000000)
 * Every candidate (slice shape x slices x mesh x remat x batch) is checked
 * without simulating: an illegal layout or sharding (heads not divisible by
 * tensor, ...) is left out, one that does not fit in HBM (workload/model.h
 * model_memory) is pruned; the rest run as the points of a generated sweep
 * (study/sweep.h: -j, --resume, --shard) and are ranked. Outputs:
 * DIR/plan.csv, plan.json, report.html (the time/cost Pareto front and why
 * the winner wins), plan-sweep.yaml and DIR/sweep/ (the sweep's own). */
#ifndef TPUSIM_STUDY_PLAN_H
#define TPUSIM_STUDY_PLAN_H

#include <stdbool.h>

#define PLAN_DEFAULT_MAX_POINTS 10000
#define PLAN_MAX_POINTS 1000000

struct plan_opts {
    const char *out_dir;    /* NULL: out/plan-<name> */
    int jobs;
    bool resume, force, dry_run;
    int shard, nshards;
    long chips;             /* --chips (0: the spec's) */
    double budget;          /* --budget-usd-per-hour (0: the spec's) */
    const char *generation; /* --generation (NULL: the base's chip) */
    const char *rank_by;    /* --rank-by (NULL: the spec's) */
};

/* Runs the plan spec 'spec'. Returns the exit status (0, 1 runtime failure,
 * 2 bad input, 130 interrupted). */
int plan_run(const char *spec, const struct plan_opts *o);

#endif
