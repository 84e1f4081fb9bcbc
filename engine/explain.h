/* engine/explain.h -- what summary.json and the console say about why an op
 * took its time: per TensorCore of chip 0 (busy time per unit, idle time:
 * megacore imbalance), per sub-kernel (the pallas_calls of an op: fwd, di,
 * dkv, dq), the bounding unit and the runner-up, and a collective's
 * bandwidths as nccl-tests define them. Works on what the engine counted
 * (engine/engine.h) after the run; no SimGrid. */
#ifndef TPUSIM_ENGINE_EXPLAIN_H
#define TPUSIM_ENGINE_EXPLAIN_H

#include "kernels/kernel.h"
#include "config/cfg.h"
#include "outputs/summary.h"

/* Fills o->ncore, o->core (from 'core_op': chip 0's cores of op 'opi'),
 * o->sub (from 'core_sub', when 'k' has several pallas_calls; k may be NULL),
 * o->runner_up and the fractions (o->bound already set) and o->coll. */
void explain_op(const struct cfg_scenario *sc, const struct kern *k, int opi,
                const struct summary_core_work *core_op, const struct summary_core_work *core_sub,
                struct summary_op *o);
/* Fills s->ntc and s->tc from the ops' per-core rows of the compute ops
 * (async ops run beside them: their busy time counts, not their span). */
void explain_run(const struct cfg_scenario *sc, struct summary *s);
/* "fwd", "di", "dkv", "dq", "bwd" found in a pallas_call's name, or "". Static. */
const char *explain_phase(const char *call_name);

#endif
