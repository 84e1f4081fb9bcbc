/* engine/uncertainty.h -- the error bar of a run's time (docs/reference.md,
 * "Error bars"). Each op belongs to a family (a Pallas kernel, a collective,
 * an XLA-level op; a model step as a whole is a fourth) whose relative band r
 * is the 68th percentile of |predicted - measured| / measured over the
 * family's rows in tests/fidelity/ (make fidelity | tools/fidelity_bands.py).
 * The step's band, over the ops on the critical path (their instances there,
 * their time there t):
 *   sigma_f    = r_f x sum of t over the family's path ops   (fully correlated
 *                within a family: one cause, repeated instances add linearly)
 *   sigma_ops  = sqrt(sum over families of sigma_f^2)        (families independent)
 *   sigma_step = max(sigma_ops, r_model x T) for a model step (its own rows'
 *                residual as a floor), sigma_ops otherwise
 * and the band is [T - sigma, T + sigma].
 * Uses the scenario (config/cfg.h) and the summary (outputs/summary.h). */
#ifndef TPUSIM_ENGINE_UNCERTAINTY_H
#define TPUSIM_ENGINE_UNCERTAINTY_H

#include <stdbool.h>

#include "config/cfg.h"
#include "outputs/summary.h"

enum unc_family { UNC_PALLAS, UNC_COLLECTIVE, UNC_XLA, UNC_MODEL_STEP, UNC_COUNT };

/* One family's band and the rows it comes from. */
struct unc_band {
    const char *name;   /* "pallas_kernel", "collective", "xla_op", "model_step" */
    double relative;    /* r: the 68th percentile of |residual| */
    double median;      /* the median |residual|, for reference */
    int rows;           /* fidelity rows behind it */
    const char *source; /* the rows */
};

/* The table (static). */
const struct unc_band *unc_band(enum unc_family f);
/* The family of op 'op': collectives (and ppermute, remote copies) are
 * UNC_COLLECTIVE; attention kernels, pallas_calls and matmuls with given
 * blocks UNC_PALLAS; matmuls with `block: auto` (XLA's dots), fusions,
 * copies and the rest UNC_XLA. */
enum unc_family unc_family_of(const struct op *op);

/* One term of the propagation: an op's time on the critical path and its family. */
struct unc_term {
    enum unc_family family;
    double time_s;
};

/* The rule above over 'n' terms, for a run of 'total_s' ('model': a model
 * step, floored). Fills 'u' (present). */
void unc_propagate(const struct unc_term *t, int n, double total_s, bool model,
                   struct summary_unc *u);

/* Sets each op's family and band and s->unc from the critical path (the
 * ops themselves when the run has no timeline). */
void unc_summary(const struct cfg_scenario *sc, struct summary *s);

#endif
