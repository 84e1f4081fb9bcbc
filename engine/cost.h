/* engine/cost.h -- what a run costs, the energy it takes and, for a model
 * step with a train: section, the time, dollars and energy to train
 * (docs/reference.md, "Cost, energy and time to train"):
 *   $/step   = chips x price per chip-hour x step time / 3600
 *   $/Mtok   = $/step / (the step's tokens / 1e6)
 *   P_chip   = P_idle + (P_tdp - P_idle) x u, u = the busy time of chip 0's
 *              TensorCores over theirs and the step's (SPMD: every chip alike)
 *   E_step   = chips x P_chip x step time
 *   T_train  = compile + steps x step + evals x eval_steps x eval_step
 *              + checkpoints x bytes_per_chip / write_bandwidth
 * Uses the scenario (config/cfg.h) and the summary (outputs/summary.h). */
#ifndef TPUSIM_ENGINE_COST_H
#define TPUSIM_ENGINE_COST_H

#include "config/cfg.h"
#include "outputs/summary.h"

/* Fills s->cost, s->energy and s->train from 'sc' and the run's figures in
 * 's' (its time, model block and TensorCores), those the scenario has data for. */
void cost_summary(const struct cfg_scenario *sc, struct summary *s);

#endif
