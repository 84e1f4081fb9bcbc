/* study/train_eval.h -- the evaluation step of a training run (train:): the
 * scenario's model in forward-only (prefill) mode, same batch and sequence
 * length, its `block: auto` ops searched, run in a forked child (SimGrid runs
 * once per process). Its time goes to sc->plan.eval_step_s, which the run's
 * train block prices (engine/cost.h). */
#ifndef TPUSIM_STUDY_TRAIN_EVAL_H
#define TPUSIM_STUDY_TRAIN_EVAL_H

#include "base/diag.h"
#include "config/cfg.h"
#include "engine/sim_opts.h"

/* Times the evaluation step of 'sc' when its train: section evaluates (else
 * does nothing), with the SimGrid flags and limits of 'o' (no outputs).
 * Returns 0, or the run's exit code (1, 2 or 130) with messages in 'd'. */
int train_eval_step(struct cfg_scenario *sc, const struct sim_opts *o, struct diag *d);

#endif
