/* engine/fault_report.h -- what a scenario's faults cost: the same run
 * without them (a forked engine run, engine/sim_child.h) as the reference,
 * the ops whose time moved, and the goodput of goodput: on top of the step
 * time (docs/reference.md, "Faults"). No SimGrid here; sim.c runs the reference. */
#ifndef TPUSIM_ENGINE_FAULT_REPORT_H
#define TPUSIM_ENGINE_FAULT_REPORT_H

#include "config/cfg.h"
#include "engine/sim_opts.h"
#include "outputs/summary.h"

struct fault_ref {
    bool present;
    double total_s;
    int nops;
    double *op_s;     /* owned, per op */
    char err[256];
};

/* engine/sim.c fills it: the scenario without its faults, run in a child
 * (every chip simulated and no kernel memos, as the faulted run). */
void fault_ref_fini(struct fault_ref *ref);

/* Fills s->faults_json and s->faults_text: the faults, what moved against
 * 'ref' (if present) and the goodput (if sc has goodput:). */
void fault_report(const struct cfg_scenario *sc, const struct fault_ref *ref, struct summary *s);

/* The goodput of goodput: 'g' for 'chips' chips at 'step_s' per step (docs/reference.md). */
struct fault_goodput {
    double failures_per_s, interval_s, write_s, lost_per_failure_s, goodput, young_interval_s;
};
void fault_goodput(const struct cfg_goodput *g, int chips, double step_s, struct fault_goodput *o);

#endif
