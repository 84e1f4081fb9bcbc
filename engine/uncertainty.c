/* engine/uncertainty.c -- the error bar of a run's time (see engine/uncertainty.h). */
#include "engine/uncertainty.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/xalloc.h"
#include "config/op_table.h"

/* The bands: the 68th percentile (linear interpolation, as numpy's default)
 * of |predicted - measured| / measured over each family's rows of `make
 * fidelity` (tools/fidelity_bands.py computes them from its output; the
 * residuals are those of docs/reference.md, "Accuracy"):
 *  - pallas_kernel: points.json M01 -3.1, M03 +3.3, M04 -4.1, M06 +4.9 %
 *    (Pallas matmuls, v5e), A01 +7.4, A03 +2.6 % (flash attention, v5e);
 *  - collective: C03 -8.4, C05 +2.3, C08 +0.4 % (all-gathers, v5e), C16
 *    -0.1, C18 -0.1 % (ppermutes, v5p, v6e), C34 -5.9 % (all-reduce, v5e),
 *    C41-C45 -30.4, -11.6, -0.8, +4.0, +5.6 % and C51-C55 -32.5, -12.8,
 *    -0.7, +3.9, +5.5 % (all-gathers, v7 2x2x1 and 2x2x2);
 *  - xla_op: xla_matmul.csv's 12 gated rows (X7A1-X7A8 -4.1, -7.5, +0.3,
 *    +9.1, +9.4, +4.0, -8.7, -9.9 %; X6Y1 +0.7; X5P1-3 +0.8, +6.0, +0.8 %)
 *    and points.json H03 +2.5, H07 +1.3 % (v7 HBM copies);
 *  - model_step: model-steps.csv's 17 rows (1 -12.2, 7 -9.4, 8 -10.6,
 *    13 -1.6, 19 -6.7, 31 -7.9, 33 -8.7, 35 -9.7, 41 +5.1, 47 +8.0,
 *    52 +7.8, 53 -0.1, 59 -13.7, 70 +10.2, 85 +8.8, 96 -5.1, 97 -1.9 %).
 * Most kernel, collective and XLA points also calibrated a fixed cost (the
 * grid-step overhead, the ICI efficiency, v7's kernel launch): their
 * residuals understate a held-out error, which the model-step floor covers. */
static const struct unc_band bands[UNC_COUNT] = {
    [UNC_PALLAS] = {"pallas_kernel", 0.0442, 0.037, 6, "tests/fidelity/points.json M01-M06, A01, A03"},
    [UNC_COLLECTIVE] = {"collective", 0.0640, 0.0475, 16,
                        "tests/fidelity/points.json C03, C05, C08, C16, C18, C34, C41-C45, C51-C55"},
    [UNC_XLA] = {"xla_op", 0.0726, 0.0405, 14,
                 "tests/fidelity/xla_matmul.csv gated rows, points.json H03, H07"},
    [UNC_MODEL_STEP] = {"model_step", 0.0933, 0.080, 17, "tests/fidelity/model-steps.csv"},
};

const struct unc_band *unc_band(enum unc_family f)
{
    return &bands[(unsigned)f < UNC_COUNT ? f : UNC_XLA];
}

enum unc_family unc_family_of(const struct op *op)
{
    const char *cat = op_row(op->kind)->category;
    if (!strcmp(cat, "collective"))
        return UNC_COLLECTIVE;
    if (!strcmp(cat, "attention") || !strcmp(cat, "pallas"))
        return UNC_PALLAS;
    if (!strcmp(cat, "matmul"))
        return op->autotune ? UNC_XLA : UNC_PALLAS;
    return UNC_XLA;
}

void unc_propagate(const struct unc_term *t, int n, double total_s, bool model,
                   struct summary_unc *u)
{
    memset(u, 0, sizeof *u);
    u->present = true;
    for (int i = 0; i < n; i++)
        u->family_s[t[i].family] += unc_band(t[i].family)->relative * t[i].time_s;
    double sq = 0;
    for (int f = 0; f < UNC_COUNT; f++)
        sq += u->family_s[f] * u->family_s[f];
    u->ops_sigma_s = sqrt(sq);
    u->sigma_s = u->ops_sigma_s;
    if (model) {
        u->floor_s = unc_band(UNC_MODEL_STEP)->relative * total_s;
        if (u->floor_s > u->sigma_s)
            u->sigma_s = u->floor_s, u->floored = true;
    }
    u->relative = total_s > 0 ? u->sigma_s / total_s : 0;
    u->low_s = total_s - u->sigma_s;
    u->high_s = total_s + u->sigma_s;
}

void unc_summary(const struct cfg_scenario *sc, struct summary *s)
{
    for (int i = 0; i < s->nops && i < sc->nops; i++) {
        const struct unc_band *b = unc_band(unc_family_of(&sc->ops[i]));
        s->ops[i].unc_family = b->name;
        s->ops[i].unc_relative = b->relative;
    }
    int n = s->npath ? s->npath : s->nops;
    struct unc_term *t = xcalloc((size_t)n + 1, sizeof *t);
    for (int i = 0; i < n; i++) {
        int op = s->npath ? s->path[i].op : i;
        t[i].family = unc_family_of(&sc->ops[op]);
        t[i].time_s = s->npath ? s->path[i].time_s : s->ops[i].time_s;
    }
    unc_propagate(t, n, s->total_time_s, sc->model != NULL, &s->unc);
    free(t);
}
